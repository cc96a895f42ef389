"""The batch-1 speed headline: DSpark + Algorithm 1 against the target and against EAGLE-3 at
the best gamma of a sweep, paired over chunks, at temperatures 0 and 1, per domain.

    python -m specproof.runners.e2e.experiments.headline [--weights DIR] [--chunks N]
        [--pilot-chunks N]
                                                [--max-minutes M] [--out FILE]

Selection and measurement use different prompts, so the choice of EAGLE-3's gamma does not
select on the data it is judged on:

1. pilot (calibration prompts): per domain and temperature, EAGLE-3 at gamma = 1..7, the
   target and DSpark + Algorithm 1 decode each pilot chunk back to back in a fresh random
   order; EAGLE-3's gamma is the one with the highest median per-chunk speed ratio to the
   target. The pilot's decode times also estimate the main run's length.
2. main (held-out evaluation prompts): three decoders only (the target, DSpark + Algorithm 1,
   EAGLE-3 at the chosen gamma), paired the same way, over the number of chunks at which the
   one-sided exact sign test (alpha 0.05) has power 0.8 against a 70 % win rate
   (:func:`specproof.stats.sizing.chunks_for_power`), fewer if the estimate exceeds
   ``--max-minutes`` (the power at the count used is reported).

The pilot prompts come from the calibration split (even-indexed held-out documents), the main
ones from the evaluation split (odd-indexed): disjoint documents; both sets' offsets are stored
(``prompt_ids``). Every per-chunk ratio is stored; beside the medians' order-statistic
intervals, the 95 % t-interval of the mean per-chunk log ratio (exponentiated) and its t-test;
Holm's correction runs over each named family of tests of the run (``holm`` in the JSON).

Algorithm 1 uses SPS(B) profiled at one request at the start of the run and STS confidences
fitted at each temperature on calibration prompts. Speeds are tokens/s over the decode
(prefill excluded); every ratio is per chunk, on the same prompt.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

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
from specproof.e2e.evaluation.chunk_intervals import RATIO_INTERVAL, holm_family, log_ratio_summary
from specproof.e2e.evaluation.comparisons import (
    Setting,
    speculative_decoder,
    target_decoder,
    with_gamma,
)
from specproof.e2e.evaluation.measurements import batched, mean_accepted_length, profile_batches
from specproof.e2e.evaluation.paired_runs import Decoder, interleaved
from specproof.e2e.evaluation.sts import fit_sts_by_temperature
from specproof.e2e.models.loading import SHIPPED_DIR, Models, load_models
from specproof.e2e.plans import FAST_VERIFY, SHIPPED, TEMPERATURES
from specproof.reference.schedulers import Algorithm1, FixedGamma
from specproof.runners.e2e.report.headline_and_clocks import headline_rows, write_sections
from specproof.runners.e2e.report.table import interval, table
from specproof.stats.sizing import (
    chunks_for_power,
    finite_interval,
    median,
    sign_test_faster,
    sign_test_power,
    sign_test_slower,
)

PROG = "python -m specproof.runners.e2e.experiments.headline"
ALPHA = 0.05
WIN_SHARE = 0.7
POWER = 0.8
EAGLE_GAMMAS = tuple(range(1, 8))
SPEED_TARGETS = {1.0: 1.2, 0.0: 1.5}
"""The issue's targets for DSpark + Algorithm 1 against the target, by temperature."""
DSPARK = "DSpark + Algorithm 1"
TARGET = "target only"
STS_PROMPTS = 16
FAMILIES = {
    "sign_tests_against_eagle": "DSpark + Algorithm 1 vs EAGLE-3 at its pilot gamma, exact sign "
    "tests 'slower' and 'faster', every domain x temperature of this run",
    "t_tests_against_eagle": "DSpark + Algorithm 1 vs EAGLE-3 at its pilot gamma, two-sided t-test "
    "of the mean per-chunk log speed ratio, every domain x temperature of this run",
    "t_tests_faster_than_target": "DSpark + Algorithm 1 faster than the target, one-sided t-test "
    "of the mean per-chunk log speed ratio, every domain x temperature of this run",
}
"""Calibration prompts per domain for the STS fit (in chunks of 4)."""


def load_now() -> list[float]:
    """The 1, 5 and 15 minute load averages of this machine."""
    return [round(x, 2) for x in os.getloadavg()]


def timed(decoder: Decoder, walls: list[float]) -> Decoder:
    """``decoder``, appending each call's wall time (prefill included) to ``walls``."""

    def decode(chunk: list[list[int]], index: int) -> DecodeResult:
        start = time.perf_counter()
        result = decoder(chunk, index)
        walls.append(time.perf_counter() - start)
        return result

    return decode


