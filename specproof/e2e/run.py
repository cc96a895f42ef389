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

from .agreement import agreement_table
from .calibration import cumulative_ece, fit_sts, reliability_bins
from .compare import Decoder, interleaved, speed_entry
from .data import Corpus, WindowSampler, load_corpora, prompts_from
from .decode import DecodeResult, Drafter, Schedule, VerifyStep, optimized_chain_verify
from .drafters import DSparkConfig, DSparkDrafter, EagleConfig, EagleDrafter
from .experiments import (
    Setting,
    best_fixed_gamma,
    compare,
    drafting_ms,
    phase_breakdown,
    scheduler_test,
    speculative_decoder,
    target_decoder,
    target_step_ms,
    with_gamma,
)
from .lossless import first_tokens_law, float32_gap, losslessness_test, sample_first_tokens
from .measure import (
    SpsProfile,
    acceptance_counts,
    conditional_acceptance,
    confidence_records,
    mean_accepted_length,
    profile_sps,
    tokens_per_second,
)
from .report import write_tables
from .ship import SHIP, SHIPPED_DIR
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
from .verify import generator_chain_verify
from .weights import load_weights, save_weights

DOMAIN_WEIGHTS = {"code": 0.7, "prose": 0.3}
FAST_VERIFY: VerifyStep = generator_chain_verify
"""The verifier of the speed tables; see :mod:`specproof.e2e.verify` for why."""
SIGN_TEST_ALPHA = 0.05
SIGN_TEST_SLOWER_SHARE = 0.9
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
    latency_prompts: int = 12
    """Batch-1 decodes per domain and temperature (each its own chunk)."""
    scheduler_chunks: int = 6
    """Chunks per domain at each batch size of the scheduler comparison."""
    scheduler_batches: tuple[int, ...] = (4, 8)
    sweep_chunks: int = 2
    """Calibration chunks per domain for the fixed-gamma sweep."""
    lossless_batch: int = 700
    agreement_windows: int = 16
    """Held-out windows per domain for the teacher-forced agreement table."""


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
    latency_prompts=1,
    scheduler_chunks=1,
    scheduler_batches=(2, 3),
    sweep_chunks=1,
    lossless_batch=400,
)

SHIPPED = replace(
    FULL,
    target=SHIP.target,
    dspark=SHIP.dspark,
    eagle=SHIP.eagle,
    new_tokens=64,
    calibration_prompts=16,
    evaluation_prompts=16,
    bits_batches=4,
    sps_new_tokens=24,
    sps_sweeps=5,
    sps_seconds=20.0,
    lossless_delta=0.15,
)
"""Measurement sizes for the shipped models (trained by ``nox -s train-target``)."""


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


@dataclass
class Models:
    target: Target
    dspark: DSparkDrafter
    eagle: EagleDrafter
    training: dict[str, Any]
    source: str


