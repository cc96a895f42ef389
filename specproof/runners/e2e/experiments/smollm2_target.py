"""Measure SmolLM2-135M-Instruct as the end-to-end target: its gap to transformers, bfloat16
against float32 (law and speed), what caching its hidden states would save, and the sizes and
step times of drafters on it. Each part updates its key of the JSON file.

    python -m specproof.runners.e2e.experiments.smollm2_target PART [PART ...]
        [--json benchmarks/e2e_smollm2_target.json] [--threads 2] [--repeats 3]

Parts: ``gap`` (logits against LlamaForCausalLM), ``law`` (per-position TV of bf16 against
float32 on real text and on the target's continuations), ``speed`` (forward with hidden states,
B = 8, L = 256, ours and transformers' in both dtypes, interleaved), ``features`` (recomputing
the fused hidden states against reading them from a local cache), ``sizing`` (DSpark and EAGLE-3
drafters on the target: parameters, a training step, a drafting step against a verification
step at batch 1), ``plan`` (the same for ``plans.SMOLLM2``'s drafters, the Markov head
through the embedding, and one measured chunk of the curves per drafter and temperature: 2
held-out prompts, the plan's new tokens, gamma fixed). Timings record the thread count and the
load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least
from specproof.e2e.data.chat_prompts import chat_encoder, domain_prompts
from specproof.e2e.data.corpora import load_corpora
from specproof.e2e.evaluation.precision import law_gap
from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.eagle import EagleConfig, EagleDrafter
from specproof.e2e.models.llama_target import LlamaTarget, smollm2_target
from specproof.e2e.models.target import parameter_count
from specproof.e2e.training.loops import TrainSettings, dspark_step, eagle_step
from specproof.e2e.training.resumable import make_optimizer
from specproof.e2e.training.self_distillation import continue_batch
from specproof.models.smollm2 import QUESTION, chat_prompt, float_folder

PROG = "python -m specproof.runners.e2e.experiments.smollm2_target"
PARTS = ("gap", "law", "speed", "features", "sizing", "plan")
DEFAULT_JSON = Path("benchmarks/e2e_smollm2_target.json")
MASK_TOKEN = 16
"""``<empty_output>``, a special token none of the prompts holds: DSpark's mask slot input."""
GAMMA = 7


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def hf(dtype: torch.dtype) -> Any:
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(float_folder(), dtype=dtype).eval()


def tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(float_folder())


@torch.no_grad()
def part_gap() -> dict[str, Any]:
    """Max |logit| gap to LlamaForCausalLM on the audited chat prompt and its answer."""
    folder = float_folder()
    answer = tokenizer()("The capital of France is Paris.")["input_ids"]
    tokens = torch.tensor([[*chat_prompt(folder, QUESTION), *answer]])
    out: dict[str, Any] = {"tokens": tokens.shape[1]}
    for name in ("float32", "bfloat16"):
        dtype = getattr(torch, name)
        ours = smollm2_target(dtype)(tokens).logits
        theirs = hf(dtype)(tokens).logits.float()
        out[name] = {
            "max_abs_gap": float((ours - theirs).abs().max()),
            "max_abs_logit": float(theirs.abs().max()),
        }
    return out


def real_text(count_per_domain: int, tokens: int, seed: int) -> dict[str, list[list[int]]]:
    """Per domain, ``count_per_domain`` held-out token windows of ``tokens`` (code and prose
    cut from the evaluation split as plain text; math problems with their worked answers)."""
    encode, _ = chat_encoder(tokenizer())
    corpora = load_corpora()
    out: dict[str, list[list[int]]] = {}
    for domain, corpus in sorted(corpora.items()):
        stream = corpus.stream("evaluation")
        rng = np.random.default_rng(seed)
        windows: list[list[int]] = []
        while len(windows) < count_per_domain:
            start = int(rng.integers(len(stream) - 8 * tokens))
            text = bytes(stream[start : start + 8 * tokens]).decode("utf-8", "ignore")
            ids = encode(text.replace("\x00", "\n"))
            if len(ids) >= tokens + 1:
                windows.append(ids[1 : tokens + 1])  # drop a token cut mid-way
        out[domain] = windows
    return out


