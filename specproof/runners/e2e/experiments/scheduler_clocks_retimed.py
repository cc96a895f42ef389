"""Algorithm 1 against the best fixed gamma ON THE MEASURED CHUNKS, by re-timing the recorded
rounds of committed ``experiments.scheduler_clocks`` runs (no decoding; seconds).

    python -m specproof.runners.e2e.experiments.scheduler_clocks_retimed [--runs FILE ...]
        [--wall FILE] [--out FILE] [--markdown FILE]

Per run, batch size, clock and measure (whole decode, full-batch rounds): every DSpark
fixed-gamma decode recorded on the measured (evaluation) chunks is charged under the clock the
run stored, and the gamma with the most tokens per clock-second pooled over those chunks is the
hindsight best fixed gamma: an oracle that has seen the chunks it is judged on, so a reference
and not a schedule, and one that favours the reference. Algorithm 1's per-chunk ratio to it is
reported beside its ratio to the fixed gamma the run chose on its 3 pilot (sweep) chunks.

Only the gammas some clock's sweep chose were decoded on the measured chunks; the others are
named as missing. Where Algorithm 1 verified the same length g in every round of every chunk,
its decode is a fixed-gamma-g decode (same drafter and seed; checked equal to the recorded
fixed-g decode where one exists) and stands in for g when g was not decoded separately.

The clocks, named as in the tables: "wall clock (measured)" (the e2e run's paired wall-clock
ratios, ``--wall``; the scheduler-clock runs did not store wall time), "CPU line fitted to
measured rounds (modelled)" and "memory-bound model, knee K (modelled)".
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specproof.commands.command_rules import OneLineParser, json_object, output_path_problem
from specproof.e2e.evaluation.chunk_intervals import RATIO_INTERVAL, holm_family, log_ratio_summary
from specproof.e2e.evaluation.clocks import Retimed, line_from_profile, plain_clock_name, round_cost
from specproof.e2e.evaluation.recorded_rounds import (
    MEASURES,
    chunk_rate,
    clock_from_description,
    hindsight_best_gamma,
    retime_recorded,
    uniform_gamma,
    verify_widths,
)
from specproof.runners.e2e.report.retimed_clocks import write_section
from specproof.stats.sizing import (
    finite_interval,
    median,
    sign_test_faster,
    sign_test_non_inferior,
)

PROG = "python -m specproof.runners.e2e.experiments.scheduler_clocks_retimed"
RUNS = (Path("benchmarks/scheduler_clocks.json"), Path("benchmarks/scheduler_clocks_12chunks.json"))
WALL = Path("benchmarks/e2e.json")
OUT = Path("benchmarks/scheduler_clocks_retimed.json")
ALPHA = 0.05
WIN_SHARE = 0.7
GAMMAS = tuple(range(1, 8))
FAMILY = (
    "Algorithm 1 faster than the hindsight best fixed gamma, exact one-sided sign test, every "
    "batch size x modelled clock x measure of this run (the reference is chosen on the same "
    "chunks, which tends to favour the reference)"
)
WALL_MEASURES = {"whole": "whole_decode", "full_batch": "full_batch"}


def dspark_fixed(gamma: int) -> str:
    return f"DSpark, fixed gamma={gamma}"


def algorithm1(clock: str) -> str:
    return f"DSpark + Algorithm 1 ({clock} SPS)"


def per_chunk_ratios(
    candidate: Sequence[Retimed], reference: Sequence[Retimed], measure: str
) -> list[float]:
    """Per chunk, the candidate's rate over the reference's (the same chunks, in order)."""
    return [
        chunk_rate(a, measure) / chunk_rate(b, measure)
        for a, b in zip(candidate, reference, strict=True)
    ]


def ratio_entry(values: Sequence[float], margin: float | None = None) -> dict[str, Any]:
    """Median with its order-statistic interval, the sign test "Algorithm 1 faster", the
    t-interval of the mean log ratio, and (``margin`` given) the sign test "not below
    1 - margin of the reference"."""
    entry = {
        "median": median(values),
        "interval_95": finite_interval(values),
        "by_chunk": list(values),
        "faster": sign_test_faster(values, ALPHA, WIN_SHARE).as_dict(),
        "faster_t": log_ratio_summary(values, "greater") if len(values) >= 2 else None,
    }
    if margin is not None:
        entry["non_inferior"] = sign_test_non_inferior(values, margin, ALPHA, WIN_SHARE).as_dict()
    return entry


