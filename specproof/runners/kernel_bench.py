"""Chain-verification benchmark: writes benchmarks/kernels.md, benchmarks/results.json
and benchmarks/time_vs_batch.png.

Every implementation runs on the same inputs in the same process, interleaved: each repeat calls
all of them once in a fresh random order, so slow phases of a shared machine hit them alike;
reported are medians per call and medians of per-repeat ratios. Two timings:

- warm (every shape): each timed call of a fast implementation right after an untimed one of
  the same (a steady-state call: its rows partly in cache, its workspaces touched);
- cold (headline shape, the fast implementations): each timed call right after an untimed
  256 MiB write that evicts the caches, no call of the same before it: the rows come from
  memory, as when verification runs right after the target's forward pass. This is the
  headline figure of validation's cost.

Not a test: nothing here asserts a speed.

Implementations (torch CPU unless CUDA is present):
- ``default``: ``chain_verify(..., backend="torch")`` with its defaults (validate=True);
- ``unvalidated``: the same with validate=False;
- ``flashinfer`` / ``vllm``: the compat functions with FlashInfer's and vLLM's signatures
  (probabilities only, their defaults: validated);
- ``eager``: softmax of every row, residual of every position, multinomial of every row, then
  the first rejection picked (what a direct tensor transcription does);
- ``loop``: a per-request Python loop in the design of Hugging Face transformers'
  ``_speculative_sampling`` (batch size 1 each: softmax of the request's rows, ratios, the
  residual of the first rejected row or the bonus row, multinomial); our own code of that
  design, timed as an alternative a user would write.

Bytes needed (the bound): for each request, the rows the result depends on are read once at
4 bytes per entry: with probabilities, the target row of the final token and, at a rejection,
the draft row of that position (the gathered entries p(x_k), q(x_k) add 8 bytes per position);
with logits, every target and draft row up to and including the first rejection (its softmax
needs the whole row) and the bonus row. Divided by the bandwidth of a 256 MiB copy measured in
the same run, this is the time a pass that reads each needed byte once at copy speed would take.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from specproof.optimized import chain_verify
from specproof.optimized.compat import chain_speculative_sampling, rejection_sample
from specproof.runners.entry_points import entry_points_markdown, measure_entry_points
from specproof.runners.timing import Evictor, interleaved_times, synchronize
from specproof.sections import replace_section

ROOT = Path(__file__).resolve().parents[2]

HEADLINE = (64, 8, 128_256)
SWEEPS = {"B": (1, 8, 256), "k": (1, 4, 16), "V": (32_000, 151_936)}
TARGET_SCALE = 2.0
"""Target logits are N(0, 2^2) per entry."""
REALISTIC_NOISE = 0.6
"""Realistic drafts: draft logits = target logits + N(0, 0.6^2) noise (mean accepted length is
measured and reported)."""
UNRELATED_SCALE = 4.0
"""Near-zero acceptance: draft logits drawn independently, N(0, 4^2)."""


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def copy_bandwidth(dev: torch.device) -> float:
    """Bytes per second of a 256 MiB copy (read + write counted), median of 7."""
    source = torch.empty(64 * 2**20, dtype=torch.float32, device=dev).fill_(1.0)
    target = torch.empty_like(source)
    target.copy_(source)
    times = []
    for _ in range(7):
        synchronize(dev)
        start = time.perf_counter()
        target.copy_(source)
        synchronize(dev)
        times.append(time.perf_counter() - start)
    return 2 * source.numel() * 4 / statistics.median(times)


def eager_chain_verify(
    target: torch.Tensor,
    draft: torch.Tensor,
    tokens: torch.Tensor,
    logits: bool,
    gen: torch.Generator,
) -> torch.Tensor:
    """The eager pattern: full softmaxes, every residual, a multinomial per row."""
    batch, n = tokens.shape
    p = torch.softmax(target, dim=-1) if logits else target
    q = torch.softmax(draft, dim=-1) if logits else draft
    index = tokens[..., None]
    p_x = p[:, :n].gather(2, index)[..., 0]
    q_x = q.gather(2, index)[..., 0]
    u = torch.rand(batch, n, device=p.device, generator=gen)
    accept = u * q_x < p_x
    accepted = torch.cumprod(accept.to(torch.int64), dim=1).sum(dim=1)
    residual = torch.clamp(p[:, :n] - q, min=0)
    residual = residual / residual.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    rows = torch.cat([residual, p[:, n:]], dim=1)
    drawn = torch.multinomial(rows.reshape(-1, rows.shape[-1]), 1, generator=gen)
    final = drawn.view(batch, n + 1).gather(1, accepted[:, None])[:, 0]
    out = torch.full((batch, n + 1), -1, dtype=torch.int64, device=p.device)
    keep = torch.arange(n, device=p.device)[None, :] < accepted[:, None]
    out[:, :n] = torch.where(keep, tokens, -1)
    out.scatter_(1, accepted[:, None], final[:, None])
    return out


def per_request_loop(
    target: torch.Tensor,
    draft: torch.Tensor,
    tokens: torch.Tensor,
    logits: bool,
    gen: torch.Generator,
) -> list[torch.Tensor]:
    """One request at a time, in the design of HF's ``_speculative_sampling`` (batch size 1)."""
    out = []
    n = tokens.shape[1]
    for b in range(tokens.shape[0]):
        p = torch.softmax(target[b], dim=-1) if logits else target[b]
        q = torch.softmax(draft[b], dim=-1) if logits else draft[b]
        x = tokens[b]
        ratio = p[torch.arange(n), x] / q[torch.arange(n), x]
        r = torch.rand(n, generator=gen, device=p.device)
        matches = int(((~(r <= ratio)).cumsum(dim=-1) < 1).sum())
        if matches < n:
            rest = torch.clamp(p[matches] - q[matches], min=0)
            rest.div_(rest.sum())
        else:
            rest = p[matches]
        final = torch.multinomial(rest, 1, generator=gen)
        out.append(torch.cat([x[:matches], final]))
    return out