def train_from_scratch(
    plan: Plan, budget: float, artifacts: Path, corpora: dict[str, Corpus], seed: int
) -> Models:
    """Train all three models within the budget's shares, save them and load them back."""
    train_sampler = WindowSampler(
        {k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed
    )
    target = Target(plan.target)
    print(f"target: {parameter_count(target)} parameters")
    target_report = train_target(
        target,
        train_sampler,
        TrainSettings(budget * plan.target_share, plan.target_batch, plan.window, plan.target_lr),
    )
    save_weights(target, plan.target.as_dict(), artifacts, "target")
    target = load_target(artifacts)
    pool_started = time.perf_counter()
    pool = generate_pool(
        target, train_sampler, plan.pool_size, plan.pool_prefix, plan.window, (1.0, 0.0), seed
    )
    pool_seconds = time.perf_counter() - pool_started
    print(f"{len(pool)} target-written windows in {pool_seconds:.0f}s")
    drafter_seconds = budget * plan.drafter_share

    def source() -> MixedSource:
        return MixedSource(
            WindowSampler({k: c.stream("train") for k, c in corpora.items()}, DOMAIN_WEIGHTS, seed),
            pool,
            seed,
        )

    settings = TrainSettings(drafter_seconds, plan.drafter_batch, plan.window, plan.drafter_lr)
    dspark = DSparkDrafter(target, plan.dspark)
    dspark_report = train_dspark(dspark, source(), settings, plan.anchors_per_window, seed=seed)
    save_weights(dspark, plan.dspark.as_dict(), artifacts, "dspark")
    eagle = EagleDrafter(target, plan.eagle)
    eagle_report = train_eagle(eagle, source(), settings)
    save_weights(eagle, plan.eagle.as_dict(), artifacts, "eagle")
    training = {
        "target": asdict(target_report),
        "dspark": asdict(dspark_report),
        "eagle": asdict(eagle_report),
        "pool": {"windows": len(pool), "seconds": pool_seconds},
    }
    return Models(
        target, load_dspark(artifacts, target), load_eagle(artifacts, target), training, "scratch"
    )


def load_shipped(directory: Path) -> Models:
    """The weights ``nox -s train-target`` wrote (bf16 on disk, float32 in memory)."""
    if not (directory / "training.json").exists():
        raise FileNotFoundError(
            f"no shipped weights in {directory}: run `nox -s train-target`, or pass --from-scratch"
        )
    report = json.loads((directory / "training.json").read_text())
    target = load_target(directory)
    training = {
        **report["training"],
        "pool": {"windows": report["training"]["pool_windows"], "seconds": float("nan")},
        "shipped": {k: v for k, v in report.items() if k != "training"},
    }
    return Models(
        target, load_dspark(directory, target), load_eagle(directory, target), training, "shipped"
    )


def measure_latency(
    models: Models,
    plan: Plan,
    setting: Setting,
    prompts: dict[str, list[list[int]]],
    sts_fits: dict[str, dict[str, Any]],
    sps_one: Callable[[int], float],
    eagle_gamma_matched: int,
    seed: int,
) -> dict[str, Any]:
    """Batch size 1: every decoder on every prompt, per domain and temperature."""
    gamma = plan.dspark.gamma
    target, dspark, eagle = models.target, models.dspark, models.eagle
    out: dict[str, Any] = {}
    for domain, domain_prompts in prompts.items():
        chunks = batched(domain_prompts[: plan.latency_prompts], 1)
        for temperature in TEMPERATURES:
            sts = sts_fits[f"{temperature:g}"]["temperatures"]
            decoders: dict[str, Decoder] = {
                "DSpark + Algorithm 1": speculative_decoder(
                    target, dspark, setting, temperature, Algorithm1(), seed, sps_one, sts
                ),
                f"DSpark, fixed gamma={gamma}": speculative_decoder(
                    target, dspark, setting, temperature, FixedGamma(), seed
                ),
                f"EAGLE-style, fixed gamma={gamma}": speculative_decoder(
                    target, eagle, setting, temperature, FixedGamma(), seed
                ),
                "target only": target_decoder(target, setting, temperature, seed + 1),
            }
            if eagle_gamma_matched != gamma:
                decoders[f"EAGLE-style, gamma={eagle_gamma_matched} (DSpark's drafting time)"] = (
                    speculative_decoder(
                        target,
                        with_gamma(eagle, eagle_gamma_matched),
                        setting,
                        temperature,
                        FixedGamma(),
                        seed,
                    )
                )
            key = f"{domain}/T={temperature:g}"
            runs = interleaved(decoders, chunks, seed + 7)
            rows: dict[str, Any] = {}
            for label, decoded in runs.items():
                speed = speed_entry(decoded, runs["target only"])
                if label == "target only":
                    rows[label] = {
                        "tau": 1.0,
                        **speed,
                        "step_ms": target_step_ms(decoded, setting.new_tokens),
                    }
                else:
                    rows[label] = {
                        **summary(decoded, gamma),
                        **speed,
                        "breakdown_ms": phase_breakdown(decoded),
                    }
            out[key] = rows
            print(
                f"B=1 {key}: "
                + ", ".join(
                    f"{k} tau {v['tau']:.2f} x{v['speed_vs_target']:.2f}" for k, v in rows.items()
                )
            )
    return out


def matched_eagle_gamma(
    models: Models, setting: Setting, chunks: Sequence[list[list[int]]], seed: int
) -> dict[str, Any]:
    """The EAGLE-style gamma whose drafting time per round is closest to DSpark's block
    (batch 1, temperature 1, calibration prompts)."""
    gamma = models.dspark.gamma
    decoders = {
        "dspark": speculative_decoder(
            models.target, models.dspark, setting, 1.0, FixedGamma(), seed
        ),
        **{
            str(g): speculative_decoder(
                models.target, with_gamma(models.eagle, g), setting, 1.0, FixedGamma(), seed
            )
            for g in range(1, gamma + 1)
        },
    }
    runs = interleaved(decoders, chunks, seed)
    times = {name: drafting_ms(results) for name, results in runs.items()}
    eagle_times = {int(g): t for g, t in times.items() if g != "dspark"}
    best = min(eagle_times, key=lambda g: (abs(eagle_times[g] - times["dspark"]), -g))
    return {"gamma": best, "dspark_draft_ms": times["dspark"], "eagle_draft_ms": eagle_times}


def measure_schedulers(
    models: Models,
    plan: Plan,
    setting: Setting,
    calibration: dict[str, list[list[int]]],
    evaluation: dict[str, list[list[int]]],
    sts: Sequence[float],
    sps_by_batch: dict[int, Callable[[int], float]],
    seed: int,
) -> dict[str, Any]:
    """Algorithm 1 against the best fixed gamma (swept on calibration prompts) and the static
    threshold at each batch size, temperature 1, with sign tests over the pooled chunks."""
    gamma = plan.dspark.gamma
    target, dspark = models.target, models.dspark
    out: dict[str, Any] = {}
    for batch in plan.scheduler_batches:
        sps = sps_by_batch[batch]
        sweep_chunks = [
            c for k in calibration for c in batched(calibration[k], batch)[: plan.sweep_chunks]
        ]

        def fixed_at(length: int, sps: Callable[[int], float] = sps) -> Decoder:
            return speculative_decoder(
                target, dspark, setting, 1.0, FixedGamma(length), seed + 40, sps, sts
            )

        best, sweep = best_fixed_gamma(
            fixed_at,
            range(1, gamma + 1),
            sweep_chunks,
            seed + 41,
        )
        print(f"B={batch}: fixed-gamma sweep (full-batch tok/s) {sweep}; best gamma {best}")
        labels = {
            "algorithm1": "Algorithm 1",
            "best_fixed": f"fixed gamma={best} (best of the sweep)",
            "threshold": f"static threshold a>={plan.threshold}",
        }
        schedules = {
            labels["algorithm1"]: Algorithm1(),
            labels["best_fixed"]: FixedGamma(best),
            labels["threshold"]: StaticThreshold(plan.threshold),
        }
        per_domain: dict[str, Any] = {}
        pooled: dict[str, list[DecodeResult]] = {}
        for domain, domain_prompts in evaluation.items():
            chunks = batched(domain_prompts[: batch * plan.scheduler_chunks], batch)
            decoders: dict[str, Decoder] = {
                label: speculative_decoder(target, dspark, setting, 1.0, schedule, seed, sps, sts)
                for label, schedule in schedules.items()
            }
            decoders["target only"] = target_decoder(target, setting, 1.0, seed + 1)
            runs = interleaved(decoders, chunks, seed + batch)
            rows: dict[str, Any] = {}
            for label, decoded in runs.items():
                pooled.setdefault(label, []).extend(decoded)
                speed = speed_entry(decoded, runs["target only"])
                if label == "target only":
                    rows[label] = {"tau": 1.0, **speed}
                else:
                    rows[label] = {
                        **summary(decoded, gamma),
                        **speed,
                        "breakdown_ms": phase_breakdown(decoded),
                    }
            per_domain[domain] = rows
        tests = scheduler_test(
            pooled,
            labels["algorithm1"],
            [labels["best_fixed"], labels["threshold"]],
            SIGN_TEST_ALPHA,
            SIGN_TEST_SLOWER_SHARE,
        )
        out[str(batch)] = {
            "best_fixed_gamma": best,
            "sweep_full_batch_tokens_per_second": sweep,
            "domains": per_domain,
            "sign_tests": tests,
            "chunks": len(pooled[labels["algorithm1"]]),
        }
        whole = tests[labels["best_fixed"]]["whole_decode"]
        print(
            f"B={batch}: Algorithm 1 / best fixed median {whole['median_ratio']:.3f}, "
            f"slower on {whole['slower']}/{whole['n']} chunks, p = {whole['p_value']:.3g}"
        )
    return out


def lossless_checks(
    models: Models,
    plan: Plan,
    prompts: dict[str, list[list[int]]],
    sts: Sequence[float],
    sps: Callable[[int], float],
    best_gamma: int,
    seed: int,
) -> list[dict[str, Any]]:
    """Every decoder of the tables, on each domain's first evaluation prompt (the DSpark
    variants other than Algorithm 1 on the first domain only, to bound the run's time)."""
    gamma = plan.dspark.gamma
    target, dspark, eagle = models.target, models.dspark, models.eagle
    first_domain = next(iter(prompts))
    checks: list[tuple[str, str, Drafter, Schedule, Sequence[float] | None, VerifyStep]] = []
    for domain in prompts:
        checks.append(("dspark + algorithm1 (STS)", domain, dspark, Algorithm1(), sts, FAST_VERIFY))
        checks.append(
            (f"eagle + fixed gamma={gamma}", domain, eagle, FixedGamma(), None, FAST_VERIFY)
        )
    checks += [
        (
            f"dspark + fixed gamma={best_gamma}",
            first_domain,
            dspark,
            FixedGamma(best_gamma),
            sts,
            FAST_VERIFY,
        ),
        (
            f"dspark + static threshold a>={plan.threshold}",
            first_domain,
            dspark,
            StaticThreshold(plan.threshold),
            sts,
            FAST_VERIFY,
        ),
        (
            "dspark + algorithm1 (STS), specproof.optimized.chain_verify",
            first_domain,
            dspark,
            Algorithm1(),
            sts,
            optimized_chain_verify,
        ),
    ]
    alpha_each = 1e-6 / len(checks)
    samples = required_samples(
        plan.lossless_delta, alpha_each, LOSSLESS_BETA, RANK_CELLS + 1, LOSSLESS_TOLERANCE
    )
    laws: dict[str, tuple[dict[tuple[int, ...], float], float]] = {}
    out = []
    for label, domain, drafter, schedule, temps, verify in checks:
        prompt = prompts[domain][0]
        if domain not in laws:
            laws[domain] = (first_tokens_law(target, prompt, 2), float32_gap(target, prompt))
        law, gap = laws[domain]
        counts = sample_first_tokens(
            target,
            drafter,
            prompt,
            2,
            samples,
            schedule=schedule,
            sps=sps,
            confidence_temperatures=temps,
            batch=plan.lossless_batch,
            seed=seed + 600,
            verify=verify,
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
        out.append({**fit.as_dict(), "float32_gap": gap, "domain": domain, "decoder": label})
    return out


def run(
    plan: Plan,
    budget_minutes: float,
    out: Path,
    artifacts: Path,
    seed: int,
    markdown_path: Path = Path("BENCHMARKS.md"),
    weights: Path | None = None,
) -> dict[str, Any]:
    """Train (or, with ``weights``, load the shipped models), measure, write the tables."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    budget = budget_minutes * 60
    print(f"budget {budget_minutes} min; loading corpora")
    corpora: dict[str, Corpus] = load_corpora()
    if weights is None:
        models = train_from_scratch(plan, budget, artifacts, corpora, seed)
    else:
        models = load_shipped(weights)
        plan = replace(
            plan,
            target=models.target.config,
            dspark=models.dspark.config,
            eagle=models.eagle.config,
        )
    target, dspark, eagle = models.target, models.dspark, models.eagle
    held_out = {
        k: WindowSampler({k: c.stream("evaluation")}, {k: 1.0}, seed + 1)
        for k, c in corpora.items()
    }
    bits = {
        k: bits_per_byte(target, s, plan.bits_batches, plan.target_batch, plan.window)
        for k, s in held_out.items()
    }
    print(f"held-out bits per byte: {bits}")
    training_seconds = time.perf_counter() - started
    print(f"models ready at {training_seconds:.0f}s; measuring")

    gamma = plan.dspark.gamma
    fixed = FixedGamma()
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
    # separately at each decoding temperature (both domains pooled).
    sts_fits: dict[str, dict[str, Any]] = {}
    for temperature in TEMPERATURES:
        decode = speculative_decoder(target, dspark, setting, temperature, fixed, seed + 100)
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
        chunks = batched(prompts["evaluation"][domain][: plan.evaluation_prompts], plan.requests)
        for temperature in TEMPERATURES:
            key = f"{domain}/T={temperature:g}"
            runs = interleaved(
                {
                    "dspark": speculative_decoder(
                        target, dspark, setting, temperature, fixed, seed + 200
                    ),
                    "eagle": speculative_decoder(
                        target, eagle, setting, temperature, fixed, seed + 200
                    ),
                    "target": target_decoder(target, setting, temperature, seed + 300),
                },
                chunks,
                seed + 250,
            )
            row: dict[str, Any] = {
                name: {
                    **summary(runs[name], gamma),
                    **speed_entry(runs[name], runs["target"]),
                    "breakdown_ms": phase_breakdown(runs[name]),
                }
                for name in ("dspark", "eagle")
            }
            row["target_only_tokens_per_second"] = tokens_per_second(runs["target"])
            calibration_table[key] = calibration_entry(runs["dspark"], temperature, sts_fits)
            evaluation[key] = row
            print(
                f"{key}: DSpark tau {row['dspark']['tau']:.3f}, EAGLE tau {row['eagle']['tau']:.3f}"
            )

    # Teacher-forced agreement with the target on real text and on its own greedy text (what
    # temperature-0 decoding feeds the drafters).
    agreement = {
        domain: agreement_table(
            target,
            dspark,
            eagle,
            WindowSampler({domain: c.stream("evaluation")}, {domain: 1.0}, seed + 5).batch(
                plan.agreement_windows, plan.window
            ),
            plan.prompt_length,
        )
        for domain, c in corpora.items()
    }
    print(
        "greedy-text argmax agreement, first draft: "
        + ", ".join(
            f"{d} DSpark {a['greedy']['dspark']['argmax_agreement'][0]:.2f} "
            f"EAGLE {a['greedy']['eagle']['argmax_agreement'][0]:.2f}"
            for d, a in agreement.items()
        )
    )

    profile_chunks = {
        batch: [c for k in corpora for c in batched(prompts["calibration"][k], batch)]
        for batch in sorted({1, plan.requests, *plan.scheduler_batches})
    }
    profiles: dict[int, SpsProfile] = {}
    for batch, chunks in profile_chunks.items():
        usable = [c for c in chunks if len(c) == batch]
        profiles[batch] = profile_sps(
            target,
            dspark,
            usable,
            plan.sps_new_tokens,
            seed,
            sweeps=plan.sps_sweeps,
            max_seconds=plan.sps_seconds * (1 + batch / 8),
            verify=FAST_VERIFY,
        )
        profile = profiles[batch]
        print(
            f"SPS profile at {batch} request(s): {profile.sweeps} sweeps in "
            f"{profile.seconds:.0f}s; fitted {profile.step_fit[0]:.0f} steps/s at "
            f"B={profile.batch_sizes[0]}, {profile.step_fit[-1]:.0f} at B={profile.batch_sizes[-1]}"
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

    threshold = StaticThreshold(plan.threshold)
    schedulers: dict[str, Any] = {}
    for domain in corpora:
        decoders: dict[str, Decoder] = {
            label: speculative_decoder(target, dspark, setting, 1.0, schedule, seed + 400, sps, sts)
            for label, schedule in (
                ("algorithm1", Algorithm1()),
                (f"fixed gamma={gamma}", fixed),
                (f"static threshold a>={plan.threshold}", threshold),
            )
        }
        decoders[f"EAGLE-style, fixed gamma={gamma}"] = speculative_decoder(
            target, eagle, setting, 1.0, fixed, seed + 400
        )
        decoders["target only"] = target_decoder(target, setting, 1.0, seed + 500)
        chunks = batched(prompts["evaluation"][domain][: plan.evaluation_prompts], plan.requests)
        schedulers[domain] = compare(
            decoders, chunks, seed, lambda decoded: summary(decoded, gamma)
        )
        print(
            f"schedulers on {domain}: "
            + ", ".join(
                f"{k} {v['tokens_per_second']:.0f} tok/s (x{v['speed_vs_target']:.2f})"
                for k, v in schedulers[domain].items()
            )
        )
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
        "verifier": "specproof.e2e.verify.generator_chain_verify (losslessness also checked "
        "through specproof.optimized.chain_verify)",
        "budget_minutes": budget_minutes,
        "plan": json.loads(json.dumps(asdict(plan), default=str)),
        "corpora": {k: c.sizes() for k, c in corpora.items()},
        "parameters": {
            "target": parameter_count(target),
            "dspark": parameter_count(dspark),
            "eagle": parameter_count(eagle),
        },
        "training": models.training,
        "held_out_bits_per_byte": bits,
        "sts_temperatures": sts,
        "sts_fits": sts_fits,
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
    parser.add_argument(
        "--from-scratch",
        action="store_true",
        help="train a small target and both drafters within the budget instead of loading the "
        "shipped weights (always so with --smoke)",
    )
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR, help="shipped weights")
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
    return run(plan, budget, args.out, args.artifacts, args.seed, args.markdown, weights)


if __name__ == "__main__":
    main()
