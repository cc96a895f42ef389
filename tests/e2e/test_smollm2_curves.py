"""The SmolLM2 curves' data and wiring, on a tiny random Llama: windows half from the target's
own continuations and half from real text, the embedding-factored DSpark beside DFlash and
EAGLE-3, and a run split over two invocations equal to one run, bit for bit (the
half-and-half sampler's three generators are saved in the checkpoints)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from e2e.tiny_llama import FEATURES, VOCAB, write_tiny_llama

import specproof.runners.e2e.experiments.learning_curves as curves
from specproof.e2e.data.chat_prompts import Prompt
from specproof.e2e.data.corpora import Corpus, Document, WindowSampler
from specproof.e2e.data.smollm2_windows import (
    SLICE_BYTES,
    HalfAndHalf,
    real_text_stream,
    smollm2_windows,
)
from specproof.e2e.models.llama_target import LlamaTarget, load_llama_target
from specproof.e2e.plans import SMOLLM2_SMOKE
from specproof.e2e.training.self_distillation import MANIFEST, distilled_streams, save_shard

DOMAINS = ("code", "math", "prose")
_DSPARK = replace(SMOLLM2_SMOKE.dspark, gamma=3, n_heads=4, d_ff=32, rank=8, mask_token=5)
PLAN = replace(
    SMOLLM2_SMOKE,
    dspark=_DSPARK,
    dflash=replace(_DSPARK, head="none"),
    eagle=replace(SMOLLM2_SMOKE.eagle, gamma=3, n_heads=4, d_ff=32),
    window=16,
    new_tokens=4,
    temperatures=(1.0,),
)


def write_shards(folder: Path) -> dict[str, list[list[int]]]:
    """Two shards of sequences in the self-distillation format; the sequences by domain."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    by_domain: dict[str, list[list[int]]] = {d: [] for d in DOMAINS}
    shards = []
    for index in range(2):
        prompts, continuations = [], []
        for k, domain in enumerate(("code", "math", "code", "prose")):
            prompt = [int(t) for t in rng.integers(6, VOCAB, 5 + k)]
            continuation = [int(t) for t in rng.integers(6, VOCAB, 30 + k)]
            prompts.append(Prompt(domain, 10 * index + k, tuple(prompt), domain == "math"))
            continuations.append(continuation)
            by_domain[domain].append(prompt + continuation)
        name = f"shard_{index:05d}.npz"
        save_shard(folder / name, prompts, continuations, DOMAINS)
        shards.append({"file": name})
    manifest = {"format": 1, "settings": {"domains": list(DOMAINS)}, "shards": shards}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return by_domain


def test_the_continuations_are_joined_per_domain(tmp_path: Path) -> None:
    sequences = write_shards(tmp_path)
    streams = distilled_streams(tmp_path)
    for domain in DOMAINS:
        expected = [t for s in sequences[domain] for t in s]
        assert streams[domain].tolist() == expected


def test_a_folder_without_sequences_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps({"settings": {"domains": ["code"]}, "shards": []}))
    with pytest.raises(ValueError, match="lists no sequences"):
        distilled_streams(tmp_path)


def test_real_text_is_cut_at_lines_tokenised_and_seeded() -> None:
    long = b"".join(b"line %d of the document\n" % i for i in range(3000))
    short = (b"a short document\n", b"another one\n")
    corpus = Corpus("code", (Document("a", long), *(Document(t.decode(), t) for t in short)), ())
    texts: list[str] = []

    def encode(text: str) -> list[int]:
        texts.append(text)
        return [ord(c) % 90 + 6 for c in text]

    first = real_text_stream(corpus, encode, 20000, seed=1)
    assert first.shape == (20000,)
    assert np.array_equal(first, real_text_stream(corpus, encode, 20000, seed=1))
    assert not np.array_equal(first, real_text_stream(corpus, encode, 20000, seed=2))
    assert set(short) <= {t.encode() for t in texts}  # short documents whole
    slices = [t for t in texts if t.encode() not in short]
    assert len({t[:12] for t in slices}) > 1  # the long one cut at different places
    assert all(t.startswith("line ") and len(t) == SLICE_BYTES for t in slices)