def bytes_needed(accepted: torch.Tensor, n: int, vocab: int, logits: bool) -> int:
    rejected = accepted < n
    if logits:
        target_rows = accepted + 1
        draft_rows = torch.minimum(accepted + 1, torch.full_like(accepted, n))
        rows = int(target_rows.sum() + draft_rows.sum())
        return rows * vocab * 4
    rows = accepted.numel() + int(rejected.sum())
    return (
        rows * vocab * 4
        + int(2 * torch.minimum(accepted + 1, torch.full_like(accepted, n)).sum()) * 4
    )


def make_inputs(
    batch: int, n: int, vocab: int, realistic: bool, logits: bool, dev: torch.device, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator(device=dev).manual_seed(seed)
    target = torch.randn(batch, n + 1, vocab, device=dev, generator=gen) * TARGET_SCALE
    if realistic:
        draft = target[:, :n] + REALISTIC_NOISE * torch.randn(
            batch, n, vocab, device=dev, generator=gen
        )
    else:
        draft = UNRELATED_SCALE * torch.randn(batch, n, vocab, device=dev, generator=gen)
    q = torch.softmax(draft, dim=-1)
    tokens = torch.multinomial(q.reshape(-1, vocab), 1, generator=gen).view(batch, n)
    if logits:
        return target, draft, tokens
    return torch.softmax(target, dim=-1), q, tokens


def implementations(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, logits: bool, full: bool
) -> dict[str, Callable[[], object]]:
    gen = torch.Generator(device=target.device).manual_seed(5)
    flags = {"target_is_logits": logits, "draft_is_logits": logits}
    impls: dict[str, Callable[[], object]] = {
        "default": lambda: chain_verify(target, draft, tokens, seed=1, backend="torch", **flags),
        "unvalidated": lambda: chain_verify(
            target, draft, tokens, seed=1, backend="torch", validate=False, **flags
        ),
        "eager": lambda: eager_chain_verify(target, draft, tokens, logits, gen),
        "loop": lambda: per_request_loop(target, draft, tokens, logits, gen),
    }
    if full and not logits:
        batch, n = tokens.shape
        vocab = target.shape[-1]
        ragged_target = target[:, :n].reshape(batch * n, vocab)
        ragged_draft = draft.reshape(batch * n, vocab)
        metadata = types.SimpleNamespace(
            all_greedy=False, all_random=True, temperature=None, generators={}
        )
        impls["flashinfer"] = lambda: chain_speculative_sampling(draft, tokens, target, seed=1)
        impls["vllm"] = lambda: rejection_sample(
            tokens.reshape(-1),
            [n] * batch,
            n,
            torch.arange(1, batch + 1) * n,
            ragged_draft,
            ragged_target,
            tokens[:, :1],
            metadata,
            seed=1,
        )
    return impls


COLD_IMPLEMENTATIONS = ("default", "unvalidated", "flashinfer", "vllm")
"""Timed cold at the headline shape (eager and the loop take seconds: cold in every timing)."""
COLD_REPEATS = 21


def ratio_summary(numerator: list[float], denominator: list[float]) -> dict:
    """Median and quartiles of the per-repeat ratios numerator / denominator."""
    ratios = sorted(a / b for a, b in zip(numerator, denominator, strict=True))
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return {"median": statistics.median(ratios), "q1": quartiles[0], "q3": quartiles[2]}


def cold_figures(
    impls: dict[str, Callable[[], object]],
    dev: torch.device,
    seed: int,
    evictor: Evictor,
) -> dict:
    """The fast implementations timed cold (see the module docstring), interleaved."""
    calls = {name: impls[name] for name in COLD_IMPLEMENTATIONS if name in impls}
    times = interleaved_times(calls, dev, COLD_REPEATS, seed=seed, evict=evictor)
    overhead = ratio_summary(times["default"], times["unvalidated"])
    return {
        "repeats": COLD_REPEATS,
        "median_s": {name: statistics.median(t) for name, t in times.items()},
        "ratio_to_default": {
            name: ratio_summary(t, times["default"])["median"] for name, t in times.items()
        },
        "validation_overhead": overhead["median"] - 1,
        "validation_overhead_quartiles": [overhead["q1"] - 1, overhead["q3"] - 1],
    }


def measure_case(
    batch: int,
    n: int,
    vocab: int,
    *,
    realistic: bool,
    logits: bool,
    threads: int,
    full: bool,
    repeats: int,
    dev: torch.device,
    bandwidth: float,
    steady: bool = True,
    evictor: Evictor | None = None,
) -> dict:
    torch.set_num_threads(threads)
    target, draft, tokens = make_inputs(batch, n, vocab, realistic, logits, dev, seed=batch + n)
    impls = implementations(target, draft, tokens, logits, full)
    times = interleaved_times(impls, dev, repeats, seed=batch * 1000 + n, steady=steady)
    cold = None if evictor is None else cold_figures(impls, dev, batch * 1000 + n, evictor)
    accepted = chain_verify(
        target,
        draft,
        tokens,
        seed=1,
        backend="torch",
        validate=False,
        target_is_logits=logits,
        draft_is_logits=logits,
    ).num_accepted
    needed = bytes_needed(accepted, n, vocab, logits)
    row: dict = {
        "B": batch,
        "k": n,
        "V": vocab,
        "input": "logits" if logits else "probabilities",
        "acceptance": "realistic" if realistic else "near-zero",
        "threads": threads,
        "repeats": repeats,
        "mean_accepted": float(accepted.double().mean()),
        "bytes_needed": needed,
        "bound_s": needed / bandwidth,
        "median_s": {name: statistics.median(t) for name, t in times.items()},
        "ratio_to_default": {
            name: statistics.median(a / b for a, b in zip(t, times["default"], strict=True))
            for name, t in times.items()
        },
        "validation_overhead": statistics.median(
            a / b for a, b in zip(times["default"], times["unvalidated"], strict=True)
        )
        - 1,
    }
    warm = ratio_summary(times["default"], times["unvalidated"])
    row["validation_overhead_quartiles"] = [warm["q1"] - 1, warm["q3"] - 1]
    if cold is not None:
        row["cold"] = cold
    del target, draft, tokens
    return row


def plan(quick: bool) -> list[dict]:
    """Headline shape with everything; one-axis sweeps around it for the main implementations."""
    if quick:
        base = (8, 4, 4096)
        sweeps = {"B": (1, 32), "k": (), "V": ()}
    else:
        base, sweeps = HEADLINE, SWEEPS
    cases: list[dict[str, Any]] = []
    for logits in (False, True):
        for realistic in (True, False):
            for threads in (1, 2):
                if not realistic and threads == 2:
                    continue
                cases.append(
                    {"shape": base, "logits": logits, "realistic": realistic, "threads": threads}
                )
    for axis, values in sweeps.items():
        for value in values:
            batch, n, vocab = base
            shape = {
                "B": (value, n, vocab),
                "k": (batch, value, vocab),
                "V": (batch, n, value),
            }[axis]
            for logits in (False, True):
                cases.append(
                    {
                        "shape": shape,
                        "logits": logits,
                        "realistic": True,
                        "threads": 1,
                        "sweep": axis,
                    }
                )
    return cases


def run(quick: bool, steady: bool = True) -> dict:
    dev = device()
    torch.set_num_threads(1)
    bandwidth = copy_bandwidth(dev)
    evictor = Evictor(dev)
    load_start = os.getloadavg()
    started = time.perf_counter()
    results = []
    for case in plan(quick):
        batch, n, vocab = case["shape"]
        headline = "sweep" not in case
        big = batch * (2 * n + 1) * vocab > 100_000_000
        row = measure_case(
            batch,
            n,
            vocab,
            realistic=case["realistic"],
            logits=case["logits"],
            threads=case["threads"],
            full=headline,
            repeats=7 if headline else (3 if big else 5),
            dev=dev,
            bandwidth=bandwidth,
            steady=steady,
            evictor=evictor if headline else None,
        )
        row["sweep"] = case.get("sweep", "headline")
        results.append(row)
        print(json.dumps(row), flush=True)
    name = (
        torch.cuda.get_device_name()
        if dev.type == "cuda"
        else platform.processor() or platform.machine()
    )
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "steady_state": steady,
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "device": dev.type,
        "device_name": name,
        "cpu_count": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch": torch.__version__,
        "copy_bandwidth_bytes_per_s": bandwidth,
        "seconds": time.perf_counter() - started,
        "headline": list(HEADLINE),
        "results": results,
        "fit": linear_fit(results),
        "entry_points": measure_entry_points(dev, quick),
    }


