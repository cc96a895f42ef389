"""``LLM.generate`` end to end with vLLM's own verification step and with specproof's, in one
in-process engine per model, calls alternated in ABBA order. Run in the ``audit-vllm`` venv:

    python -m specproof.runners.generate_timing [--models tiny smollm2] [--batches 1 16 64]
        [--pairs 11] [--tokens 24]

vLLM's own step runs with its CPU expand kernel corrected (the fastest correct vLLM step on a
CPU without a Triton backend), drafting with a draft model at k = 3, T = 1, seeded requests,
EOS ignored. Per call it records the wall time, the process CPU time (all threads; less
sensitive than the wall time to other jobs on the machine) and the time spent inside
``RejectionSampler.forward`` (its thread CPU time) with the number of verification steps, so a
difference can be placed inside or outside the step. Per (model, batch) the median and
quartiles of each and of the per-pair ratios specproof / vLLM.

Writes benchmarks/vllm_generate_timing.json and .md with the thread count and the load average
before and after (the ratios need a quiet machine to mean what they say).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JSON_PATH = ROOT / "benchmarks" / "vllm_generate_timing.json"
MD_PATH = ROOT / "benchmarks" / "vllm_generate_timing.md"
SIDES = ("vllm", "specproof")
K = 3


def quartiles(values: Sequence[float]) -> dict[str, float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"q1": q1, "median": median, "q3": q3}


def abba_order(pairs: int) -> list[int]:
    """Which side (0 vLLM, 1 specproof) runs at each call: pairs in ABBA order (AB, BA, AB ...),
    so a drift in the machine's speed falls on both sides alike."""
    return [side for index in range(pairs) for side in ((0, 1) if index % 2 == 0 else (1, 0))]