def eagle_label(gamma: int) -> str:
    return f"EAGLE-3, gamma={gamma}"


def paired_ratios(
    runs: dict[str, list[DecodeResult]], numerator: str, denominator: str
) -> list[float]:
    """Per-chunk tokens/s of ``numerator`` over ``denominator`` (the same chunk each)."""
    top, bottom = runs[numerator], runs[denominator]
    if len(top) != len(bottom) or not top:
        raise ValueError("need one result per chunk for both decoders")
    for a, b in zip(top, bottom, strict=True):
        if len(a.tokens) != len(b.tokens):
            raise ValueError("paired results hold different numbers of requests")
    return [a.tokens_per_second / b.tokens_per_second for a, b in zip(top, bottom, strict=True)]


def ratio_entry(ratios: Sequence[float]) -> dict[str, Any]:
    return {
        "median": median(ratios),
        "interval_95": finite_interval(ratios),
        "by_chunk": list(ratios),
    }


def pick_gamma(runs: dict[str, list[DecodeResult]]) -> tuple[int, dict[str, float]]:
    """EAGLE-3's gamma with the highest median per-chunk ratio to the target."""
    medians = {
        str(g): median(paired_ratios(runs, eagle_label(g), TARGET))
        for g in EAGLE_GAMMAS
        if eagle_label(g) in runs
    }
    best = max(medians, key=lambda g: medians[g])
    return int(best), medians


def decoders_for(
    models: Models,
    setting: Setting,
    temperature: float,
    sts: Sequence[float] | None,
    sps: Callable[[int], float],
    gammas: Sequence[int],
    seed: int,
) -> dict[str, Decoder]:
    """The target, DSpark + Algorithm 1 (given ``sps`` and the STS temperatures ``sts``) and
    EAGLE-3 at each of ``gammas``, all at ``temperature``."""
    decoders: dict[str, Decoder] = {
        TARGET: target_decoder(models.target, setting, temperature, seed + 1),
        DSPARK: speculative_decoder(
            models.target, models.dspark, setting, temperature, Algorithm1(), seed, sps, sts
        ),
    }
    for gamma in gammas:
        decoders[eagle_label(gamma)] = speculative_decoder(
            models.target,
            with_gamma(models.eagle, gamma),
            setting,
            temperature,
            FixedGamma(),
            seed,
        )
    return decoders


def verdicts(temperature: float, runs: dict[str, list[DecodeResult]], gamma: int) -> dict[str, Any]:
    """Ratios with 95 % intervals, the sign tests and the issue's targets for one setting."""
    eagle = eagle_label(gamma)
    dspark_target = paired_ratios(runs, DSPARK, TARGET)
    eagle_target = paired_ratios(runs, eagle, TARGET)
    dspark_eagle = paired_ratios(runs, DSPARK, eagle)
    target_speed = SPEED_TARGETS[temperature]
    over_target = ratio_entry(dspark_target)
    over_eagle = ratio_entry(dspark_eagle)
    slower = sign_test_slower(dspark_eagle, ALPHA, WIN_SHARE)
    t_tests = (
        {
            "dspark_over_target": log_ratio_summary(dspark_target, "greater"),
            "dspark_over_eagle": log_ratio_summary(dspark_eagle, "two-sided"),
        }
        if len(dspark_target) >= 2
        else None  # a t-interval needs two chunks
    )
    return {
        "eagle_gamma": gamma,
        "t_tests": t_tests,
        "tau": {
            label: mean_accepted_length(results)
            for label, results in runs.items()
            if label != TARGET
        },
        "tokens_per_second_median": {
            label: median([r.tokens_per_second for r in results]) for label, results in runs.items()
        },
        "dspark_over_target": over_target,
        "eagle_over_target": ratio_entry(eagle_target),
        "dspark_over_eagle": over_eagle,
        "sign_tests": {
            "dspark_faster_than_target": sign_test_faster(
                dspark_target, ALPHA, WIN_SHARE
            ).as_dict(),
            "dspark_slower_than_eagle": slower.as_dict(),
            "dspark_faster_than_eagle": sign_test_faster(dspark_eagle, ALPHA, WIN_SHARE).as_dict(),
        },
        "targets": {
            "speed_over_target": target_speed,
            "speed_met_on_median": over_target["median"] >= target_speed,
            "speed_met_by_interval": (over_target["interval_95"][0] or 0.0) >= target_speed,
            "not_slower_than_eagle_on_median": over_eagle["median"] >= 1.0,
            "shown_slower_than_eagle": slower.rejected,
        },
    }