def test_half_the_windows_come_from_each_source() -> None:
    """Deterministic (seeded); as a statistical statement, 2,000 fair coins fall within 0.5 +-
    0.056 (5 sd) with false-fail probability 6e-7, and that bound rejects a share of 0.44 or
    0.56 or beyond, the error of a sampler that drew one source 12 % more often."""
    low = {"code": np.arange(6, 40)}
    high = {"code": np.arange(50, 90)}
    sampler = HalfAndHalf(
        WindowSampler(low, {"code": 1.0}, 0), WindowSampler(high, {"code": 1.0}, 1), 2
    )
    windows = sampler.batch(2000, 4)
    share = float((windows[:, 0] < 45).float().mean())
    assert abs(share - 0.5) < 0.056
    assert bool(((windows < 45).all(1) | (windows >= 45).all(1)).all())  # never mixed


@pytest.fixture(scope="module")
def tiny_target(tmp_path_factory: pytest.TempPathFactory) -> LlamaTarget:
    folder = write_tiny_llama(tmp_path_factory.mktemp("tiny"))
    return load_llama_target(folder, feature_layers=FEATURES, max_len=128)


def curve_data(tmp_path: Path) -> curves.CurveData:
    distilled = distilled_streams(tmp_path / "shards") if (tmp_path / "shards").exists() else None
    if distilled is None:
        write_shards(tmp_path / "shards")
        distilled = distilled_streams(tmp_path / "shards")
    rng = np.random.default_rng(1)
    text = {d: rng.integers(6, VOCAB, 300) for d in DOMAINS}
    prompts = {d: [[int(t) for t in rng.integers(6, VOCAB, 6)] for _ in range(4)] for d in DOMAINS}
    return curves.CurveData(text, prompts, smollm2_windows(distilled, text))


def run(target: LlamaTarget, data: curves.CurveData, out: Path, steps: tuple[int, ...]) -> Any:
    torch.set_num_threads(1)
    return curves.run_curves(
        target, data, PLAN, curves.DRAFTERS, (0,), steps, out, log=lambda _: None
    )


class Interrupt(Exception):
    pass


def test_a_run_in_two_invocations_equals_one(
    tiny_target: LlamaTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted while DSpark trains from step 2 to 4, then rerun: it resumes from the
    step-2 checkpoint (weights, AdamW and the sampler's generators) to the same result."""
    data = curve_data(tmp_path)
    whole = run(tiny_target, data, tmp_path / "whole", (2, 4))
    original = curves.train_steps
    calls = {"n": 0}

    def train_steps(*args: Any, **kwargs: Any) -> dict[str, float]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise Interrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(curves, "train_steps", train_steps)
    with pytest.raises(Interrupt):
        run(tiny_target, data, tmp_path / "split", (2, 4))
    monkeypatch.setattr(curves, "train_steps", original)
    split = run(tiny_target, data, tmp_path / "split", (2, 4))
    for key, record in whole["runs"].items():
        for step, point in record["checkpoints"].items():
            assert split["runs"][key]["checkpoints"][step]["tau"] == point["tau"], (key, step)
    for name in ("dspark", "dflash", "eagle3"):
        ours, theirs = (
            torch.load(tmp_path / run_ / "checkpoints" / f"{name}-seed0.pt", weights_only=True)
            for run_ in ("split", "whole")
        )
        assert ours["step"] == theirs["step"] == 4
        for key, weight in theirs["module"].items():
            assert torch.equal(ours["module"][key], weight), (name, key)
    assert set(ours["generators"]) == {"coin", "distilled", "text", "anchors"}
    assert whole["settings"]["training"]["dspark"]["markov_factors"] == "embedding"
    taus = {c["tau"] for r in whole["runs"].values() for p in r["checkpoints"].values()
            for c in p["tau"].values()}  # fmt: skip
    assert len(taus) > 1  # the drafters and steps differ


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--seeds", "1", "1"], "--seeds: each seed may be given once"),
        (["--prompts", "2"], "--prompts: at least 4"),
        (["--data", "no-such-folder"], "--data: no-such-folder has no manifest.json"),
    ],
)
def test_bad_arguments_end_the_command_before_any_work(
    arguments: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specproof.runners.e2e.experiments import smollm2_curves

    with pytest.raises(SystemExit) as stopped:
        smollm2_curves.main(["--out", str(tmp_path / "out"), *arguments])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