def candidates(
    evaluation: Mapping[str, Any], clock: str
) -> tuple[dict[int, list[Any]], dict[int, str], dict[str, Any]]:
    """(decodes by gamma, where each came from, Algorithm 1's uniform-length check)."""
    by_gamma = {
        g: evaluation[dspark_fixed(g)]["decodes"] for g in GAMMAS if dspark_fixed(g) in evaluation
    }
    source = {g: "fixed-gamma decode" for g in by_gamma}
    own = evaluation[algorithm1(clock)]["decodes"]
    gamma = uniform_gamma(own)
    check: dict[str, Any] = {"uniform_gamma": gamma}
    if gamma is not None:
        if gamma in by_gamma:
            check["identical_to_fixed_decode"] = by_gamma[gamma] == own
        else:
            by_gamma[gamma] = own
            source[gamma] = (
                f"Algorithm 1's own decode (it verified {gamma} drafts in every round of every "
                "chunk, so it is a fixed-gamma decode)"
            )
    return by_gamma, source, check


def one_batch(
    entry: Mapping[str, Any], recorded: Mapping[str, Any], new_tokens: int, run_margin: float
) -> dict[str, Any]:
    requests = int(entry["requests"])
    evaluation = recorded["evaluation"]
    decoded = sorted(g for g in GAMMAS if dspark_fixed(g) in evaluation)
    out: dict[str, Any] = {
        "requests": requests,
        "chunks": int(entry["chunks"]),
        "fixed_gammas_decoded": decoded,
        "fixed_gammas_not_decoded": [g for g in GAMMAS if g not in decoded],
        "verify_widths": {
            label: verify_widths(evaluation[label]["decodes"], requests)
            for label in evaluation
            if label.startswith("DSpark")
        },
        "clocks": {},
    }
    for name, stored in entry["clocks"].items():
        clock = clock_from_description(stored["clock"])
        by_gamma, source, check = candidates(evaluation, name)
        cost = round_cost(clock, "dspark", 0)
        timed = {
            g: [retime_recorded(d, cost, requests, new_tokens) for d in decodes]
            for g, decodes in by_gamma.items()
        }
        own = [
            retime_recorded(d, cost, requests, new_tokens)
            for d in evaluation[algorithm1(name)]["decodes"]
        ]
        # The run tested non-inferiority on the CPU line only; so does this.
        margin = float(run_margin) if name == "cpu" else None
        measures: dict[str, Any] = {}
        for measure in MEASURES:
            best, rates = hindsight_best_gamma(timed, measure)
            pilot_gamma = stored["chosen"][measure]["dspark_gamma"]
            committed = stored["tests"][measure]["best_fixed"]["ratio"]["by_chunk"]

            pilot_values = per_chunk_ratios(own, timed[pilot_gamma], measure)
            measures[measure] = {
                "hindsight": {
                    "gamma": best,
                    "source": source[best],
                    "pooled_rate_by_gamma": {str(g): rates[g] for g in sorted(rates)},
                    "ratio": ratio_entry(per_chunk_ratios(own, timed[best], measure), margin),
                },
                "pilot": {
                    "gamma": pilot_gamma,
                    "ratio": ratio_entry(pilot_values, margin),
                    "largest_difference_from_committed_ratios": max(
                        abs(x - y) for x, y in zip(pilot_values, committed, strict=True)
                    ),
                },
            }
        out["clocks"][name] = {
            "label": plain_clock_name(name),
            "clock": stored["clock"],
            "algorithm1": check,
            "measures": measures,
        }
    return out


