"""``nox -s audit-bench`` (``python -m specproof.audit.bench``): speed of the audit harness,
written to BENCHMARKS.md (section "Audit harness") and benchmarks/audit_harness.json.

One measurement is one audit case end to end: drafting, the verifier call, the exact layout
checks, completion from the target, counting outcomes and the goodness-of-fit rows. The
verifiers: the catalogue's correct vectorised torch verifier (``mutants.rejection_sample``) and
``specproof.optimized.compat:rejection_sample`` (validation on, its default), beside a verifier
that only returns the bonus token (the harness's own cost).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import torch

from specproof.sections import replace_section

from .cases import verifier_problems
from .laws import exact_round_law
from .mutants import rejection_sample
from .rounds import verifier_round
from .run import audit_problem

ROOT = Path(__file__).resolve().parents[2]


def bonus_only(
    draft_token_ids: Any, num_draft_tokens: list[int], max_spec_len: int, *rest: Any
) -> torch.Tensor:
    """Not a verifier: rejects nothing, emits only the bonus token (times the harness alone)."""
    bonus = rest[3]
    out = torch.full((len(num_draft_tokens), max_spec_len + 1), -1, dtype=torch.int32)
    out[:, 0] = bonus.reshape(-1)
    return out


def measure(name: str, fn: Any, rounds: int, case: str) -> dict[str, Any]:
    problem = next(p for p in verifier_problems(0, 2048) if p.name == case)
    law = exact_round_law(problem)
    start = time.perf_counter()
    rows = audit_problem(
        problem,
        verifier_round(fn, "vllm"),
        alpha=1e-6,
        beta=1e-4,
        delta=0.05,
        tolerance=1e-4,
        seed=0,
        round_law=law,
        rounds=rounds,
    )
    seconds = time.perf_counter() - start
    return {
        "verifier": name,
        "case": case,
        "rounds": rounds,
        "seconds": seconds,
        "rounds_per_second": rounds / seconds,
        "passed": all(r.passed for r in rows),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="audit harness speed")
    parser.add_argument("--rounds", type=int, default=10**6)
    parser.add_argument("--compat-rounds", type=int, default=2 * 10**5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = [
        measure(
            "mutants.rejection_sample (torch, vectorised)",
            rejection_sample,
            args.rounds,
            "small-vocab",
        ),
        measure("bonus only (harness alone)", bonus_only, args.rounds, "small-vocab"),
    ]
    from specproof.optimized.compat import rejection_sample as compat

    results.append(
        measure("optimized.compat.rejection_sample", compat, args.compat_rounds, "small-vocab")
    )
    machine = (
        f"{platform.machine()} Linux, {os.cpu_count()} CPU cores, 1 torch thread, "
        f"torch {torch.__version__}"
    )
    lines = [
        "## Audit harness",
        "",
        f"`python -m specproof.audit.bench` on {machine}: one audit case end to end (drafting, "
        "verifier, exact layout checks, completion, outcome counts, goodness of fit) on the "
        "small-vocab case (V = 4, gamma = 2, vLLM signature), in one run. The bonus-only row "
        "is not a verifier (it fails the audit); it times the harness alone.",
        "",
        "| verifier | rounds | seconds | rounds/s |",
        "|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['verifier']} | {r['rounds']:,} | {r['seconds']:.1f} "
            f"| {r['rounds_per_second']:,.0f} |"
        )
    body = "\n".join(lines)
    print(body)
    replace_section(ROOT / "BENCHMARKS.md", "audit-harness", body)
    (ROOT / "benchmarks" / "audit_harness.json").write_text(
        json.dumps({"machine": machine, "results": results}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