def linear_fit(results: list[dict]) -> dict:
    """Least squares time = a + b * bytes_needed over the 1-thread realistic rows of ``default``,
    per input kind; r^2 says how much of the variation bytes explain."""
    fits = {}
    for kind in ("probabilities", "logits"):
        rows = [
            r
            for r in results
            if r["input"] == kind and r["threads"] == 1 and r["acceptance"] == "realistic"
        ]
        if len(rows) < 3:
            continue
        xs = [float(r["bytes_needed"]) for r in rows]
        ys = [r["median_s"]["default"] for r in rows]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mean_x) ** 2 for x in xs)
        sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
        slope = sxy / sxx
        intercept = mean_y - slope * mean_x
        ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
        ss_tot = sum((y - mean_y) ** 2 for y in ys)
        fits[kind] = {
            "intercept_s": intercept,
            "seconds_per_byte": slope,
            "effective_GB_per_s": 1 / slope / 1e9 if slope > 0 else float("inf"),
            "r2": 1 - ss_res / ss_tot if ss_tot > 0 else 1.0,
            "points": len(rows),
        }
    return fits


def targets(report: dict) -> list[str]:
    """The issue's targets, each as a ratio measured in this run."""
    lines = []
    head = {
        r["input"]: r
        for r in report["results"]
        if r["sweep"] == "headline" and r["threads"] == 1 and r["acceptance"] == "realistic"
    }

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    if "probabilities" in head:
        row = head["probabilities"]
        eager = row["ratio_to_default"]["eager"]
        bound = row["median_s"]["default"] / row["bound_s"]
        lines.append(
            f"- probabilities: {eager:.1f}x faster than eager (target >= 25x: "
            f"{verdict(eager >= 25)}); {bound:.1f}x the bytes bound (target <= 10x: "
            f"{verdict(bound <= 10)}; goal 5x: {verdict(bound <= 5)})."
        )
    if "logits" in head:
        row = head["logits"]
        eager, loop = row["ratio_to_default"]["eager"], row["ratio_to_default"]["loop"]
        lines.append(
            f"- logits: {eager:.1f}x faster than eager (target >= 10x: {verdict(eager >= 10)}); "
            f"{loop:.2f}x faster than the per-request loop (target >= 3x: {verdict(loop >= 3)})."
        )
    for kind, row in head.items():
        cold = row.get("cold")
        if cold is None:
            continue
        low, high = cold["validation_overhead_quartiles"]
        lines.append(
            f"- validate=True against validate=False, cold, {kind}: "
            f"{100 * cold['validation_overhead']:+.0f} % (median of {cold['repeats']} per-repeat "
            f"ratios, quartiles {100 * low:+.0f} % to {100 * high:+.0f} %; target <= +20 %: "
            f"{verdict(cold['validation_overhead'] <= 0.2)})."
        )
    overheads = [r["validation_overhead"] for r in report["results"]]
    worst = max(report["results"], key=lambda r: r["validation_overhead"])
    within = sum(o <= 0.2 for o in overheads)
    lines.append(
        f"- validate=True within 20 % of validate=False, warm: at {within} of {len(overheads)} "
        f"measured rows; worst {100 * worst['validation_overhead']:+.0f} % ({worst['input']}, "
        f"B = {worst['B']}, k = {worst['k']}, V = {worst['V']:,}, {worst['threads']} "
        f"thread(s), {worst['acceptance']}). Medians of per-repeat ratios of 3 to 7 repeats on a "
        "shared machine: each row's quartiles, in the tables above, show how far it may move."
    )
    return lines


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}" if seconds < 10 else f"{seconds * 1e3:,.0f}"