@torch.no_grad()
def part_law(new_tokens: int = 96, text_tokens: int = 128) -> dict[str, Any]:
    """TV per position between softmax(float32 logits) and softmax(bfloat16 logits)."""
    reference = smollm2_target(torch.float32)
    lower = smollm2_target(torch.bfloat16)
    out: dict[str, Any] = {"text_tokens_per_window": text_tokens, "new_tokens": new_tokens}
    texts = real_text(1, text_tokens, seed=0)
    for domain, windows in texts.items():
        out[f"text/{domain}"] = law_gap(reference, lower, windows, [1] * len(windows)).summary()
    encode, encode_chat = chat_encoder(tokenizer())
    corpora = load_corpora()
    generator = torch.Generator().manual_seed(0)
    for domain in sorted(corpora):
        (prompt,) = domain_prompts(corpora[domain], 1, 1, encode, encode_chat)
        made = continue_batch(reference, [prompt.tokens], new_tokens, 1.0, (), generator)
        sequence = [*prompt.tokens, *made.tokens[0]]
        gap = law_gap(reference, lower, [sequence], [len(prompt.tokens)])
        out[f"continuation/{domain}"] = gap.summary()
    all_tv = [v for k, v in out.items() if isinstance(v, dict)]
    out["positions"] = sum(v["positions"] for v in all_tv)
    return out


@torch.no_grad()
def part_speed(repeats: int, batch: int = 8, length: int = 256) -> dict[str, Any]:
    """Seconds of one forward with hidden states over [batch, length], interleaved repeats."""
    tokens = torch.randint(0, 49_152, (batch, length), generator=torch.Generator().manual_seed(0))
    models: dict[str, partial[Any]] = {}
    for name in ("float32", "bfloat16"):
        dtype = getattr(torch, name)
        ours = smollm2_target(dtype)
        theirs = hf(dtype)
        models[f"ours/{name}"] = partial(ours, tokens)
        models[f"transformers/{name}"] = partial(theirs, tokens, output_hidden_states=True)
    for name in list(models):
        models[name].func(tokens[:, :16])  # warm-up on a short window
    seconds: dict[str, list[float]] = {name: [] for name in models}
    before = load()
    for _ in range(repeats):
        for name, run in models.items():
            seconds[name].append(timed(run))
    out: dict[str, Any] = {"batch": batch, "length": length, "load_before": before}
    for name, values in seconds.items():
        median = statistics.median(values)
        out[name] = {
            "seconds": [round(v, 3) for v in values],
            "median_seconds": round(median, 3),
            "tokens_per_second": round(batch * length / median, 1),
        }
    out["load_after"] = load()
    return out


@torch.no_grad()
def part_features(repeats: int, batch: int = 8, length: int = 256) -> dict[str, Any]:
    """Per token: recomputing the fused layers' outputs and the final hidden state (a bf16
    forward) against reading them, bf16, from a cache file on the local disk; and the final
    norm and head alone (what the laws the losses need still cost with such a cache)."""
    target = smollm2_target(torch.bfloat16)
    tokens = torch.randint(0, 49_152, (batch, length), generator=torch.Generator().manual_seed(1))
    target(tokens[:, :16])
    compute = [timed(lambda: target(tokens)) for _ in range(repeats)]
    hidden = torch.randn(batch, length, target.config.d_model)
    head = [timed(lambda: target.logits_of(hidden)) for _ in range(repeats)]
    width = (len(target.config.feature_layers) + 1) * target.config.d_model
    stored = torch.randn(batch * length, width).to(torch.bfloat16).view(torch.int16).numpy()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "features.npy"
        np.save(path, stored)

        def read() -> torch.Tensor:
            array = np.load(path, mmap_mode="r")
            return torch.from_numpy(np.array(array)).view(torch.bfloat16).float()

        reading = [timed(read) for _ in range(repeats)]
        size = path.stat().st_size
    n = batch * length
    return {
        "tokens": n,
        "values_per_token": width,
        "bytes_per_token": size / n,
        "gigabytes_per_million_tokens": round(size / n * 1e6 / 1e9, 2),
        "compute_seconds_per_token": statistics.median(compute) / n,
        "read_seconds_per_token": statistics.median(reading) / n,
        "head_seconds_per_token": statistics.median(head) / n,
        "note": "reading is from the page cache after the write: a lower bound on a cold read",
    }


class FixedWindows:
    """Random token windows from given sequences (the batch source of a timing step)."""

    def __init__(self, sequences: Sequence[Sequence[int]], seed: int) -> None:
        self.sequences = [list(s) for s in sequences]
        self.generator = torch.Generator().manual_seed(seed)

    def batch(self, batch_size: int, length: int) -> torch.Tensor:
        rows = []
        for _ in range(batch_size):
            pick = int(torch.randint(len(self.sequences), (1,), generator=self.generator))
            row = self.sequences[pick]
            start = int(torch.randint(len(row) - length + 1, (1,), generator=self.generator))
            rows.append(row[start : start + length])
        return torch.tensor(rows)