def wall_clock(e2e: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The e2e run's paired wall-clock ratios of Algorithm 1 to its pilot-chosen fixed gamma."""
    out: dict[str, Any] = {"source": source, "by_batch": {}}
    for batch, tests in e2e.get("scheduler_tests", {}).items():
        gamma = int(tests["best_fixed_gamma"])
        signs = tests["sign_tests"][f"fixed gamma={gamma} (best of the sweep)"]
        out["by_batch"][batch] = {
            "chunks": int(tests["chunks"]),
            "pilot_gamma": gamma,
            "measures": {
                measure: ratio_entry(signs[key]["ratios"]) for measure, key in WALL_MEASURES.items()
            },
            "round_against_line": round_against_line(e2e, batch, gamma),
        }
    return out


def round_against_line(e2e: Mapping[str, Any], batch: str, gamma: int) -> dict[str, Any]:
    """Per domain, for Algorithm 1 and the fixed gamma: the e2e run's measured mean round
    (wall clock) against its own SPS line at the decoder's mean verify width B (rounds =
    decode seconds / mean round; B = request-rounds * (mean verified drafts + 1) / rounds)."""
    profile = e2e["sps_profiles"][batch]
    intercept, slope = line_from_profile(profile["batch_sizes"], profile["step_fit"])
    out: dict[str, Any] = {"line_ms": [intercept * 1e3, slope * 1e3], "domains": {}}
    for domain, rows in e2e["scheduler_tests"][batch]["domains"].items():
        out["domains"][domain] = {}
        for label in ("Algorithm 1", f"fixed gamma={gamma} (best of the sweep)"):
            row = rows[label]
            round_ms = row["breakdown_ms"]["round"]
            rounds = row["generated_tokens"] / row["tokens_per_second"] * 1e3 / round_ms
            mean_b = row["request_rounds"] * (row["mean_verified_drafts"] + 1) / rounds
            line = (intercept + slope * mean_b) * 1e3
            out["domains"][domain][label] = {
                "round_ms": round_ms,
                "target_pass_ms": row["breakdown_ms"]["target pass"],
                "mean_B": mean_b,
                "line_ms": line,
                "measured_over_line": round_ms / line,
            }
    return out


def retime_run(run: Mapping[str, Any], rounds: Mapping[str, Any]) -> dict[str, Any]:
    batches = {
        batch: one_batch(entry, rounds[batch], int(run["new_tokens"]), float(run["margin"]))
        for batch, entry in run["batches"].items()
    }
    p_values = {
        f"B={batch} {clock} {measure} hindsight": by_measure["hindsight"]["ratio"]["faster"][
            "p_value"
        ]
        for batch, entry in batches.items()
        for clock, by_clock in entry["clocks"].items()
        for measure, by_measure in by_clock["measures"].items()
        if by_measure["hindsight"]["ratio"]["faster"]["n"] > 0
    }
    return {
        "argv": run.get("argv", []),
        "rounds_file": run["rounds_file"],
        "new_tokens": run["new_tokens"],
        "margin": run["margin"],
        "batches": batches,
        "holm": {"faster_than_hindsight_sign_tests": holm_family(p_values, FAMILY)},
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--runs", type=Path, nargs="+", default=list(RUNS))
    parser.add_argument("--wall", type=Path, default=WALL)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--markdown", type=Path, default=Path("benchmarks/e2e_scheduler_clocks_retimed.md")
    )
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--markdown", args.markdown)):
        if problem := output_path_problem(option, str(path)):
            parser.error(problem)
    started = time.perf_counter()
    runs: dict[str, Any] = {}
    for path in args.runs:
        run = json_object(
            parser, path, "--runs", ("batches", "rounds_file", "new_tokens", "margin")
        )
        rounds_path = Path(run["rounds_file"])
        if not rounds_path.exists():  # stored relative to the repository root
            rounds_path = path.parent / rounds_path.name
        try:
            with gzip.open(rounds_path, "rt") as handle:
                rounds = json.load(handle)
        except (OSError, json.JSONDecodeError) as error:
            parser.error(f"--runs: cannot read the rounds file {rounds_path} of {path}: {error}")
        if missing := sorted(set(run["batches"]) - set(rounds), key=int):
            parser.error(f"--runs: {rounds_path} has no rounds of batch sizes {missing}")
        runs[str(path)] = retime_run(run, rounds)
    e2e = json_object(parser, args.wall, "--wall", ("scheduler_tests",))
    result: dict[str, Any] = {
        "command": PROG,
        "argv": list(argv) if argv is not None else sys.argv[1:],
        "interval": RATIO_INTERVAL + "; medians with order-statistic intervals beside it",
        "alpha": ALPHA,
        "win_share": WIN_SHARE,
        "wall_clock": wall_clock(e2e, str(args.wall)),
        "runs": runs,
    }
    result["seconds"] = time.perf_counter() - started
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    write_section(result, args.out, args.markdown)
    print(f"re-timed {len(runs)} runs in {result['seconds']:.2f} s; written to {args.out}")
    return result


if __name__ == "__main__":
    main()