def holm_families(settings: dict[str, Any]) -> dict[str, Any]:
    """Holm's correction over each of :data:`FAMILIES` (the t-test families only when every
    setting has at least two chunks)."""
    families = {
        "sign_tests_against_eagle": holm_family(
            {
                f"{key} {test}": entry["sign_tests"][test]["p_value"]
                for key, entry in settings.items()
                for test in ("dspark_slower_than_eagle", "dspark_faster_than_eagle")
            },
            FAMILIES["sign_tests_against_eagle"],
        )
    }
    if all(entry["t_tests"] is not None for entry in settings.values()):
        for family, ratio in (
            ("t_tests_against_eagle", "dspark_over_eagle"),
            ("t_tests_faster_than_target", "dspark_over_target"),
        ):
            families[family] = holm_family(
                {key: entry["t_tests"][ratio]["p_value"] for key, entry in settings.items()},
                FAMILIES[family],
            )
    return families


def headline(
    models: Models,
    chunks: int | None,
    pilot_chunks: int,
    max_minutes: float,
    new_tokens: int,
    seed: int,
) -> dict[str, Any]:
    started = time.perf_counter()
    loads = {"start": load_now()}
    print(f"load averages at start {loads['start']}")
    planned = chunks if chunks is not None else chunks_for_power(ALPHA, WIN_SHARE, POWER)
    corpora = load_corpora()
    length = SHIPPED.prompt_length
    pilot_prompts, pilot_ids = split_prompts(
        corpora, "calibration", pilot_chunks, length, seed + 11
    )
    sts_prompts = {
        k: prompts_from(c.stream("calibration"), STS_PROMPTS, length, seed + 12)
        for k, c in corpora.items()
    }
    main_prompts, main_ids = split_prompts(corpora, "evaluation", planned, length, seed + 13)
    setting = Setting(new_tokens, FAST_VERIFY)
    sts_fits = fit_sts_by_temperature(models, setting, sts_prompts, 4, seed + 100)
    profile = profile_batches(
        models.target,
        models.dspark,
        sts_prompts,
        [1],
        SHIPPED.sps_new_tokens,
        SHIPPED.sps_sweeps,
        SHIPPED.sps_seconds,
        FAST_VERIFY,
        seed,
    )[1]
    sps = profile.curve()
    loads["after_profile"] = load_now()

    pilot: dict[str, Any] = {}
    per_chunk_seconds: dict[str, float] = {}
    for domain in corpora:
        for temperature in TEMPERATURES:
            key = f"{domain}/T={temperature:g}"
            sts = sts_fits[f"{temperature:g}"]["temperatures"]
            decoders = decoders_for(models, setting, temperature, sts, sps, EAGLE_GAMMAS, seed)
            walls: dict[str, list[float]] = {label: [] for label in decoders}
            runs = interleaved(
                {label: timed(d, walls[label]) for label, d in decoders.items()},
                batched(pilot_prompts[domain], 1),
                seed + 21,
            )
            gamma, medians = pick_gamma(runs)
            per_chunk_seconds[key] = sum(
                sum(walls[label]) / len(walls[label])
                for label in (TARGET, DSPARK, eagle_label(gamma))
            )
            pilot[key] = {
                "eagle_gamma": gamma,
                "eagle_median_ratio_to_target_by_gamma": medians,
                "dspark_median_ratio_to_target": median(paired_ratios(runs, DSPARK, TARGET)),
                "chunks": pilot_chunks,
                "seconds_per_main_chunk": per_chunk_seconds[key],
            }
            print(
                f"pilot {key}: EAGLE-3 median ratio to the target by gamma "
                + ", ".join(f"{g}: {m:.2f}" for g, m in medians.items())
                + f"; chosen gamma {gamma}"
            )
    loads["after_pilot"] = load_now()
    estimate = planned * sum(per_chunk_seconds.values())
    used = planned
    if estimate > max_minutes * 60:
        used = max(1, int(planned * max_minutes * 60 / estimate))
    print(
        f"main run: {planned} chunks per setting planned (power {POWER} at {WIN_SHARE:.0%}), "
        f"estimated {estimate / 60:.1f} min; using {used} "
        f"(power {sign_test_power(used, ALPHA, WIN_SHARE):.3f})"
    )

    settings: dict[str, Any] = {}
    for domain in corpora:
        for temperature in TEMPERATURES:
            key = f"{domain}/T={temperature:g}"
            gamma = pilot[key]["eagle_gamma"]
            sts = sts_fits[f"{temperature:g}"]["temperatures"]
            decoders = decoders_for(models, setting, temperature, sts, sps, [gamma], seed + 1000)
            chunk_list = batched(main_prompts[domain][:used], 1)
            before = load_now()
            setting_start = time.perf_counter()
            runs = interleaved(decoders, chunk_list, seed + 31)
            entry = verdicts(temperature, runs, gamma)
            entry["chunks"] = len(chunk_list)
            entry["load_before"] = before
            entry["load_after"] = load_now()
            entry["seconds"] = time.perf_counter() - setting_start
            settings[key] = entry
            tests = entry["sign_tests"]
            print(
                f"{key}: DSpark + Algorithm 1 x{entry['dspark_over_target']['median']:.2f} the "
                f"target {interval(entry['dspark_over_target'])}, "
                f"x{entry['dspark_over_eagle']['median']:.2f} EAGLE-3 (gamma {gamma}) "
                f"{interval(entry['dspark_over_eagle'])}; slower than EAGLE-3 on "
                f"{tests['dspark_slower_than_eagle']['slower']}/{len(chunk_list)} chunks, "
                f"p(slower) = {tests['dspark_slower_than_eagle']['p_value']:.3g}; "
                f"load {entry['load_after']}"
            )
    loads["end"] = load_now()
    return {
        "command": PROG,
        "interval": RATIO_INTERVAL + "; medians with order-statistic intervals beside it",
        "holm": holm_families(settings),
        "prompt_ids": {
            "pilot": {k: {"split": "calibration", "starts": s} for k, s in pilot_ids.items()},
            "main": {k: {"split": "evaluation", "starts": s[:used]} for k, s in main_ids.items()},
            "disjoint": "calibration = even-indexed held-out documents, evaluation = odd-indexed",
        },
        "weights": models.source,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
            "shared": "yes: 2 cores shared with other people's jobs; load averages recorded",
            "device": "CPU only (no GPU)",
        },
        "loads": loads,
        "new_tokens": new_tokens,
        "prompt_length": length,
        "batch": 1,
        "alpha": ALPHA,
        "win_share": WIN_SHARE,
        "target_power": POWER,
        "chunks_planned": planned,
        "chunks_used": used,
        "power_at_chunks_used": sign_test_power(used, ALPHA, WIN_SHARE),
        "estimated_main_seconds": estimate,
        "pilot_chunks": pilot_chunks,
        "pilot": pilot,
        "sts_temperatures": {t: f["temperatures"] for t, f in sts_fits.items()},
        "sps_profile_one_request": asdict(profile),
        "settings": settings,
        "seconds": time.perf_counter() - started,
    }


