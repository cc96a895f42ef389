"""Algorithm 1 against the best fixed gamma and the static thresholds at batch 4, 8 and 16,
with EAGLE-3 beside them, under two clocks applied to the same recorded rounds.

    python -m specproof.runners.e2e.experiments.scheduler_clocks [--batches 4 8 16] [--chunks N]
        [--sweep-chunks N] [--knees 16 64] [--margin 0.05] [--out FILE]
        [--rounds-out FILE]

Method. Decoding records, per round, each request's verified length l_r and accepted count;
the round's verify width B = sum(l_r + 1) and its draft width (DSpark: one block pass of
gamma = 7; EAGLE-3: gamma passes) follow. Which tokens are accepted does not depend on how
long a round took, so a schedule that ignores the clock (fixed gamma, the two thresholds,
EAGLE-3 at fixed gamma) is decoded once and its rounds are charged under each clock
(:mod:`specproof.e2e.evaluation.clocks`). Algorithm 1 reads the clock (it maximises tau * SPS(B)),
so it is decoded once per clock, given that clock's SPS, and charged under that clock only.

Clocks, both models applied to the recorded rounds (no wall time is stored): (a) the CPU line
fitted to measured rounds: the line of a DSpark round's time in B from an SPS profile measured
at the start of each batch size (which Algorithm 1 is given), EAGLE-3's extra drafting time per
gamma and the target's step time measured on the sweep decodes; (b) a memory-bound model per
``--knees`` value (:class:`specproof.e2e.evaluation.clocks.RooflineClock`; drafter passes read the
drafters' share of the target's parameters).

Per batch size: a sweep on calibration chunks picks, per clock, the best fixed gamma of DSpark
and of EAGLE-3 (pooled tokens per clock-second, whole decode and full-batch rounds alike);
then held-out chunks of every domain are decoded by the chosen decoders, both thresholds,
each Algorithm 1 and the target, in a fresh random order per chunk. Tests over the pooled
chunks, exact one-sided sign tests at alpha 0.05 with power against a 70 % share: on the CPU
clock, Algorithm 1 non-inferior to the best fixed gamma (rejects "Algorithm 1 below
(1 - margin) of it"); on each memory-bound clock, Algorithm 1 faster than it.

Every per-chunk ratio is stored (``by_chunk``); each ratio also carries the 95 % t-interval of
the mean per-chunk log ratio (exponentiated) and the one-sided t-test "Algorithm 1 faster".
Holm's correction runs over each named family of tests of the run, all batch sizes together
(``holm`` in the JSON). The sweep's calibration prompts (even-indexed held-out documents) and
the measured evaluation prompts (odd-indexed) are disjoint documents; both sets' offsets are
stored per batch size (``prompt_ids``).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import (
    OneLineParser,
    integer_at_least,
    loaded,
    number_in,
    output_path_problem,
)
from specproof.e2e.data.corpora import load_corpora, prompts_from, split_prompts
from specproof.e2e.decoding.rounds import DecodeResult
from specproof.e2e.decoding.schedules import PerPositionThreshold
from specproof.e2e.evaluation.calibration import fit_sts
from specproof.e2e.evaluation.chunk_intervals import RATIO_INTERVAL, holm_family, log_ratio_summary
from specproof.e2e.evaluation.clocks import (
    Clock,
    DrafterKind,
    MeasuredClock,
    Retimed,
    RooflineClock,
    line_from_profile,
    retime,
    round_cost,
    verified_tokens,
)
from specproof.e2e.evaluation.comparisons import (
    Setting,
    speculative_decoder,
    target_decoder,
    with_gamma,
)
from specproof.e2e.evaluation.measurements import (
    batched,
    confidence_records,
    mean_accepted_length,
    profile_sps,
)
from specproof.e2e.evaluation.paired_runs import Decoder, interleaved
from specproof.e2e.evaluation.sts import decode_blocks
from specproof.e2e.models.loading import SHIPPED_DIR, Models, load_models
from specproof.e2e.models.target import parameter_count
from specproof.e2e.plans import FAST_VERIFY, SHIPPED
from specproof.reference.schedulers import Algorithm1, FixedGamma, StaticThreshold
from specproof.runners.e2e.report.headline_and_clocks import ratio_cell, write_sections
from specproof.runners.e2e.report.table import table
from specproof.stats.sizing import (
    finite_interval,
    median,
    sign_test_faster,
    sign_test_non_inferior,
    sign_test_power,
)

PROG = "python -m specproof.runners.e2e.experiments.scheduler_clocks"
ALPHA = 0.05
WIN_SHARE = 0.7
GAMMAS = tuple(range(1, 8))
THRESHOLD = Fraction(1, 2)
TARGET = "target only"
CPU = "cpu"
MEASURES = ("whole", "full_batch")
FAMILIES = {
    "faster_sign_tests": "Algorithm 1 faster than its reference, exact one-sided sign test, every "
    "batch size x clock x measure x reference of this run",
    "faster_t_tests": "Algorithm 1 faster than its reference, one-sided t-test of the mean "
    "per-chunk log speed ratio, every batch size x clock x measure x reference of this run",
    "non_inferior_sign_tests": "Algorithm 1 non-inferior to its reference (CPU clock), exact "
    "one-sided sign test, every batch size x measure x reference of this run",
}
DRAFTING_PHASES = (0, 1, 5)
"""draft, confidences, commit (the drafter's update): the phases that differ by drafter."""


def dspark_fixed(gamma: int) -> str:
    return f"DSpark, fixed gamma={gamma}"


def eagle_fixed(gamma: int) -> str:
    return f"EAGLE-3, fixed gamma={gamma}"


def algorithm1(clock: str) -> str:
    return f"DSpark + Algorithm 1 ({clock} SPS)"


def knee_name(knee: float) -> str:
    return f"knee {knee:g}"


def drafter_of(label: str) -> tuple[DrafterKind | None, int]:
    """(drafter, gamma drafted per round) of a decoder label."""
    if label == TARGET:
        return None, 0
    if label.startswith("EAGLE-3"):
        return "eagle", int(label.rsplit("=", 1)[1])
    return "dspark", SHIPPED.dspark.gamma


def drafting_seconds(results: Sequence[DecodeResult], requests: int) -> float:
    """Median over full-batch rounds of the drafter-dependent phases."""
    times = [
        sum(log.phases[i] for i in DRAFTING_PHASES)
        for res in results
        for log in res.rounds
        if len(log.scheduled) == requests
    ]
    return float(np.median(times))


def measured_clock(
    profile_sizes: Sequence[int],
    profile_fit: Sequence[float],
    sweep: dict[str, list[DecodeResult]],
    requests: int,
    new_tokens: int,
) -> MeasuredClock:
    intercept, slope = line_from_profile(profile_sizes, profile_fit)
    dspark = [r for g in GAMMAS for r in sweep[dspark_fixed(g)]]
    base = drafting_seconds(dspark, requests)
    extra = {g: drafting_seconds(sweep[eagle_fixed(g)], requests) - base for g in GAMMAS}
    step = float(np.median([r.seconds / new_tokens for r in sweep[TARGET]]))
    return MeasuredClock(requests, intercept, slope, step, extra)


def charged(
    runs: dict[str, list[DecodeResult]], clock: Clock, requests: int, new_tokens: int
) -> dict[str, list[Retimed]]:
    out = {}
    for label, results in runs.items():
        drafter, gamma = drafter_of(label)
        cost = round_cost(clock, drafter, gamma)
        out[label] = [retime(r, cost, requests, new_tokens) for r in results]
    return out


def pooled_rate(retimed: Sequence[Retimed], measure: str) -> float:
    if measure == "whole":
        return sum(r.tokens for r in retimed) / sum(r.seconds for r in retimed)
    return sum(r.full_tokens for r in retimed) / sum(r.full_seconds for r in retimed)


def chunk_rate(retimed: Retimed, measure: str) -> float:
    return retimed.rate if measure == "whole" else retimed.full_rate


def best_gamma(
    retimed: dict[str, list[Retimed]], label: Any, measure: str
) -> tuple[int, dict[str, float]]:
    rates = {str(g): pooled_rate(retimed[label(g)], measure) for g in GAMMAS}
    return int(max(rates, key=lambda g: rates[g])), rates


def ratios(retimed: dict[str, list[Retimed]], top: str, bottom: str, measure: str) -> list[float]:
    return [
        chunk_rate(a, measure) / chunk_rate(b, measure)
        for a, b in zip(retimed[top], retimed[bottom], strict=True)
    ]


def ratio_summary(values: Sequence[float]) -> dict[str, Any]:
    return {
        "median": median(values),
        "interval_95": finite_interval(values),
        "by_chunk": list(values),
    }


def record_rounds(runs: dict[str, list[DecodeResult]]) -> dict[str, Any]:
    """Per decode, per round: verified lengths, accepted counts, verify width B; the draft
    width (tokens drafted per request per round) per decoder."""
    out = {}
    for label, results in runs.items():
        drafter, gamma = drafter_of(label)
        out[label] = {
            "draft_width": gamma,
            "drafter": drafter,
            "decodes": [
                [
                    {"l": log.scheduled, "a": log.accepted, "B": verified_tokens(log.scheduled)}
                    for log in result.rounds
                ]
                for result in results
            ],
        }
    return out


def sweep_decoders(
    models: Models, setting: Setting, sts: Sequence[float], seed: int
) -> dict[str, Decoder]:
    decoders: dict[str, Decoder] = {TARGET: target_decoder(models.target, setting, 1.0, seed + 1)}
    for g in GAMMAS:
        decoders[dspark_fixed(g)] = speculative_decoder(
            models.target, models.dspark, setting, 1.0, FixedGamma(g), seed, None, sts
        )
        decoders[eagle_fixed(g)] = speculative_decoder(
            models.target, with_gamma(models.eagle, g), setting, 1.0, FixedGamma(), seed
        )
    return decoders


def one_batch(
    models: Models,
    requests: int,
    calibration: dict[str, list[list[int]]],
    evaluation: dict[str, list[list[int]]],
    sts: Sequence[float],
    knees: Sequence[float],
    margin: float,
    new_tokens: int,
    profile_seconds: float,
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    setting = Setting(new_tokens, FAST_VERIFY)
    load_start = [round(x, 2) for x in os.getloadavg()]
    profile_chunks = [c for prompts in calibration.values() for c in batched(prompts, requests)]
    # B = R, 2R, .., 8R: the clock is the fitted line, which needs few sizes.
    profile = profile_sps(
        models.target,
        models.dspark,
        [c for c in profile_chunks if len(c) == requests],
        SHIPPED.sps_new_tokens,
        seed,
        sweeps=SHIPPED.sps_sweeps,
        max_seconds=profile_seconds,
        verify=FAST_VERIFY,
        stride=requests,
    )
    print(
        f"B={requests}: SPS profile at {profile.batch_sizes} in {profile.seconds:.0f}s "
        f"({profile.sweeps} sweeps)"
    )
    sweep_chunks = [c for prompts in calibration.values() for c in batched(prompts, requests)]
    sweep_chunks = [c for c in sweep_chunks if len(c) == requests]
    print(f"B={requests}: sweep over gamma 1..7 on {len(sweep_chunks)} calibration chunks")
    sweep = interleaved(sweep_decoders(models, setting, sts, seed), sweep_chunks, seed + 1)
    cpu = measured_clock(profile.batch_sizes, profile.step_fit, sweep, requests, new_tokens)
    target_params = parameter_count(models.target)
    clocks: dict[str, Clock] = {CPU: cpu}
    for knee in knees:
        clocks[knee_name(knee)] = RooflineClock(
            requests=requests,
            knee=knee,
            dspark_gamma=models.dspark.gamma,
            dspark_share=parameter_count(models.dspark) / target_params,
            eagle_share=parameter_count(models.eagle) / target_params,
        )

    chosen: dict[str, dict[str, Any]] = {}
    for name, clock in clocks.items():
        retimed = charged(sweep, clock, requests, new_tokens)
        chosen[name] = {}
        for measure in MEASURES:
            d_best, d_rates = best_gamma(retimed, dspark_fixed, measure)
            e_best, e_rates = best_gamma(retimed, eagle_fixed, measure)
            chosen[name][measure] = {
                "dspark_gamma": d_best,
                "eagle_gamma": e_best,
                "dspark_rates": d_rates,
                "eagle_rates": e_rates,
            }
        print(
            f"B={requests} {name}: best fixed gamma (whole / full batch) DSpark "
            f"{chosen[name]['whole']['dspark_gamma']} / "
            f"{chosen[name]['full_batch']['dspark_gamma']}"
            f", EAGLE-3 {chosen[name]['whole']['eagle_gamma']} / "
            f"{chosen[name]['full_batch']['eagle_gamma']}"
        )

    decoders: dict[str, Decoder] = {
        TARGET: target_decoder(models.target, setting, 1.0, seed + 501),
        f"static threshold a>={THRESHOLD}": speculative_decoder(
            models.target, models.dspark, setting, 1.0, StaticThreshold(THRESHOLD), seed, None, sts
        ),
        f"per-position threshold c>={THRESHOLD}": speculative_decoder(
            models.target,
            models.dspark,
            setting,
            1.0,
            PerPositionThreshold(THRESHOLD),
            seed,
            None,
            sts,
        ),
    }
    for name, clock in clocks.items():
        decoders[algorithm1(name)] = speculative_decoder(
            models.target, models.dspark, setting, 1.0, Algorithm1(), seed, clock.sps, sts
        )
    for picks in chosen.values():
        for pick in picks.values():
            g, e = pick["dspark_gamma"], pick["eagle_gamma"]
            decoders[dspark_fixed(g)] = speculative_decoder(
                models.target, models.dspark, setting, 1.0, FixedGamma(g), seed, None, sts
            )
            decoders[eagle_fixed(e)] = speculative_decoder(
                models.target, with_gamma(models.eagle, e), setting, 1.0, FixedGamma(), seed
            )
    chunks = [c for prompts in evaluation.values() for c in batched(prompts, requests)]
    chunks = [c for c in chunks if len(c) == requests]
    print(f"B={requests}: {len(decoders)} decoders on {len(chunks)} held-out chunks")
    started = time.perf_counter()
    runs = interleaved(decoders, chunks, seed + 2)
    print(f"B={requests}: decoded in {time.perf_counter() - started:.0f}s")

    by_clock: dict[str, Any] = {}
    for name, clock in clocks.items():
        valid = {
            label: results
            for label, results in runs.items()
            if not label.startswith("DSpark + Algorithm 1") or label == algorithm1(name)
        }
        retimed = charged(valid, clock, requests, new_tokens)
        rows = {
            label: {
                "tau": mean_accepted_length(valid[label]) if label != TARGET else 1.0,
                "rate_whole": pooled_rate(values, "whole"),
                "rate_full_batch": pooled_rate(values, "full_batch"),
                "over_target_whole": ratio_summary(ratios(retimed, label, TARGET, "whole")),
            }
            for label, values in retimed.items()
        }
        tests: dict[str, Any] = {}
        candidate = algorithm1(name)
        for measure in MEASURES:
            pick = chosen[name][measure]
            references = {
                "best_fixed": dspark_fixed(pick["dspark_gamma"]),
                "static_threshold": f"static threshold a>={THRESHOLD}",
                "per_position_threshold": f"per-position threshold c>={THRESHOLD}",
                "best_eagle": eagle_fixed(pick["eagle_gamma"]),
            }
            tests[measure] = {}
            for role, reference in references.items():
                values = ratios(retimed, candidate, reference, measure)
                entry: dict[str, Any] = {
                    "reference": reference,
                    "ratio": ratio_summary(values),
                    "faster": sign_test_faster(values, ALPHA, WIN_SHARE).as_dict(),
                    "faster_t": log_ratio_summary(values, "greater") if len(values) >= 2 else None,
                }
                if name == CPU:
                    entry["non_inferior"] = sign_test_non_inferior(
                        values, margin, ALPHA, WIN_SHARE
                    ).as_dict()
                tests[measure][role] = entry
        by_clock[name] = {
            "clock": clock.describe(),
            "chosen": chosen[name],
            "rows": rows,
            "tests": tests,
        }
        whole = tests["whole"]["best_fixed"]
        print(
            f"B={requests} {name}: Algorithm 1 / {whole['reference']} median "
            f"{ratio_cell(whole['ratio'], 3)}, faster on "
            f"{whole['faster']['slower']}/{whole['faster']['n']} chunks, "
            f"p(faster) = {whole['faster']['p_value']:.3g}"
            + (
                f", p(non-inferior, margin {margin:g}) = {whole['non_inferior']['p_value']:.3g}"
                if name == CPU
                else ""
            )
        )
    result = {
        "requests": requests,
        "chunks": len(chunks),
        "sweep_chunks": len(sweep_chunks),
        "power_at_chunks": sign_test_power(len(chunks), ALPHA, WIN_SHARE),
        "sps_profile": asdict(profile),
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "clocks": by_clock,
    }
    rounds = {"sweep": record_rounds(sweep), "evaluation": record_rounds(runs)}
    return result, rounds


def holm_families(batches: dict[str, Any]) -> dict[str, Any]:
    """Holm's correction over each of :data:`FAMILIES`, across every batch size run so far
    (the t-test family only when every test has at least two chunks)."""
    p_values: dict[str, dict[str, float]] = {name: {} for name in FAMILIES}
    complete = True
    for batch, entry in batches.items():
        for clock, by_clock in entry["clocks"].items():
            for measure, tests in by_clock["tests"].items():
                for role, test in tests.items():
                    name = f"B={batch} {clock} {measure} {role}"
                    p_values["faster_sign_tests"][name] = test["faster"]["p_value"]
                    if test.get("faster_t") is None:
                        complete = False
                    else:
                        p_values["faster_t_tests"][name] = test["faster_t"]["p_value"]
                    if "non_inferior" in test:
                        p_values["non_inferior_sign_tests"][name] = test["non_inferior"]["p_value"]
    return {
        name: holm_family(values, FAMILIES[name])
        for name, values in p_values.items()
        if values and (complete or name != "faster_t_tests")
    }


def fit_sts_t1(
    models: Models, prompts: dict[str, list[list[int]]], new_tokens: int, seed: int
) -> list[float]:
    runs = decode_blocks(models, Setting(new_tokens, FAST_VERIFY), 1.0, prompts, 4, seed)
    logits, accepted = confidence_records(runs)
    fitted = fit_sts(logits, accepted)
    print(f"STS temperatures at T=1 ({len(accepted)} blocks): {[round(t, 3) for t in fitted]}")
    return fitted


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for batch, entry in result["batches"].items():
        for name, clock in entry["clocks"].items():
            for measure, tests in clock["tests"].items():
                for role, test in tests.items():
                    reference = test["reference"]
                    gamma = reference.rsplit("=", 1)[1] if "gamma=" in reference else "-"
                    non_inferior = test.get("non_inferior")
                    rows.append(
                        [
                            batch,
                            name,
                            measure,
                            role.replace("_", " "),
                            gamma,
                            ratio_cell(test["ratio"], 3),
                            f"{test['faster']['slower']}/{test['faster']['n']}",
                            f"{test['faster']['p_value']:.3g}",
                            f"{non_inferior['p_value']:.3g}" if non_inferior else "-",
                        ]
                    )
    header = [
        "B",
        "clock",
        "measure",
        "Algorithm 1 against",
        "gamma",
        "median ratio [95 %]",
        "chunks Algorithm 1 faster",
        "p (faster)",
        "p (non-inferior)",
    ]
    return "\n".join(table(header, rows)) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR)
    parser.add_argument(
        "--batches", type=integer_at_least("--batches", 2), nargs="+", default=[4, 8, 16]
    )
    parser.add_argument(
        "--chunks", type=integer_at_least("--chunks", 1), default=8, help="per domain"
    )
    parser.add_argument(
        "--sweep-chunks", type=integer_at_least("--sweep-chunks", 1), default=1, help="per domain"
    )
    parser.add_argument(
        "--knees", type=number_in("--knees", 0.0, 1e6), nargs="+", default=[16.0, 64.0]
    )
    parser.add_argument("--margin", type=number_in("--margin", 0.0, 0.5), default=0.05)
    parser.add_argument("--new-tokens", type=integer_at_least("--new-tokens", 1), default=64)
    parser.add_argument(
        "--profile-seconds", type=number_in("--profile-seconds", 0.0, 1e4), default=20.0
    )
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/scheduler_clocks.json"))
    parser.add_argument(
        "--rounds-out", type=Path, default=Path("benchmarks/scheduler_clocks_rounds.json.gz")
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=Path("benchmarks/e2e_headline_and_clocks.md"),
        help="Markdown file whose section of this table is rewritten",
    )
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--rounds-out", args.rounds_out)):
        if problem := output_path_problem(option, str(path)):
            parser.error(problem)
    if problem := output_path_problem("--markdown", str(args.markdown)):
        parser.error(problem)
    torch.set_num_threads(args.threads)
    models = loaded(PROG, "--weights", lambda: load_models(args.weights))
    started = time.perf_counter()
    corpora = load_corpora()
    length = SHIPPED.prompt_length
    most = max(args.batches)
    calibration, calibration_ids = split_prompts(
        corpora, "calibration", most * args.sweep_chunks, length, args.seed + 3
    )
    evaluation, evaluation_ids = split_prompts(
        corpora, "evaluation", most * args.chunks, length, args.seed + 4
    )
    sts_prompts = {
        k: prompts_from(c.stream("calibration"), 16, length, args.seed + 5)
        for k, c in corpora.items()
    }
    sts = fit_sts_t1(models, sts_prompts, args.new_tokens, args.seed + 100)
    batches: dict[str, Any] = {}
    rounds: dict[str, Any] = {}
    result_all: dict[str, Any] = {
        "command": PROG,
        "argv": list(argv) if argv is not None else sys.argv[1:],
        "weights": models.source,
        "machine": {
            "platform": platform.platform(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "shared": "yes: 2 cores shared with other people's jobs; load averages recorded",
            "device": "CPU only (no GPU); the memory-bound clock is a model",
        },
        "temperature": 1.0,
        "new_tokens": args.new_tokens,
        "alpha": ALPHA,
        "win_share": WIN_SHARE,
        "margin": args.margin,
        "threshold": str(THRESHOLD),
        "sts_temperatures": sts,
        "interval": RATIO_INTERVAL + "; medians with order-statistic intervals beside it",
        "batches": batches,
        "rounds_file": str(args.rounds_out),
    }
    for batch in args.batches:
        result, recorded = one_batch(
            models,
            batch,
            {k: p[: batch * args.sweep_chunks] for k, p in calibration.items()},
            {k: p[: batch * args.chunks] for k, p in evaluation.items()},
            sts,
            args.knees,
            args.margin,
            args.new_tokens,
            args.profile_seconds,
            args.seed + 10 * batch,
        )
        result["prompt_ids"] = {
            "sweep": {
                k: {"split": "calibration", "starts": starts[: batch * args.sweep_chunks]}
                for k, starts in calibration_ids.items()
            },
            "measured": {
                k: {"split": "evaluation", "starts": starts[: batch * args.chunks]}
                for k, starts in evaluation_ids.items()
            },
            "disjoint": "calibration = even-indexed held-out documents, evaluation = odd-indexed",
        }
        batches[str(batch)] = result
        rounds[str(batch)] = recorded
        result_all["holm"] = holm_families(batches)
        # Written after every batch size, so a run cut short keeps what it measured.
        result_all["seconds"] = time.perf_counter() - started
        args.out.write_text(json.dumps(result_all, indent=1) + "\n")
        with gzip.open(args.rounds_out, "wt") as handle:
            json.dump(rounds, handle, separators=(",", ":"))
        print(f"B={batch}: written to {args.out} and {args.rounds_out}")
    write_sections(None, args.out, args.markdown)
    print(markdown(result_all))
    print(f"done in {result_all['seconds']:.0f}s; raw numbers in {args.out}")
    return result_all


if __name__ == "__main__":
    main()
