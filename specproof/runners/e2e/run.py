"""Train the small target and both drafters within a budget, then measure and write the tables.

    python -m specproof.runners.e2e.run [--budget-minutes M] [--out DIR] [--markdown FILE]
                                [--artifacts DIR] [--smoke]

Weights go to ``--artifacts`` and are loaded back from disk before anything is measured. Raw
numbers go to ``DIR/e2e.json``; the tables replace the "e2e" section of ``FILE``
(benchmarks/e2e.md by default) and leave its other sections alone.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
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
from specproof.e2e.data.corpora import Corpus, load_corpora, prompts_from
from specproof.e2e.evaluation.agreement import agreement_by_domain
from specproof.e2e.evaluation.comparisons import Setting
from specproof.e2e.evaluation.fixed_gamma import fixed_gamma_tables
from specproof.e2e.evaluation.latency import matched_eagle_gamma, measure_latency
from specproof.e2e.evaluation.losslessness_by_decoder import lossless_checks
from specproof.e2e.evaluation.measurements import batched, profile_batches
from specproof.e2e.evaluation.prediction import held_out_statistics
from specproof.e2e.evaluation.scheduler_comparison import compare_at_requests, measure_schedulers
from specproof.e2e.evaluation.sts import fit_sts_by_temperature, held_out_check
from specproof.e2e.models.loading import SHIPPED_DIR, load_models
from specproof.e2e.models.target import parameter_count
from specproof.e2e.plans import FAST_VERIFY, FULL, LOSSLESS_TOLERANCE, SHIPPED, SMOKE, Plan
from specproof.e2e.training.ship import train_models
from specproof.runners.e2e.report import write_tables


def run(
    plan: Plan,
    budget_minutes: float,
    out: Path,
    artifacts: Path,
    seed: int,
    markdown_path: Path = Path("benchmarks/e2e.md"),
    weights: Path | None = None,
) -> dict[str, Any]:
    """Train (or, with ``weights``, load the shipped models), measure, write the tables."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    budget = budget_minutes * 60
    print(f"budget {budget_minutes} min; loading corpora")
    corpora: dict[str, Corpus] = load_corpora()
    if weights is None:
        train_models(plan, artifacts, seed, budget_seconds=budget)
        models = load_models(artifacts, "scratch")
    else:
        models = load_models(weights)
        plan = replace(
            plan,
            target=models.target.config,
            dspark=models.dspark.config,
            eagle=models.eagle.config,
        )
    target = models.target
    statistics = held_out_statistics(target, corpora, plan.target_batch, plan.window, seed)
    print(f"held-out statistics: {statistics}")
    training_seconds = time.perf_counter() - started
    print(f"models ready at {training_seconds:.0f}s; measuring")

    setting = Setting(plan.new_tokens, FAST_VERIFY)
    evaluation_count = max(
        plan.evaluation_prompts,
        plan.latency_prompts,
        max(plan.scheduler_batches) * plan.scheduler_chunks,
    )
    prompts = {
        split: {
            k: prompts_from(
                c.stream(split),
                plan.calibration_prompts if split == "calibration" else evaluation_count,
                plan.prompt_length,
                seed + (0 if split == "calibration" else 1),
            )
            for k, c in corpora.items()
        }
        for split in ("calibration", "evaluation")
    }

    # Sequential Temperature Scaling on the calibration half of the held-out documents, fitted
    # separately at each decoding temperature (all domains pooled), then checked on the
    # evaluation half.
    sts_fits = fit_sts_by_temperature(
        models, setting, prompts["calibration"], plan.requests, seed + 100
    )
    sts_check = held_out_check(
        models, setting, prompts["evaluation"], plan.requests, sts_fits, seed + 150
    )
    sts = sts_fits["1"]["temperatures"]

    evaluation, calibration_table = fixed_gamma_tables(
        models, plan, setting, prompts["evaluation"], sts_fits, seed
    )
    agreement = agreement_by_domain(
        models,
        {k: c.stream("evaluation") for k, c in corpora.items()},
        plan.agreement_windows,
        plan.window,
        plan.prompt_length,
        seed + 5,
    )
    print(
        "greedy-text argmax agreement, first draft: "
        + ", ".join(
            f"{d} DSpark {a['greedy']['dspark']['argmax_agreement'][0]:.2f} "
            f"EAGLE {a['greedy']['eagle']['argmax_agreement'][0]:.2f}"
            for d, a in agreement.items()
        )
    )
    profiles = profile_batches(
        target,
        models.dspark,
        prompts["calibration"],
        [1, plan.requests, *plan.scheduler_batches],
        plan.sps_new_tokens,
        plan.sps_sweeps,
        plan.sps_seconds,
        FAST_VERIFY,
        seed,
    )
    sps = profiles[plan.requests].curve()
    matched = matched_eagle_gamma(
        models, setting, batched(prompts["calibration"][next(iter(corpora))], 1)[:4], seed + 30
    )
    print(f"drafting time per round at B=1: {matched}")
    latency = measure_latency(
        models,
        plan,
        setting,
        prompts["evaluation"],
        sts_fits,
        profiles[1].curve(),
        matched["gamma"],
        seed + 700,
    )
    schedulers = compare_at_requests(models, plan, setting, prompts["evaluation"], sts, sps, seed)
    scheduler_tests = measure_schedulers(
        models,
        plan,
        setting,
        prompts["calibration"],
        prompts["evaluation"],
        sts,
        {batch: profiles[batch].curve() for batch in plan.scheduler_batches},
        seed + 800,
    )
    best_gamma = scheduler_tests[str(plan.scheduler_batches[0])]["best_fixed_gamma"]
    lossless = lossless_checks(models, plan, prompts["evaluation"], sts, sps, best_gamma, seed)

    results: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "shared": "possibly: other jobs may use the same cores, unseen from inside the run",
            "device": "CPU only (no GPU was available)",
        },
        "weights": models.source,
        "verifier": "specproof.e2e.decoding.verifier.generator_chain_verify (losslessness also "
        "checked through specproof.optimized.chain_verify)",
        "budget_minutes": budget_minutes,
        "plan": json.loads(json.dumps(asdict(plan), default=str)),
        "corpora": {k: c.sizes() for k, c in corpora.items()},
        "parameters": {
            "target": parameter_count(target),
            "dspark": parameter_count(models.dspark),
            "eagle": parameter_count(models.eagle),
        },
        "training": models.training,
        "held_out_statistics": statistics,
        "sts_temperatures": sts,
        "sts_fits": sts_fits,
        "sts_held_out": sts_check,
        "evaluation": evaluation,
        "calibration": calibration_table,
        "agreement": agreement,
        "sps_profile": {
            **asdict(profiles[plan.requests]),
            "step_iqr": profiles[plan.requests].step_iqr,
        },
        "sps_profiles": {
            str(b): {**asdict(p), "step_iqr": p.step_iqr} for b, p in profiles.items()
        },
        "drafting_time_match": matched,
        "latency": latency,
        "schedulers": schedulers,
        "scheduler_tests": scheduler_tests,
        "lossless": lossless,
    }
    results["total_seconds"] = time.perf_counter() - started
    write_tables(results, out, markdown_path)
    print(
        f"done in {results['total_seconds']:.0f}s; "
        f"raw numbers in {out / 'e2e.json'}, tables in {markdown_path}"
    )
    return results