def markdown(result: dict[str, Any]) -> str:
    """The docs/results/e2e_headline.md and benchmarks/e2e_headline_and_clocks.md table of a
    headline result."""
    rows = headline_rows(result["settings"], load=True)
    header = [
        "domain / T",
        "EAGLE-3 gamma (pilot)",
        "tau DSpark / EAGLE-3",
        "DSpark + Alg. 1 x target [95 %]",
        "target",
        "EAGLE-3 x target [95 %]",
        "DSpark / EAGLE-3 [95 %]",
        "chunks DSpark slower",
        "p (slower)",
        "p (faster)",
        "load",
    ]
    return "\n".join(table(header, rows)) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR)
    parser.add_argument(
        "--chunks",
        type=integer_at_least("--chunks", 1),
        default=None,
        help="main chunks per domain and temperature (default: the count for power "
        f"{POWER} against a {WIN_SHARE * 100:.0f} %% win rate at alpha {ALPHA})",
    )
    parser.add_argument("--pilot-chunks", type=integer_at_least("--pilot-chunks", 2), default=10)
    parser.add_argument("--max-minutes", type=number_in("--max-minutes", 0.0, 1e4), default=40.0)
    parser.add_argument("--new-tokens", type=integer_at_least("--new-tokens", 1), default=64)
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/headline_batch1.json"))
    parser.add_argument(
        "--markdown",
        type=Path,
        default=Path("benchmarks/e2e_headline_and_clocks.md"),
        help="Markdown file whose section of this table is rewritten",
    )
    args = parser.parse_args(argv)
    if problem := output_path_problem("--out", str(args.out)):
        parser.error(problem)
    if problem := output_path_problem("--markdown", str(args.markdown)):
        parser.error(problem)
    torch.set_num_threads(args.threads)
    models = loaded(PROG, "--weights", lambda: load_models(args.weights))
    result = headline(
        models, args.chunks, args.pilot_chunks, args.max_minutes, args.new_tokens, args.seed
    )
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    write_sections(args.out, None, args.markdown)
    print(markdown(result))
    print(f"done in {result['seconds']:.0f}s; raw numbers in {args.out}")
    return result


if __name__ == "__main__":
    main()
