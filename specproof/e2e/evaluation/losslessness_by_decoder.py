"""Losslessness end to end for every decoder of the tables: the first tokens each decoder emits
against the target's own law."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specproof.reference.schedulers import Algorithm1, FixedGamma, StaticThreshold
from specproof.stats import required_samples

from ..decoding.rounds import Drafter, Schedule, VerifyStep, optimized_chain_verify
from ..decoding.schedules import PerPositionThreshold
from ..models.loading import Models
from ..plans import FAST_VERIFY, LOSSLESS_BETA, LOSSLESS_TOLERANCE, RANK_CELLS, Plan
from .losslessness import first_tokens_law, float32_gap, losslessness_test, sample_first_tokens


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
            f"dspark + per-position threshold c>={plan.threshold}",
            first_domain,
            dspark,
            PerPositionThreshold(plan.threshold),
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