def drafter_configs() -> tuple[DSparkConfig, DSparkConfig, EagleConfig]:
    """DSpark and DFlash: one layer of the target's width (9 heads of 64, the target's SwiGLU
    width 1536 as the feed-forward width), the release's block of 7 with the mask token, rank
    256; EAGLE-3: its one layer of the same sizes."""
    dspark = DSparkConfig(
        gamma=GAMMA, n_layers=1, n_heads=9, d_ff=1536, rank=256,
        block_input="mask_token", mask_token=MASK_TOKEN,
    )  # fmt: skip
    dflash = DSparkConfig(
        gamma=GAMMA, n_layers=1, n_heads=9, d_ff=1536, rank=256, head="none",
        block_input="mask_token", mask_token=MASK_TOKEN,
    )  # fmt: skip
    return dspark, dflash, EagleConfig(gamma=GAMMA, n_heads=9, d_ff=1536)


def parameters_of(drafter: torch.nn.Module) -> dict[str, int]:
    """Trainable parameters by group (the frozen target is not a submodule)."""
    groups: dict[str, int] = {}
    for name, weight in drafter.named_parameters():
        group = name.split(".")[0]
        groups[group] = groups.get(group, 0) + weight.numel()
    return groups


def part_sizing(
    repeats: int,
    batch: int = 2,
    window: int = 128,
    anchors: int = 16,
    configs: tuple[DSparkConfig, DSparkConfig, EagleConfig] | None = None,
) -> dict:
    target = smollm2_target(torch.float32)
    target_parameters = parameter_count(target)
    dspark_config, dflash_config, eagle_config = configs or drafter_configs()
    torch.manual_seed(0)
    drafters: dict[str, torch.nn.Module] = {
        "dspark": DSparkDrafter(target, dspark_config),
        "dflash": DSparkDrafter(target, dflash_config),
        "eagle3": EagleDrafter(target, eagle_config),
    }
    out: dict[str, Any] = {
        "target_parameters": target_parameters,
        "feature_layers": list(target.config.feature_layers),
        "configs": {
            "dspark": dspark_config.as_dict(),
            "dflash": dflash_config.as_dict(),
            "eagle3": eagle_config.as_dict(),
        },
    }
    for name, drafter in drafters.items():
        groups = parameters_of(drafter)
        total = sum(groups.values())
        out[f"parameters/{name}"] = {
            "total": total,
            "share_of_target": round(total / target_parameters, 4),
            "groups": groups,
        }
    encode, encode_chat = chat_encoder(tokenizer())
    corpora = load_corpora()
    windows = [
        p.tokens
        for p in domain_prompts(corpora["code"], 4, 0, encode, encode_chat)
        + domain_prompts(corpora["prose"], 4, 0, encode, encode_chat)
    ]
    long_enough = [w * (window // len(w) + 2) for w in windows]  # repeated to the window
    settings = TrainSettings(seconds=0, batch_size=batch, window=window, lr=1e-3)
    before = load()
    tokens = FixedWindows(long_enough, 0).batch(batch, window)
    with torch.no_grad():
        target_forward = [timed(lambda: target(tokens)) for _ in range(repeats)]
    out["train_step"] = {
        "batch": batch,
        "window": window,
        "dspark_anchors_per_window": anchors,
        "target_forward_seconds": statistics.median(target_forward),
    }
    for name, drafter in drafters.items():
        source = FixedWindows(long_enough, 1)
        step = (
            eagle_step(drafter, source, settings)  # type: ignore[arg-type]
            if name == "eagle3"
            else dspark_step(
                drafter,  # type: ignore[arg-type]
                source,
                settings,
                anchors,
                torch.Generator().manual_seed(0),
            )
        )
        optimizer = make_optimizer(drafter, settings)

        def train_once(step: Callable = step, optimizer: torch.optim.Optimizer = optimizer) -> None:
            loss, _ = step()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        train_once()  # warm-up
        seconds = [timed(train_once) for _ in range(repeats)]
        out["train_step"][name] = {
            "seconds": [round(s, 3) for s in seconds],
            "median_seconds": statistics.median(seconds),
            "note": "includes the target forward (features and laws) of the step",
        }
    out["batch1"] = batch1_steps(target, drafters, windows[0], repeats)
    out["load_before"], out["load_after"] = before, load()
    return out


def part_plan(repeats: int) -> dict:
    """:func:`part_sizing` with ``plans.SMOLLM2``'s drafters, then one chunk of the curves'
    measurement per drafter and temperature (untrained drafters: the most rounds)."""
    from specproof.e2e.evaluation.comparisons import Setting, speculative_decoder
    from specproof.e2e.plans import FAST_VERIFY, SMOLLM2
    from specproof.reference.schedulers import FixedGamma

    plan = SMOLLM2
    out = part_sizing(
        repeats, plan.drafter_batch, plan.window, plan.anchors_per_window,
        (plan.dspark, plan.dflash, plan.eagle),
    )  # fmt: skip
    target = smollm2_target(torch.float32)
    encode, encode_chat = chat_encoder(tokenizer())
    corpus = load_corpora()["code"]
    chunk = [
        list(p.tokens)
        for p in domain_prompts(
            corpus, plan.requests_per_chunk, 3, encode, encode_chat, "evaluation"
        )
    ]
    setting = Setting(plan.new_tokens, FAST_VERIFY)
    decodes: dict[str, Any] = {"prompt_tokens": [len(c) for c in chunk]}
    before = load()
    for name in ("dspark", "dflash", "eagle3"):
        torch.manual_seed(0)
        drafter: Any = (
            EagleDrafter(target, plan.eagle)
            if name == "eagle3"
            else DSparkDrafter(target, plan.dspark if name == "dspark" else plan.dflash)
        )
        for temperature in plan.temperatures:
            decode = speculative_decoder(target, drafter, setting, temperature, FixedGamma(), 0)
            began = time.perf_counter()
            emitted, rounds = decode(chunk, 0).accepted_totals
            decodes[f"{name}/T={temperature:g}"] = {
                "seconds": time.perf_counter() - began,
                "emitted": int(emitted),
                "request_rounds": int(rounds),
            }
    decodes["load_before"], decodes["load_after"] = before, load()
    out["chunk"] = decodes
    return out


@torch.no_grad()
def batch1_steps(
    target: LlamaTarget,
    drafters: dict[str, torch.nn.Module],
    prompt: Sequence[int],
    repeats: int,
) -> dict[str, Any]:
    """At batch 1 after a prompt: one target verification step (x_0 and 7 drafts, cached) and
    one drafting step of each drafter (gamma tokens at T = 1)."""
    context = list(prompt)
    counts = torch.tensor([len(context) - 1])
    generator = torch.Generator().manual_seed(0)
    out: dict[str, Any] = {"context_tokens": len(context)}
    cache = target.new_cache(1, len(context) + 4 * GAMMA)
    output = target.extend(torch.tensor([context[:-1]]), counts, cache)
    cache.commit(counts)
    verify = torch.tensor([context[-1:] * (GAMMA + 1)])

    def verification() -> None:
        target.extend(verify, torch.tensor([GAMMA + 1]), cache)  # written, never committed

    verification()
    out["target_verify_seconds"] = statistics.median(timed(verification) for _ in range(repeats))
    pending = torch.tensor(context[-1:])
    for name, drafter in drafters.items():
        state = drafter.start(1, len(context) + 4 * GAMMA)  # type: ignore[operator]
        drafter.observe(state, output, torch.tensor([context[1:]]), counts)  # type: ignore[operator]

        def draft(drafter: Any = drafter, state: Any = state) -> None:
            drafter.propose(state, pending, 1.0, generator)

        draft()
        out[f"{name}_draft_seconds"] = statistics.median(timed(draft) for _ in range(repeats))
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("parts", nargs="+", choices=PARTS)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=2)
    parser.add_argument("--repeats", type=integer_at_least("--repeats", 1), default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    results = json.loads(args.json.read_text()) if args.json.exists() else {}
    for part in args.parts:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"{part}: started {started}, load {load()}", file=sys.stderr, flush=True)
        if part == "gap":
            value: dict[str, Any] = part_gap()
        elif part == "law":
            value = part_law()
        elif part == "speed":
            value = part_speed(args.repeats)
        elif part == "features":
            value = part_features(args.repeats)
        elif part == "sizing":
            value = part_sizing(args.repeats)
        else:
            value = part_plan(args.repeats)
        value["measured"] = {
            "started": started,
            "command": f"{PROG} {part} --threads {args.threads} --repeats {args.repeats}",
            "threads": args.threads,
            "torch": torch.__version__,
            "machine": platform.platform(),
        }
        results[part] = value
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
        print(json.dumps({part: value}, indent=1), flush=True)
    return results


if __name__ == "__main__":
    main()