def markdown(report: dict) -> str:
    bw = report["copy_bandwidth_bytes_per_s"] / 1e9
    lines = [
        "## Kernels: chain verification",
        "",
        "Written by `nox -s bench` (`python -m specproof.runners.kernel_bench`); raw numbers in "
        "`benchmarks/results.json`, plot `benchmarks/time_vs_batch.png`.",
        f"Run {report['date']} on {report['device']} ({report['device_name']}, "
        f"{report['cpu_count']} cores), torch {report['torch']}, {report['seconds']:.0f} s in all"
        + (" (`--quick`: tiny shapes, for testing the script)" if report["quick"] else "")
        + f". Measured copy bandwidth {bw:.2f} GB/s (256 MiB, read + write).",
        "The machine may be shared with other jobs"
        + (
            " (load average {:.1f} at the start, {:.1f} at the end, on {} cores)".format(
                report["load_average_start"][0],
                report["load_average_end"][0],
                report["cpu_count"],
            )
            if "load_average_start" in report
            else ""
        )
        + (
            f"; the process was pinned to {report['cpus_allowed']} of them, so the 2-thread "
            "rows share one core"
            if report.get("cpus_allowed") == 1
            else ""
        )
        + ": every repeat calls all "
        "implementations once in a fresh random order, and the ratios below are medians of "
        "per-repeat ratios, so that slow phases hit all of them alike. Two timings. **Cold** "
        "(the headline shape, the implementations faster than 1 s, 21 repeats): each timed "
        "call follows an untimed 256 MiB write that evicts the caches and no call of its own, "
        "so its rows come from memory, as when verification follows the target's forward "
        "pass; this is the cost of validation an engine sees. **Warm** (every shape): "
        + (
            "each timed call of an implementation faster than 1 s follows an untimed call of "
            "the same one (a steady-state call), so none pays for the cold memory eager's "
            "gigabyte of temporaries leaves (`--cold` times without those calls)."
            if report.get("steady_state", True)
            else "`--cold`: no untimed call before the timed ones."
        ),
        "",
        "Inputs: target logits N(0, 2^2); realistic drafts add N(0, 0.6^2) noise to them, "
        "near-zero-acceptance drafts are drawn independently (N(0, 4^2)); drafted tokens are "
        "sampled from the draft. Probability inputs are the softmaxes of those logits. `default` "
        'is `chain_verify(..., backend="torch")` as shipped (validate=True); `unvalidated` '
        "adds validate=False; `flashinfer` and `vllm` are the compat functions (probabilities "
        "only); `eager` softmaxes every row and forms every residual; `loop` is a per-request "
        "loop in the design of HF transformers' `_speculative_sampling`; `bound` is the bytes "
        "the result needs (see `specproof/runners/kernel_bench.py`) at the measured copy "
        "bandwidth. The Triton kernels "
        "compiled on a GPU, with the fraction of its copy bandwidth, are in the section "
        '"Kernels on a GPU" below (`specproof/runners/gpu.sh`).',
        "",
        "The full grid (V in {32,000, 128,256, 151,936} x B in {1, 8, 64, 256} x k in "
        "{1, 4, 8, 16}) with eager baselines does not fit this machine's time: the headline shape "
        "runs everything, and one-axis sweeps vary B, k and V alone around it.",
        "",
        "### Headline shape",
        "",
        "| input | acceptance | threads | mean accepted | "
        "default ms | unvalidated ms | flashinfer ms | vllm ms | eager ms | loop ms | bound ms | "
        "eager / default | loop / default | default / bound | validation overhead, warm "
        "(quartiles) | default ms, cold | unvalidated ms, cold | flashinfer ms, cold | "
        "vllm ms, cold | validation overhead, cold (quartiles) |",
        "|" + "---|" * 20,
    ]

    def overhead_cell(figures: dict) -> str:
        low, high = figures.get("validation_overhead_quartiles", (math.nan, math.nan))
        return (
            f"{100 * figures['validation_overhead']:+.0f} % ({100 * low:+.0f} to {100 * high:+.0f})"
        )

    def cold_cells(row: dict) -> str:
        cold = row.get("cold")
        if cold is None:
            return " - | - | - | - | - |"
        times = cold["median_s"]
        cells = [
            milliseconds(times[name]) if name in times else "-"
            for name in ("default", "unvalidated", "flashinfer", "vllm")
        ]
        return " " + " | ".join(cells) + f" | {overhead_cell(cold)} |"

    def cell(row: dict, name: str) -> str:
        value = row["median_s"].get(name)
        return "-" if value is None else milliseconds(value)

    for row in report["results"]:
        if row["sweep"] != "headline":
            continue
        ratios = row["ratio_to_default"]
        lines.append(
            f"| {row['input']} | {row['acceptance']} | {row['threads']} | "
            f"{row['mean_accepted']:.2f} | "
            + " | ".join(
                cell(row, name)
                for name in ("default", "unvalidated", "flashinfer", "vllm", "eager", "loop")
            )
            + f" | {milliseconds(row['bound_s'])} | {ratios['eager']:.1f}x | "
            f"{ratios['loop']:.1f}x | {row['median_s']['default'] / row['bound_s']:.1f}x | "
            f"{overhead_cell(row)} |" + cold_cells(row)
        )
    lines += [
        "",
        f"B = {report['headline'][0]}, k = {report['headline'][1]}, "
        f"V = {report['headline'][2]:,}. Ratios are medians of per-repeat ratios (same run).",
        "",
        "### One-axis sweeps (1 thread, realistic drafts)",
        "",
        "| varied | input | B | k | V | mean accepted | default ms | unvalidated ms | eager ms | "
        "loop ms | bound ms | eager / default | loop / default | validation overhead, warm "
        "(quartiles) |",
        "|" + "---|" * 14,
    ]
    for row in report["results"]:
        if row["sweep"] == "headline" and not (
            row["threads"] == 1 and row["acceptance"] == "realistic"
        ):
            continue
        ratios = row["ratio_to_default"]
        lines.append(
            f"| {row['sweep']} | {row['input']} | {row['B']} | {row['k']} | {row['V']:,} | "
            f"{row['mean_accepted']:.2f} | "
            + " | ".join(cell(row, name) for name in ("default", "unvalidated", "eager", "loop"))
            + f" | {milliseconds(row['bound_s'])} | {ratios['eager']:.1f}x | "
            f"{ratios['loop']:.1f}x | {overhead_cell(row)} |"
        )
    lines += ["", "### Targets (headline shape, 1 thread, realistic drafts, defaults)", ""]
    lines += targets(report)
    lines += [
        "",
        "### Where the time goes",
        "",
        "`python -m specproof.runners.kernel_profile` (torch.profiler, headline shape, 1 thread, "
        "validate=True), "
        "run on an earlier commit (before the checked copy): with probabilities, copying the "
        "final rows (`index_select`, about a quarter), the tile sums of the inverse CDF and the "
        "full-row checks (`sum`, `amin`), and the residual (`sub_`, `clamp_`), each a pass over "
        "the B final rows that torch cannot fuse; with logits, `softmax` of the rows reached "
        "(about half: its exp costs over 1 ns per entry at one thread, several times the read) "
        "and the copies of those rows into contiguous buffers (about a third). Since then the "
        "copy of the final probability rows is one C loop that also keeps each row's sum and "
        "minimum (`optimized/torch_backend/fused_gather.py`, built with the system C compiler; "
        "torch's `index_select`, `sum` and `amin` without one), so the full-row checks make no "
        "pass of their own. A fused CPU kernel for the rest (online log-sum-exp, or residual "
        "plus search) is what would close the gap to the bound; it is not built here.",
    ]
    lines += ["", "### Scaling: time of `default` against bytes needed", ""]
    for kind, fit in report["fit"].items():
        lines.append(
            f"- {kind}: time = {fit['intercept_s'] * 1e3:.2f} ms + bytes / "
            f"{fit['effective_GB_per_s']:.2f} GB/s, r^2 = {fit['r2']:.3f} over "
            f"{fit['points']} shapes (1 thread, realistic drafts)."
        )
    lines.append("")
    if report.get("entry_points"):
        lines += entry_points_markdown(report["entry_points"])
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind in zip(axes, ("probabilities", "logits"), strict=True):
        rows = sorted(
            (
                r
                for r in report["results"]
                if r["input"] == kind
                and r["threads"] == 1
                and r["acceptance"] == "realistic"
                and r["sweep"] in ("B", "headline")
            ),
            key=lambda r: r["B"],
        )
        batches = [r["B"] for r in rows]
        for name in ("default", "unvalidated", "eager", "loop"):
            ax.plot(batches, [r["median_s"][name] * 1e3 for r in rows], marker="o", label=name)
        ax.plot(batches, [r["bound_s"] * 1e3 for r in rows], "k--", label="bytes bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("B (requests)")
        ax.set_ylabel("ms per call")
        ax.set_title(f"{kind}, k = {rows[0]['k']}, V = {rows[0]['V']:,}, 1 thread")
        ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, to test the script")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for results.json and the plot (default benchmarks/, or a temporary "
        "folder with --quick or --cold)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="no untimed call before each timed one (to see what the first call after another "
        "implementation costs); prints the tables instead of writing benchmarks/kernels.md",
    )
    parser.add_argument(
        "--render",
        type=Path,
        default=None,
        help="re-render benchmarks/kernels.md and the plot from this results.json (no measuring)",
    )
    args = parser.parse_args()
    if args.render is not None:
        report = json.loads(args.render.read_text())
        plot(report, args.render.parent / "time_vs_batch.png")
        replace_section(ROOT / "benchmarks" / "kernels.md", "kernels", markdown(report))
        return
    scratch = args.quick or args.cold
    out = args.out or (
        Path(tempfile.gettempdir()) / "specproof-bench" if scratch else ROOT / "benchmarks"
    )
    report = run(args.quick, steady=not args.cold)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out / "time_vs_batch.png")
    if not scratch:
        replace_section(ROOT / "benchmarks" / "kernels.md", "kernels", markdown(report))
    else:
        print(markdown(report))


if __name__ == "__main__":
    main()