PROG = "python -m specproof.runners.e2e.run"
MAX_BUDGET_MINUTES = 10.0**6
"""About two years: a budget past it is a typo, and its seconds stay exact in a float."""


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "--budget-minutes",
        type=number_in("--budget-minutes", 0.0, MAX_BUDGET_MINUTES),
        default=None,
        help="total wall-clock budget (default 12.5; smoke 0.1)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks"), help="folder of e2e.json (raw numbers)"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=Path("benchmarks/e2e.md"),
        help="Markdown file whose 'e2e' section receives the tables",
    )
    parser.add_argument("--artifacts", type=Path, default=Path("artifacts"))
    parser.add_argument("--smoke", action="store_true", help="tiny models, seconds")
    parser.add_argument(
        "--from-scratch",
        action="store_true",
        help="train a small target and both drafters within the budget instead of loading the "
        "shipped weights (always so with --smoke)",
    )
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR, help="shipped weights")
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    parser.add_argument(
        "--lossless-delta",
        type=number_in("--lossless-delta", LOSSLESS_TOLERANCE, 1.0),
        default=None,
        help="TV the losslessness checks are powered against (samples follow from it), "
        f"in ({LOSSLESS_TOLERANCE:g}, 1]",
    )
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--artifacts", args.artifacts)):
        if path.exists() and not path.is_dir():
            parser.error(f"argument {option}: {path} is a file, not a folder")
    if problem := output_path_problem("--markdown", str(args.markdown)):
        parser.error(problem)
    torch.set_num_threads(args.threads)
    scratch = args.smoke or args.from_scratch
    plan = SMOKE if args.smoke else FULL if scratch else SHIPPED
    if args.lossless_delta is not None:
        plan = replace(plan, lossless_delta=args.lossless_delta)
    budget = args.budget_minutes
    if budget is None:
        budget = 0.1 if args.smoke else 12.5
    if not math.isfinite(budget) or budget <= 0:
        parser.error("--budget-minutes must be positive")
    weights = None if scratch else args.weights
    if weights is not None:  # a bad file is named now, not after the corpora are loaded
        loaded(PROG, "--weights (or pass --from-scratch)", lambda: load_models(weights))
    return run(plan, budget, args.out, args.artifacts, args.seed, args.markdown, weights)


if __name__ == "__main__":
    main()
