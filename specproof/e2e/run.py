"""Train the small target and both drafters within a budget, then measure and write the tables.

    python -m specproof.e2e.run [--budget-minutes M] [--out DIR] [--markdown FILE]
                                [--artifacts DIR] [--smoke]

Weights go to ``--artifacts`` and are loaded back from disk before anything is measured. Raw
numbers go to ``DIR/e2e.json``; the tables replace the "e2e" section of ``FILE``
(BENCHMARKS.md by default) and leave its other sections alone.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.reference.schedulers import Algorithm1, FixedGamma, StaticThreshold
from specproof.stats import required_samples

from .calibration import cumulative_ece, fit_sts, reliability_bins
from .compare import Decoder, interleaved, speed_entry
from .data import Corpus, WindowSampler, load_corpora, prompts_from
from .decode import (
    DecodeResult,
    Drafter,
    Schedule,
    autoregressive_generate,
    speculative_generate,
)
from .drafters import DSparkConfig, DSparkDrafter, EagleConfig, EagleDrafter
from .lossless import first_tokens_law, float32_gap, losslessness_test, sample_first_tokens
from .measure import (
    acceptance_counts,
    conditional_acceptance,
    confidence_records,
    mean_accepted_length,
    profile_sps,
    tokens_per_second,
)
from .report import write_tables
from .target import Target, TargetConfig, parameter_count
from .train import (
    MixedSource,
    TrainSettings,
    bits_per_byte,
    generate_pool,
    train_dspark,
    train_eagle,
    train_target,
)
from .weights import load_weights, save_weights

DOMAIN_WEIGHTS = {"code": 0.7, "prose": 0.3}
LOSSLESS_BETA = 1e-3
LOSSLESS_TOLERANCE = 1e-4
RANK_CELLS = 9
TEMPERATURES = (1.0, 0.0)


@dataclass(frozen=True)
class Plan:
    target: TargetConfig
    dspark: DSparkConfig
    eagle: EagleConfig
    target_batch: int
    drafter_batch: int
    window: int
    anchors_per_window: int
    target_lr: float
    drafter_lr: float
    target_share: float
    drafter_share: float
    prompt_length: int
    new_tokens: int
    requests: int
    calibration_prompts: int
    evaluation_prompts: int
    bits_batches: int
    sps_new_tokens: int
    sps_sweeps: int
    sps_seconds: float
    lossless_delta: float
    pool_size: int
    pool_prefix: int
    threshold: Fraction


FULL = Plan(
    target=TargetConfig(
        d_model=128, n_layers=4, n_heads=4, d_ff=512, max_len=160, feature_layers=(0, 1, 3)
    ),
    dspark=DSparkConfig(gamma=7, n_layers=1, n_heads=4, d_ff=512, rank=32),
    eagle=EagleConfig(gamma=7, n_heads=4, d_ff=512),
    target_batch=16,
    drafter_batch=8,
    window=128,
    anchors_per_window=16,
    target_lr=3e-3,
    drafter_lr=2e-3,
    target_share=0.42,
    drafter_share=0.17,
    prompt_length=32,
    new_tokens=96,
    requests=4,
    calibration_prompts=24,
    evaluation_prompts=16,
    bits_batches=8,
    sps_new_tokens=32,
    sps_sweeps=15,
    sps_seconds=30.0,
    lossless_delta=0.1,
    pool_size=768,
    pool_prefix=16,
    threshold=Fraction(1, 2),
)

SMOKE = Plan(
    target=TargetConfig(
        d_model=32, n_layers=2, n_heads=2, d_ff=64, max_len=48, feature_layers=(0, 1)
    ),
    dspark=DSparkConfig(gamma=3, n_layers=1, n_heads=2, d_ff=64, rank=8),
    eagle=EagleConfig(gamma=3, n_heads=2, d_ff=64),
    target_batch=4,
    drafter_batch=4,
    window=32,
    anchors_per_window=4,
    target_lr=3e-3,
    drafter_lr=2e-3,
    target_share=0.4,
    drafter_share=0.2,
    prompt_length=8,
    new_tokens=12,
    requests=2,
    calibration_prompts=4,
    evaluation_prompts=2,
    bits_batches=1,
    sps_new_tokens=6,
    sps_sweeps=2,
    sps_seconds=5.0,
    lossless_delta=0.5,
    pool_size=8,
    pool_prefix=4,
    threshold=Fraction(1, 2),
)


def load_target(directory: Path) -> Target:
    tensors, config = load_weights(directory, "target")
    target = Target(TargetConfig.from_dict(config))
    target.load_state_dict(tensors)
    return target.eval()


def load_dspark(directory: Path, target: Target) -> DSparkDrafter:
    tensors, config = load_weights(directory, "dspark")
    drafter = DSparkDrafter(target, DSparkConfig.from_dict(config))
    drafter.load_state_dict(tensors)
    return drafter.eval()


def load_eagle(directory: Path, target: Target) -> EagleDrafter:
    tensors, config = load_weights(directory, "eagle")
    drafter = EagleDrafter(target, EagleConfig.from_dict(config))
    drafter.load_state_dict(tensors)
    return drafter.eval()


def batched(items: Sequence[list[int]], size: int) -> list[list[list[int]]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def speculative(
    target: Target,
    drafter: Drafter,
    plan: Plan,
    temperature: float,
    schedule: Schedule,
    seed: int,
    sps: Callable[[int], float] | None = None,
    confidence_temperatures: Sequence[float] | None = None,
) -> Decoder:
    """A chunk decoder for :func:`interleaved`: speculative decoding, seed + chunk index."""

    def decode(chunk: list[list[int]], index: int) -> DecodeResult:
        return speculative_generate(
            target,
            drafter,
            chunk,
            plan.new_tokens,
            temperature=temperature,
            schedule=schedule,
            sps=sps,
            confidence_temperatures=confidence_temperatures,
            seed=seed + index,
        )

    return decode


def autoregressive(target: Target, plan: Plan, temperature: float, seed: int) -> Decoder:
    """A chunk decoder for :func:`interleaved`: the target alone, seed + chunk index."""

    def decode(chunk: list[list[int]], index: int) -> DecodeResult:
        return autoregressive_generate(
            target, chunk, plan.new_tokens, temperature=temperature, seed=seed + index
        )

    return decode


def summary(results: Sequence[DecodeResult], gamma: int) -> dict[str, Any]:
    scheduled = [s for res in results for r in res.rounds for s in r.scheduled]
    accepted = [a for res in results for r in res.rounds for a in r.accepted]
    reached, passed = acceptance_counts(results, gamma)
    return {
        "tau": mean_accepted_length(results),
        "mean_accepted_drafts": float(np.mean(accepted)) if accepted else float("nan"),
        "acceptance_by_position": conditional_acceptance(results, gamma),
        "acceptance_reached": reached,
        "acceptance_passed": passed,
        "mean_verified_drafts": float(np.mean(scheduled)) if scheduled else float("nan"),
        "request_rounds": len(scheduled),
        "generated_tokens": sum(r.generated for r in results),
    }


def calibration_entry(
    runs: Sequence[DecodeResult], temperature: float, sts_fits: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """ECE and reliability bins of a_k before STS and after each STS fit, on ``runs``."""
    logits, accepted = confidence_records(runs)
    before, before_k = cumulative_ece(logits, accepted)
    after: dict[str, Any] = {}
    for fit_key, fit in sts_fits.items():
        temps = np.asarray(fit["temperatures"])
        ece, ece_k = cumulative_ece(logits, accepted, temps)
        after[fit_key] = {
            "ece": ece,
            "ece_by_position": ece_k,
            "reliability": reliability_bins(logits, accepted, temps),
        }
    own = f"{temperature:g}"
    return {
        "blocks": len(accepted),
        "temperature": temperature,
        "ece_before": before,
        "ece_before_by_position": before_k,
        "reliability_before": reliability_bins(logits, accepted),
        "ece_after": after[own]["ece"] if own in after else float("nan"),
        "sts_fit_used": own,
        "after": after,
    }


def run(
    plan: Plan,
    budget_minutes: float,
    out: Path,
    artifacts: Path,
    seed: int,
    markdown_path: Path = Path("BENCHMARKS.md"),
) -> dict[str, Any]:
    started = time.perf_counter()
    torch.manual_seed(seed)
    budget = budget_minutes * 60
    print(f"budget {budget_minutes} min; loading corpora")
    corpora: dict[str, Corpus] = load_corpora()
    train_sampler = WindowSampler(
        {k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed
    )
    held_out = {
        k: WindowSampler({k: c.stream("evaluation")}, {k: 1.0}, seed + 1)
        for k, c in corpora.items()
    }

    target = Target(plan.target)
    print(f"target: {parameter_count(target)} parameters")
    target_report = train_target(
        target,
        train_sampler,
        TrainSettings(budget * plan.target_share, plan.target_batch, plan.window, plan.target_lr),
    )
    save_weights(target, plan.target.as_dict(), artifacts, "target")
    target = load_target(artifacts)
    bits = {
        k: bits_per_byte(target, s, plan.bits_batches, plan.target_batch, plan.window)
        for k, s in held_out.items()
    }
    print(f"held-out bits per byte: {bits}")

    pool_started = time.perf_counter()
    pool = generate_pool(
        target, train_sampler, plan.pool_size, plan.pool_prefix, plan.window, (1.0, 0.0), seed
    )
    pool_seconds = time.perf_counter() - pool_started
    print(f"{len(pool)} target-written windows in {pool_seconds:.0f}s")
    drafter_source = MixedSource(train_sampler, pool, seed)
    drafter_seconds = budget * plan.drafter_share
    dspark = DSparkDrafter(target, plan.dspark)
    dspark_report = train_dspark(
        dspark,
        drafter_source,
        TrainSettings(drafter_seconds, plan.drafter_batch, plan.window, plan.drafter_lr),
        plan.anchors_per_window,
        seed=seed,
    )
    save_weights(dspark, plan.dspark.as_dict(), artifacts, "dspark")
    eagle = EagleDrafter(target, plan.eagle)
    eagle_report = train_eagle(
        eagle,
        drafter_source,
        TrainSettings(drafter_seconds, plan.drafter_batch, plan.window, plan.drafter_lr),
    )
    save_weights(eagle, plan.eagle.as_dict(), artifacts, "eagle")
    dspark = load_dspark(artifacts, target)
    eagle = load_eagle(artifacts, target)
    training_seconds = time.perf_counter() - started
    print(f"training done at {training_seconds:.0f}s; measuring")

    gamma = plan.dspark.gamma
    fixed = FixedGamma()
    prompts = {
        split: {
            k: prompts_from(
                c.stream(split),
                plan.calibration_prompts if split == "calibration" else plan.evaluation_prompts,
                plan.prompt_length,
                seed + (0 if split == "calibration" else 1),
            )
            for k, c in corpora.items()
        }
        for split in ("calibration", "evaluation")
    }

    # Sequential Temperature Scaling on the calibration half of the held-out documents, fitted
    # separately at each decoding temperature (both domains pooled).
    sts_fits: dict[str, dict[str, Any]] = {}
    for temperature in TEMPERATURES:
        decode = speculative(target, dspark, plan, temperature, fixed, seed + 100)
        calibration_runs = [
            decode(chunk, i)
            for k in corpora
            for i, chunk in enumerate(batched(prompts["calibration"][k], plan.requests))
        ]
        calib_logits, calib_accepted = confidence_records(calibration_runs)
        fitted = fit_sts(calib_logits, calib_accepted)
        sts_fits[f"{temperature:g}"] = {"temperatures": fitted, "blocks": len(calib_accepted)}
        print(f"STS temperatures fitted at T={temperature:g}: {[round(t, 3) for t in fitted]}")
    sts = sts_fits["1"]["temperatures"]

    evaluation: dict[str, Any] = {}
    calibration_table: dict[str, Any] = {}
    for domain in corpora:
        chunks = batched(prompts["evaluation"][domain], plan.requests)
        for temperature in TEMPERATURES:
            key = f"{domain}/T={temperature:g}"
            runs = interleaved(
                {
                    "dspark": speculative(target, dspark, plan, temperature, fixed, seed + 200),
                    "eagle": speculative(target, eagle, plan, temperature, fixed, seed + 200),
                    "target": autoregressive(target, plan, temperature, seed + 300),
                },
                chunks,
                seed + 250,
            )
            row: dict[str, Any] = {
                name: {**summary(runs[name], gamma), **speed_entry(runs[name], runs["target"])}
                for name in ("dspark", "eagle")
            }
            row["target_only_tokens_per_second"] = tokens_per_second(runs["target"])
            calibration_table[key] = calibration_entry(runs["dspark"], temperature, sts_fits)
            evaluation[key] = row
            print(
                f"{key}: DSpark tau {row['dspark']['tau']:.3f}, EAGLE tau {row['eagle']['tau']:.3f}"
            )

    profile = profile_sps(
        target,
        dspark,
        [c for k in corpora for c in batched(prompts["calibration"][k], plan.requests)],
        plan.sps_new_tokens,
        seed,
        sweeps=plan.sps_sweeps,
        max_seconds=plan.sps_seconds,
    )
    print(
        f"SPS profile: {profile.sweeps} sweeps in {profile.seconds:.0f}s; fitted SPS "
        f"{profile.step_fit[0]:.0f} steps/s at B={profile.batch_sizes[0]}, "
        f"{profile.step_fit[-1]:.0f} at B={profile.batch_sizes[-1]}"
    )
    sps = profile.curve()
    schedulers: dict[str, Any] = {}
    threshold = StaticThreshold(plan.threshold)
    for domain in corpora:
        decoders: dict[str, Decoder] = {
            label: speculative(target, dspark, plan, 1.0, schedule, seed + 400, sps, sts)
            for label, schedule in (
                ("algorithm1", Algorithm1()),
                (f"fixed gamma={gamma}", fixed),
                (f"static threshold a>={plan.threshold}", threshold),
            )
        }
        decoders[f"EAGLE-style, fixed gamma={gamma}"] = speculative(
            target, eagle, plan, 1.0, fixed, seed + 400
        )
        decoders["target only"] = autoregressive(target, plan, 1.0, seed + 500)
        runs = interleaved(decoders, batched(prompts["evaluation"][domain], plan.requests), seed)
        rows: dict[str, Any] = {}
        for label, decoded in runs.items():
            speed = speed_entry(decoded, runs["target only"])
            if label == "target only":
                rows[label] = {"tau": 1.0, **speed}
            else:
                rows[label] = {**summary(decoded, gamma), **speed}
        schedulers[domain] = rows
        print(
            f"schedulers on {domain}: "
            + ", ".join(
                f"{k} {v['tokens_per_second']:.0f} tok/s (x{v['speed_vs_target']:.2f})"
                for k, v in rows.items()
            )
        )

    lossless: list[dict[str, Any]] = []
    checks = (
        ("dspark + algorithm1 (STS)", dspark, Algorithm1(), sts),
        (f"eagle + fixed gamma={gamma}", eagle, fixed, None),
    )
    alpha_each = 1e-6 / (len(checks) * len(corpora))
    lossless_samples = required_samples(
        plan.lossless_delta, alpha_each, LOSSLESS_BETA, RANK_CELLS + 1, LOSSLESS_TOLERANCE
    )
    for domain in corpora:
        prompt = prompts["evaluation"][domain][0]
        law = first_tokens_law(target, prompt, 2)
        gap = float32_gap(target, prompt)
        for label, drafter, schedule, temps in checks:
            counts = sample_first_tokens(
                target,
                drafter,
                prompt,
                2,
                lossless_samples,
                schedule=schedule,
                sps=sps,
                confidence_temperatures=temps,
                batch=2000,
                seed=seed + 600,
            )
            fit = losslessness_test(
                counts,
                law,
                alpha=alpha_each,
                beta=LOSSLESS_BETA,
                delta=plan.lossless_delta,
                tolerance=LOSSLESS_TOLERANCE,
                name=f"{domain}: {label}",
            )
            print(fit.describe())
            lossless.append(
                {**fit.as_dict(), "float32_gap": gap, "domain": domain, "decoder": label}
            )

    results: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        },
        "budget_minutes": budget_minutes,
        "plan": json.loads(json.dumps(asdict(plan), default=str)),
        "corpora": {k: c.sizes() for k, c in corpora.items()},
        "parameters": {
            "target": parameter_count(target),
            "dspark": parameter_count(dspark),
            "eagle": parameter_count(eagle),
        },
        "training": {
            "target": asdict(target_report),
            "dspark": asdict(dspark_report),
            "eagle": asdict(eagle_report),
            "pool": {"windows": len(pool), "seconds": pool_seconds},
        },
        "held_out_bits_per_byte": bits,
        "sts_temperatures": sts,
        "sts_fits": sts_fits,
        "evaluation": evaluation,
        "calibration": calibration_table,
        "sps_profile": {**asdict(profile), "step_iqr": profile.step_iqr},
        "schedulers": schedulers,
        "lossless": lossless,
    }
    results["total_seconds"] = time.perf_counter() - started
    write_tables(results, out, markdown_path)
    print(
        f"done in {results['total_seconds']:.0f}s; "
        f"raw numbers in {out / 'e2e.json'}, tables in {markdown_path}"
    )
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="total wall-clock budget (default 12.5; smoke 0.1)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks"), help="folder of e2e.json (raw numbers)"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        default=Path("BENCHMARKS.md"),
        help="Markdown file whose 'e2e' section receives the tables",
    )
    parser.add_argument("--artifacts", type=Path, default=Path("artifacts"))
    parser.add_argument("--smoke", action="store_true", help="tiny models, seconds")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--lossless-delta",
        type=float,
        default=None,
        help="TV the losslessness checks are powered against (samples follow from it)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    plan = SMOKE if args.smoke else FULL
    if args.lossless_delta is not None:
        plan = replace(plan, lossless_delta=args.lossless_delta)
    budget = args.budget_minutes
    if budget is None:
        budget = 0.1 if args.smoke else 12.5
    if not math.isfinite(budget) or budget <= 0:
        parser.error("--budget-minutes must be positive")
    return run(plan, budget, args.out, args.artifacts, args.seed, args.markdown)


if __name__ == "__main__":
    main()
