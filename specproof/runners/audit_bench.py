"""``nox -s audit-bench`` (``python -m specproof.runners.audit_bench``): speed of the audit harness,
written to benchmarks/audit_harness.md and benchmarks/audit_harness.json.

One measurement is one audit case end to end: drafting, the verifier call, the exact layout
checks, completion from the target, counting outcomes and the goodness-of-fit rows. The
verifiers: the flagged verifier with no flag on (``mutants.rejection_sample``, vectorised torch) and
``specproof.optimized.compat:rejection_sample`` (validation on, its default), beside a verifier
that only returns the bonus token (the harness's own cost). Then the hunt's rate with calls of
2^18 requests (its size before calls were capped) and of the default cap, 1024, side by side:
the same rounds, in more calls.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.laws import exact_round_law
from specproof.audit.rounds import verifier_round
from specproof.audit.run import audit_problem
from specproof.audit.settings import DEFAULT_MAX_BATCH, CallLimits, ErrorRates, HuntSettings
from specproof.sections import replace_section
from specproof.subjects.mutants import rejection_sample

ROOT = Path(__file__).resolve().parents[2]
CHUNK = 1 << 16
"""The harness's rounds per chunk on the small-vocab case (``rounds.sample_rounds``)."""


def bonus_only(
    draft_token_ids: Any, num_draft_tokens: list[int], max_spec_len: int, *rest: Any
) -> torch.Tensor:
    """Not a verifier: rejects nothing, emits only the bonus token (times the harness alone)."""
    bonus = rest[3]
    out = torch.full((len(num_draft_tokens), max_spec_len + 1), -1, dtype=torch.int32)
    out[:, 0] = bonus.reshape(-1)
    return out


def measure(
    name: str, fn: Any, rounds: int, case: str, max_batch: int = DEFAULT_MAX_BATCH
) -> dict[str, Any]:
    problem = next(p for p in verifier_problems(0, 2048) if p.name == case)
    law = exact_round_law(problem)
    settings = AuditSettings.of(
        "vllm",
        rates=ErrorRates(alpha=1e-6, beta=1e-4, delta=0.05, tolerance=1e-4),
        limits=CallLimits(max_batch=max_batch),
    )
    start = time.perf_counter()
    rows = audit_problem(
        problem,
        verifier_round(fn, settings),
        rates=settings.rates,
        seed=settings.seed,
        limits=settings.limits,
        round_law=law,
        rounds=rounds,
    )
    seconds = time.perf_counter() - start
    return {
        "verifier": name,
        "case": case,
        "requests_per_call": min(max_batch, CHUNK),
        "rounds": rounds,
        "seconds": seconds,
        "rounds_per_second": rounds / seconds,
        "passed": all(r.passed for r in rows),
    }


def hunt_rates(
    verifiers: list[tuple[str, Any, int]], sizes: tuple[int, ...], repeats: int
) -> list[dict[str, Any]]:
    """Median seconds of one hunt case per (verifier, requests per call); the sizes are
    interleaved within each repeat so that load drifts hit them alike."""
    case = next(c for c in hunt_cases() if c.name == "zero-target-draft")
    seconds: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):
        for name, fn, rounds in verifiers:
            for size in sizes:
                start = time.perf_counter()
                hunt = HuntSettings(rounds)
                settings = AuditSettings.of("vllm", max_batch=size, hunt=hunt)
                row = hunt_case(fn, case, settings)
                seconds.setdefault((name, size), []).append(time.perf_counter() - start)
                if not row.passed:
                    raise RuntimeError(f"{name}: {row.detail}")
    out = []
    for name, _, rounds in verifiers:
        for size in sizes:
            median = statistics.median(seconds[(name, size)])
            out.append(
                {
                    "verifier": name,
                    "requests_per_call": size,
                    "rounds": rounds,
                    "repeats": repeats,
                    "median_seconds": median,
                    "rounds_per_second": rounds / median,
                }
            )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="audit harness speed")
    parser.add_argument("--rounds", type=int, default=10**6)
    parser.add_argument("--compat-rounds", type=int, default=2 * 10**5)
    parser.add_argument("--hunt-rounds", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from specproof.optimized.compat import rejection_sample as compat

    results = []
    for size in (CHUNK, DEFAULT_MAX_BATCH):  # the chunk's size in one call, then the cap
        results += [
            measure(
                "mutants.rejection_sample (torch, vectorised)",
                rejection_sample,
                args.rounds,
                "small-vocab",
                size,
            ),
            measure("bonus only (harness alone)", bonus_only, args.rounds, "small-vocab", size),
            measure(
                "optimized.compat.rejection_sample", compat, args.compat_rounds, "small-vocab", size
            ),
        ]
    hunted = hunt_rates(
        [
            ("mutants.rejection_sample (torch, vectorised)", rejection_sample, args.hunt_rounds),
            ("optimized.compat.rejection_sample", compat, args.hunt_rounds // 4),
        ],
        (1 << 18, DEFAULT_MAX_BATCH),
        args.repeats,
    )
    machine = (
        f"{platform.machine()} Linux, {os.cpu_count()} CPU cores, 1 torch thread, "
        f"torch {torch.__version__}"
    )
    lines = [
        "## Audit harness",
        "",
        f"`python -m specproof.runners.audit_bench` on {machine}: one audit case end to end "
        "(drafting, verifier, exact layout checks, completion, outcome counts, goodness of fit) "
        "on the small-vocab case (V = 4, gamma = 2, vLLM signature), in one run. The bonus-only "
        "row is not a verifier (it fails the audit); it times the harness alone. Each verifier "
        f"with calls of {CHUNK:,} requests (the harness's chunk, in one call before "
        f"`--max-batch`) and of {DEFAULT_MAX_BATCH} (the default cap). The machine is shared "
        "and its load varies.",
        "",
        "| verifier | requests per call | rounds | seconds | rounds/s |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['verifier']} | {r['requests_per_call']:,} | {r['rounds']:,} "
            f"| {r['seconds']:.1f} | {r['rounds_per_second']:,.0f} |"
        )
    lines += [
        "",
        f"The hunt (`zero-target-draft`, vLLM signature, gamma = 4) with calls of 2^18 requests "
        f"and of {DEFAULT_MAX_BATCH} (`--max-batch`, the default), interleaved in the same "
        f"run; median of {args.repeats} repeats. The machine is shared and its load varies.",
        "",
        "| verifier | requests per call | rounds | median seconds | rounds/s | vs 2^18 |",
        "|---|---|---|---|---|---|",
    ]
    for r in hunted:
        base = next(
            b
            for b in hunted
            if b["verifier"] == r["verifier"] and b["requests_per_call"] == 1 << 18
        )
        lines.append(
            f"| {r['verifier']} | {r['requests_per_call']:,} | {r['rounds']:,} "
            f"| {r['median_seconds']:.2f} | {r['rounds_per_second']:,.0f} "
            f"| {r['rounds_per_second'] / base['rounds_per_second']:.2f} |"
        )
    body = "\n".join(lines)
    print(body)
    replace_section(ROOT / "benchmarks" / "audit_harness.md", "audit-harness", body)
    (ROOT / "benchmarks" / "audit_harness.json").write_text(
        json.dumps({"machine": machine, "results": results, "hunt": hunted}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
