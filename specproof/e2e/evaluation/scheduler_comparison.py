"""Algorithm 1 against the best fixed gamma of a sweep and both static thresholds, with sign
tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specproof.reference.schedulers import Algorithm1, FixedGamma, StaticThreshold

from ..decoding.rounds import DecodeResult
from ..decoding.schedules import PerPositionThreshold
from ..models.loading import Models
from ..plans import SIGN_TEST_ALPHA, SIGN_TEST_SLOWER_SHARE, Plan
from .comparisons import (
    Setting,
    best_fixed_gamma,
    compare,
    phase_breakdown,
    scheduler_test,
    speculative_decoder,
    target_decoder,
)
from .measurements import batched, summary
from .paired_runs import Decoder, interleaved, speed_entry


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
    thresholds (the paper's on a_k, the release's per-position one on c_k) at each batch size,
    temperature 1, with sign tests over the pooled chunks."""
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
            "per_position": f"per-position threshold c>={plan.threshold}",
        }
        schedules = {
            labels["algorithm1"]: Algorithm1(),
            labels["best_fixed"]: FixedGamma(best),
            labels["threshold"]: StaticThreshold(plan.threshold),
            labels["per_position"]: PerPositionThreshold(plan.threshold),
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
            [labels["best_fixed"], labels["threshold"], labels["per_position"]],
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


def compare_at_requests(
    models: Models,
    plan: Plan,
    setting: Setting,
    evaluation: dict[str, list[list[int]]],
    sts: Sequence[float],
    sps: Callable[[int], float],
    seed: int,
) -> dict[str, Any]:
    """Per domain at ``plan.requests`` requests, temperature 1: DSpark under Algorithm 1, the
    full block and the static threshold, EAGLE-3 at the full block, and the target alone."""
    gamma = plan.dspark.gamma
    target, dspark = models.target, models.dspark
    out: dict[str, Any] = {}
    for domain, prompts in evaluation.items():
        decoders: dict[str, Decoder] = {
            label: speculative_decoder(target, dspark, setting, 1.0, schedule, seed + 400, sps, sts)
            for label, schedule in (
                ("algorithm1", Algorithm1()),
                (f"fixed gamma={gamma}", FixedGamma()),
                (f"static threshold a>={plan.threshold}", StaticThreshold(plan.threshold)),
            )
        }
        decoders[f"EAGLE-3, fixed gamma={gamma}"] = speculative_decoder(
            target, models.eagle, setting, 1.0, FixedGamma(), seed + 400
        )
        decoders["target only"] = target_decoder(target, setting, 1.0, seed + 500)
        chunks = batched(prompts[: plan.evaluation_prompts], plan.requests)
        out[domain] = compare(decoders, chunks, seed, lambda decoded: summary(decoded, gamma))
        print(
            f"schedulers on {domain}: "
            + ", ".join(
                f"{k} {v['tokens_per_second']:.0f} tok/s (x{v['speed_vs_target']:.2f})"
                for k, v in out[domain].items()
            )
        )
    return out
