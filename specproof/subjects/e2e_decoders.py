"""specproof's own end-to-end decoders (:mod:`specproof.e2e`, the shipped byte-level models) as
audited engines.

``generate_many`` is one batched call of :func:`specproof.e2e.decoding.rounds.speculative_generate`
(its requests are independent draws under a non-anticipating scheduler); ``target_probs`` is
the target's plain whole-window forward pass, tempered as the decoder tempers it. V = 256 bytes
and no EOS, so the audit runs the support, PIT and coverage rows (and greedy at T = 0).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import torch

from specproof.audit.engine.subject import Emission, Engine

PROMPT = tuple(b"def main(")
THRESHOLD = Fraction(1, 2)


def sps_for(requests: int) -> Callable[[int], float]:
    """A steps-per-second curve for Algorithm 1's walk over ``requests`` requests: the shipped
    target's batch-1 cost (a pass over 8 tokens costs about 1.45 decoding steps) per request,
    so that each request of the audit's large batches sees the batch-1 trade-off. The output's
    law does not depend on the curve."""

    def sps(tokens: int) -> float:
        return 1.0 / (1.0 + 0.06 * tokens / requests)

    return sps


@functools.cache
def shipped_models() -> Any:
    from specproof.e2e.models.loading import SHIPPED_DIR, load_models

    return load_models(SHIPPED_DIR)


def e2e_engine(name: str, drafter: str, schedule: Any, temperature: float = 1.0) -> Engine:
    """The shipped target with its ``drafter`` ("dspark" or "eagle") under ``schedule``."""
    from specproof.e2e.decoding.rounds import speculative_generate
    from specproof.e2e.models.drafting import tempered_probs

    models = shipped_models()
    target, model = models.target, getattr(models, drafter)

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return tempered_probs(target(sequences).logits, temperature)

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        result = speculative_generate(
            target,
            model,
            [list(p) for p in prompts],
            num_new_tokens,
            temperature=temperature,
            schedule=schedule,
            sps=sps_for(len(prompts)),
            seed=seed,
        )
        rounds = tuple(
            (s, a)
            for log in result.rounds
            for s, a in zip(log.scheduled, log.accepted, strict=True)
        )
        # The batch's rounds are not split by request; the coverage row only pools them.
        emissions = [Emission(tuple(tokens)) for tokens in result.tokens]
        emissions[0] = Emission(emissions[0].tokens, rounds)
        return emissions

    def generate(prompt: Any, num_new_tokens: int, seed: int) -> Emission:
        return generate_many([tuple(prompt)], num_new_tokens, seed)[0]

    return Engine(
        name=name,
        generate=generate,
        target_probs=target_probs,
        prompt=PROMPT,
        eos=None,
        greedy=temperature == 0,
        max_draft=model.gamma,
        generate_many=generate_many,
    )


def dspark_algorithm1() -> Engine:
    from specproof.reference.schedulers import Algorithm1

    return e2e_engine("dspark + algorithm1", "dspark", Algorithm1())


def dspark_static_threshold() -> Engine:
    from specproof.reference.schedulers import StaticThreshold

    return e2e_engine(
        f"dspark + static threshold {THRESHOLD}", "dspark", StaticThreshold(THRESHOLD)
    )


def eagle_fixed_gamma() -> Engine:
    from specproof.reference.schedulers import FixedGamma

    return e2e_engine("eagle + fixed gamma", "eagle", FixedGamma())


def dspark_algorithm1_greedy() -> Engine:
    from specproof.reference.schedulers import Algorithm1

    return e2e_engine("dspark + algorithm1, T = 0", "dspark", Algorithm1(), temperature=0.0)


E2E_DECODERS: dict[str, Callable[[], Engine]] = {
    "DSpark + Algorithm 1": dspark_algorithm1,
    "DSpark + static threshold": dspark_static_threshold,
    "EAGLE-3, fixed gamma": eagle_fixed_gamma,
    "DSpark + Algorithm 1, T = 0": dspark_algorithm1_greedy,
}