class StepClock:
    """Thread CPU seconds and calls inside ``RejectionSampler.forward`` since :meth:`reset`."""

    def __init__(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def wrap(self, forward: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(forward)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return forward(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - started
                self.calls += 1

        return timed


def resolved(name: str, scratch: Path) -> Any:
    """The :class:`~specproof.models.AuditModel` called ``name`` (tiny: built in ``scratch``)."""
    if name == "tiny":
        from specproof.subjects.real_models import build_models, tiny_model

        build_models(scratch / "models")
        return tiny_model(scratch / "models")
    if name == "smollm2":
        from specproof.models.smollm2 import smollm2

        return smollm2(say=lambda text: print(text, file=sys.stderr, flush=True))
    raise ValueError(f"unknown model {name!r} (tiny or smollm2)")


def time_model(
    model: Any, batches: Sequence[int], pairs: int, tokens: int, profile: bool = False
) -> list[dict[str, Any]]:
    """One engine on ``model``; per batch size, ``pairs`` ABBA pairs of ``LLM.generate`` calls
    (``profile``: each side's calls under cProfile, its Python calls per call and per step
    added to the row: a count the machine's load does not change)."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.pop("TRITON_INTERPRET", None)
    from vllm.utils import cpu_triton_utils

    from specproof.adapters import vllm_engine as ve
    from specproof.adapters import vllm_verifier
    from specproof.adapters.vllm_sampler import expand_in_place
    from specproof.models import ModelPaths

    cpu_triton_utils._expand_kernel_impl = expand_in_place
    os.environ.update({k: v for k, v in ve.ENV.items() if k not in os.environ})
    import vllm
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    paths = ModelPaths(model.target, model.draft)
    started = time.perf_counter()
    llm = vllm.LLM(
        model=str(paths.target), dtype="float32", seed=0,
        max_model_len=len(model.prompt) + tokens + K + 8,
        speculative_config=ve.speculative_config(ve.Speculation("draft", K), paths),
        generation_config="vllm", enable_prefix_caching=False, enforce_eager=True,
        distributed_executor_backend="uni",
    )  # fmt: skip
    startup = time.perf_counter() - started
    own = RejectionSampler.forward
    clock = StepClock()

    def use(side: int) -> None:
        vllm_verifier.uninstall()
        RejectionSampler.forward = own
        if SIDES[side] == "specproof":
            vllm_verifier.install()
        RejectionSampler.forward = clock.wrap(RejectionSampler.forward)

    rows = []
    calls = [0]
    profilers: dict[int, cProfile.Profile] = {}
    for batch in batches:
        prompts = [{"prompt_token_ids": list(model.prompt)}] * batch

        def generate(
            side: int, batch: int = batch, prompts: list[Any] = prompts
        ) -> tuple[float, float, float, int]:
            use(side)
            calls[0] += 1
            params = [
                vllm.SamplingParams(temperature=1.0, max_tokens=tokens, ignore_eos=True,
                                    detokenize=False, seed=calls[0] * 100_003 + i)
                for i in range(batch)
            ]  # fmt: skip
            clock.reset()
            wall, cpu = time.perf_counter(), time.process_time()
            profiler = profilers.get(side)  # none at the first warm-up
            if profiler is not None:
                profiler.enable()
            llm.generate(prompts, params, use_tqdm=False)
            if profiler is not None:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            return wall, cpu, clock.seconds, clock.calls

        generate(0), generate(1)  # warm-up
        if profile:  # this batch's calls only (the warm-up is not counted)
            profilers.update({0: cProfile.Profile(), 1: cProfile.Profile()})
        seen: dict[int, list[tuple[float, float, float, int]]] = {0: [], 1: []}
        for side in abba_order(pairs):
            seen[side].append(generate(side))
        rows.append(row_of(model.name, batch, tokens, pairs, seen, startup))
        if profile:
            for side, name in enumerate(SIDES):
                calls_made = pstats.Stats(profilers[side]).total_calls  # type: ignore[attr-defined]
                steps = sum(call[3] for call in seen[side])
                rows[-1][name]["python_calls_per_call"] = calls_made / pairs
                rows[-1][name]["python_calls_per_step"] = calls_made / max(steps, 1)
        print(line(rows[-1]), flush=True)
    vllm_verifier.uninstall()
    RejectionSampler.forward = own
    return rows


def row_of(
    model: str,
    batch: int,
    tokens: int,
    pairs: int,
    seen: dict[int, list[tuple[float, float, float, int]]],
    startup: float,
) -> dict[str, Any]:
    """The table row of one (model, batch): per side the quartiles of wall, process CPU and
    step seconds per call and of steps per call, and the per-pair ratios specproof / vLLM."""
    out: dict[str, Any] = {
        "model": model, "batch": batch, "tokens_per_request": tokens, "k": K, "pairs": pairs,
        "engine_startup_seconds": round(startup, 1),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }  # fmt: skip
    for index, name in enumerate(SIDES):
        wall, cpu, step, steps = zip(*seen[index], strict=True)
        out[name] = {
            "wall_s": quartiles(wall), "cpu_s": quartiles(cpu), "step_cpu_s": quartiles(step),
            "steps": quartiles([float(s) for s in steps]),
        }  # fmt: skip
    for field, at in (("wall_ratio", 0), ("cpu_ratio", 1), ("step_ratio", 2)):
        ratios = [o[at] / t[at] for o, t in zip(seen[1], seen[0], strict=True) if t[at] > 0]
        out[field] = quartiles(ratios)
    return out


def line(row: dict[str, Any]) -> str:
    def cell(q: dict[str, float], scale: float = 1.0, digits: int = 3) -> str:
        return (
            f"{q['median'] * scale:.{digits}f} "
            f"({q['q1'] * scale:.{digits}f}-{q['q3'] * scale:.{digits}f})"
        )

    v, s = row["vllm"], row["specproof"]
    return (
        f"| {row['model']} | {row['batch']} | {row['pairs']} | {cell(v['wall_s'])} | "
        f"{cell(s['wall_s'])} | {cell(row['wall_ratio'])} | {cell(row['cpu_ratio'])} | "
        f"{cell(v['step_cpu_s'], 1e3, 1)} | {cell(s['step_cpu_s'], 1e3, 1)} | "
        f"{cell(row['step_ratio'])} | {v['steps']['median']:.0f} / {s['steps']['median']:.0f} | "
        f"{row['measured']} |"
    )


def markdown(result: dict[str, Any]) -> str:
    meta = result["machine"]
    return (
        "\n".join(
            [
                f"Measured {meta['date']} on {meta['machine']}: torch {meta['torch']} with "
                f"{meta['threads']} threads, vLLM {meta['vllm']}; load average "
                f"{meta['load_before']} before, {meta['load_after']} after.",
                *(
                    f"Rows of an earlier run ended {run['date']} ({run['threads']} threads; "
                    f"load average {run['load_before']} before, {run['load_after']} after)."
                    for run in result.get("earlier_runs", [])
                ),
                "",
                f"`LLM.generate`, draft model k = {K}, T = 1, seeded requests of "
                f"{result['rows'][0]['tokens_per_request'] if result['rows'] else '-'} tokens, one "
                "in-process engine per model, vLLM's step (CPU expand kernel corrected) and "
                "specproof's alternated per call in ABBA order. Median (quartiles); ratios "
                "specproof / vLLM per pair; step: thread CPU time inside "
                "`RejectionSampler.forward` per call.",
                "",
                "| model | requests | pairs | vLLM wall s | specproof wall s | wall ratio | "
                "CPU ratio | vLLM step ms | specproof step ms | step ratio | steps per call | "
                "measured |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|",
                *(line(row) for row in result["rows"]),
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", nargs="+", default=["tiny", "smollm2"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16, 64])
    parser.add_argument("--pairs", type=int, default=11, help="ABBA pairs per batch size")
    parser.add_argument("--tokens", type=int, default=24, help="tokens per request")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument(
        "--profile", action="store_true", help="count Python calls per call and step (cProfile)"
    )
    parser.add_argument("--json", type=Path, default=JSON_PATH)
    parser.add_argument("--markdown", type=Path, default=MD_PATH)
    args = parser.parse_args(argv)
    if args.pairs < 2 or min(args.batches) < 1 or args.tokens < 1:
        parser.error("--pairs must be at least 2, --batches and --tokens at least 1")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    import vllm

    load_before = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        if len(args.models) == 1:
            model = resolved(args.models[0], Path(scratch))
            rows = time_model(model, args.batches, args.pairs, args.tokens, args.profile)
        else:  # one process per model: a process starts one vLLM engine
            for name in args.models:
                part = Path(scratch) / f"{name}.json"
                command = [sys.executable, "-m", "specproof.runners.generate_timing", "--models",
                           name, "--batches", *map(str, args.batches), "--pairs",
                           str(args.pairs), "--tokens", str(args.tokens), "--json", str(part),
                           "--markdown", str(Path(scratch) / f"{name}.md")]  # fmt: skip
                command += ["--threads", str(args.threads)] if args.threads else []
                command += ["--profile"] if args.profile else []
                subprocess.run(command, check=True)
                rows += json.loads(part.read_text())["rows"]
    result = {
        "rows": rows,
        "machine": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "vllm": vllm.__version__,
            "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
    }
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    args.markdown.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
