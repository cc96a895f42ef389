"""The target's own continuations (specproof.e2e.training.self_distillation) and the prompts they
continue (specproof.e2e.data.chat_prompts): batched cached generation draws what one-at-a-time
decoding draws, stops at a stop token, and an interrupted run resumes into the same shards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from e2e.tiny_llama import FEATURES, VOCAB, write_tiny_llama

from specproof.e2e.data.chat_prompts import Prompt, domain_prompts, math_question
from specproof.e2e.data.corpora import Corpus, Document, split_documents
from specproof.e2e.decoding.rounds import autoregressive_generate
from specproof.e2e.models.llama_target import LlamaTarget, load_llama_target
from specproof.e2e.training.self_distillation import (
    DistillSettings,
    continue_batch,
    generate_shards,
    load_shard,
)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> LlamaTarget:
    folder = write_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
    return load_llama_target(folder, feature_layers=FEATURES, max_len=128)


PROMPTS = [[5, 6, 7, 8, 9], [1, 2, 3], [40, 41, 42, 43, 44, 45, 46]]


def test_greedy_batched_continuations_equal_one_request_decoding(target: LlamaTarget) -> None:
    made = continue_batch(target, PROMPTS, 12, 0.0, (), torch.Generator())
    for prompt, row in zip(PROMPTS, made.tokens, strict=True):
        alone = autoregressive_generate(target, [prompt], 12, temperature=0.0)
        assert row == alone.tokens[0]


def test_a_request_stops_after_its_stop_token_and_the_others_go_on(target: LlamaTarget) -> None:
    free = continue_batch(target, PROMPTS, 12, 0.0, (), torch.Generator())
    stop = free.tokens[1][3]  # request 1's fourth greedy token
    made = continue_batch(target, PROMPTS, 12, 0.0, (stop,), torch.Generator())
    for row, free_row in zip(made.tokens, free.tokens, strict=True):
        cut = free_row.index(stop) + 1 if stop in free_row else len(free_row)
        assert row == free_row[:cut]
    assert len(made.tokens[1]) <= 4


def test_sampled_continuations_follow_the_seed(target: LlamaTarget) -> None:
    def run(seed: int) -> list[list[int]]:
        return continue_batch(
            target, PROMPTS, 10, 1.0, (), torch.Generator().manual_seed(seed)
        ).tokens

    assert run(3) == run(3)
    assert run(3) != run(4)


def settings(**changes: object) -> DistillSettings:
    base = {
        "seed": 0, "sequences_per_shard": 3, "new_tokens": 6, "temperature": 1.0,
        "dtype": "float32", "stop_tokens": (0,), "domains": ("code", "math"),
        "weights": (0.5, 0.5),
    }  # fmt: skip
    return DistillSettings(**{**base, **changes})  # type: ignore[arg-type]


def prompts_of_shard(index: int) -> list[Prompt]:
    rng = np.random.default_rng(index)
    return [
        Prompt("code" if i % 2 else "math", index * 10 + i,
               tuple(int(t) for t in rng.integers(1, VOCAB, 4 + i)), False)
        for i in range(3)
    ]  # fmt: skip


def test_an_interrupted_run_resumes_into_the_same_shards(
    target: LlamaTarget, tmp_path: Path
) -> None:
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    quiet = lambda text: None  # noqa: E731
    generate_shards(whole, target, prompts_of_shard, settings(), 3, log=quiet)
    generate_shards(resumed, target, prompts_of_shard, settings(), 1, log=quiet)
    (resumed / "shard_00001.npz").write_bytes(b"half-written, not in the manifest")
    manifest = generate_shards(resumed, target, prompts_of_shard, settings(), 3, log=quiet)
    assert manifest["totals"]["shards"] == 3
    for index in range(3):
        name = f"shard_{index:05d}.npz"
        assert load_shard(whole / name) == load_shard(resumed / name)
    written = json.loads((resumed / "manifest.json").read_text())
    assert [s["sha256"] for s in written["shards"]] == [
        s["sha256"] for s in json.loads((whole / "manifest.json").read_text())["shards"]
    ]
    sequences = load_shard(whole / "shard_00002.npz")
    assert [prompt for _, _, prompt in sequences] == [4, 5, 6]
    assert [ids[:p] for _, ids, p in sequences] == [list(p.tokens) for p in prompts_of_shard(2)]


def test_a_folder_written_with_other_settings_is_refused(
    target: LlamaTarget, tmp_path: Path
) -> None:
    generate_shards(tmp_path, target, prompts_of_shard, settings(), 1, log=lambda text: None)
    with pytest.raises(ValueError, match="other settings"):
        generate_shards(tmp_path, target, prompts_of_shard, settings(temperature=0.7), 2)


def test_math_prompts_are_chat_turns_and_code_prompts_are_plain_windows() -> None:
    text = "Problem 1. Compute 2 + 3.\n2 + 3 = 5\nAnswer: 5\n\nProblem 2. Solve 2x = 4.\nx = 2"
    assert math_question(text, 1) == "Solve 2x = 4."
    math = Corpus("math", (Document("m", text.encode()),), ())
    asked: list[str] = []

    def chat(question: str) -> list[int]:
        asked.append(question)
        return [1, 2, 3]

    prompts = domain_prompts(math, 4, 0, lambda text: [9], chat)
    assert all(p.chat and p.tokens == (1, 2, 3) for p in prompts)
    assert set(asked) <= {"Compute 2 + 3.", "Solve 2x = 4."}
    lines = "".join(f"line {i} of some code\n" for i in range(200)).encode()
    code = split_documents("code", [Document("a.py", lines)])
    seen: list[str] = []
    plain = domain_prompts(code, 2, 0, lambda text: seen.append(text) or [7], chat)
    assert all(not p.chat and p.tokens == (7,) for p in plain)
    assert all(text.startswith("line ") and len(text) == 256 for text in seen)
