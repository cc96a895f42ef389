"""End to end: the speculative decoder's first two tokens follow the target's own law.

Error rates: each of the two decoder tests has false-fail rate alpha = 5e-7 (1e-6 for the
file), valid for every sample size (specproof.stats' non-asymptotic bound), under the null
"the sampler is within TV 1e-4 of the float64 law" (float32 arithmetic; the measured
first-token gap is asserted far below that). With n = required_samples, each test rejects
any sampler whose law, pushed through the 9 rank cells of
specproof.e2e.evaluation.losslessness.rank_cells, is at TV >= 0.05 with probability
>= 1 - 1e-3.
"""

from __future__ import annotations

import pytest
import torch
from e2e.toy_models import ToyModels, toy_models
from specproof.reference.schedulers import Algorithm1, FixedGamma

from specproof.e2e.evaluation.losslessness import (
    first_tokens_law,
    float32_gap,
    losslessness_test,
    sample_first_tokens,
)
from specproof.e2e.models.dspark import DSparkDrafter
from specproof.stats import required_samples

ALPHA = 5e-7
BETA = 1e-3
DELTA = 0.05
TOLERANCE = 1e-4
BINS = 9
PROMPT = [ord(c) for c in "for x in"]
REQUESTS = 2000


def sps(batch: int) -> float:
    """A synthetic falling curve under which Algorithm 1 admits some drafts, not all."""
    return 1.0 / (1.0 + 0.5 * batch / REQUESTS)


@pytest.fixture(scope="module")
def models() -> ToyModels:
    torch.set_num_threads(1)
    return toy_models(seed=2)


@pytest.fixture(scope="module")
def law(models: ToyModels) -> dict[tuple[int, ...], float]:
    assert float32_gap(models.target, PROMPT) < TOLERANCE / 100
    return first_tokens_law(models.target, PROMPT, 2)


def samples_needed() -> int:
    # BINS + 1 cells: the tolerance adds a cell for outcomes outside the support.
    return required_samples(DELTA, ALPHA, BETA, BINS + 1, TOLERANCE)


@pytest.mark.parametrize("decoder", ["dspark+algorithm1", "eagle+fixed"])
def test_first_tokens_follow_the_target_law(
    models: ToyModels, law: dict[tuple[int, ...], float], decoder: str
) -> None:
    if decoder == "dspark+algorithm1":
        drafter, schedule = models.dspark, Algorithm1()
    else:
        drafter, schedule = models.eagle, FixedGamma()
    counts = sample_first_tokens(
        models.target,
        drafter,
        PROMPT,
        2,
        samples_needed(),
        schedule=schedule,
        sps=sps,
        batch=REQUESTS,
        seed=11,
    )
    fit = losslessness_test(
        counts,
        law,
        alpha=ALPHA,
        beta=BETA,
        delta=DELTA,
        tolerance=TOLERANCE,
        bins=BINS,
        name=decoder,
    )
    assert fit.powered, fit.describe()
    assert not fit.rejected, fit.describe()


def test_a_lossy_verifier_is_caught(models: ToyModels, law: dict[tuple[int, ...], float]) -> None:
    """Accepting every draft of an untrained drafter emits its law; the same test rejects it."""
    torch.manual_seed(5)
    untrained = DSparkDrafter(models.target, models.dspark.config).eval()

    def accept_all(
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        lengths: torch.Tensor,
        **_: object,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        n = draft_tokens.shape[1]
        bonus = target_probs[torch.arange(len(lengths)), lengths].argmax(-1, keepdim=True)
        tokens = torch.cat((draft_tokens, torch.zeros_like(bonus)), dim=1)
        tokens[torch.arange(len(lengths)), lengths] = bonus[:, 0]
        return torch.where(torch.arange(n + 1)[None] <= lengths[:, None], tokens, -1), lengths

    counts = sample_first_tokens(
        models.target,
        untrained,
        PROMPT,
        2,
        4000,
        schedule=FixedGamma(),
        batch=REQUESTS,
        seed=12,
        verify=accept_all,
    )
    fit = losslessness_test(
        counts, law, alpha=ALPHA, beta=BETA, delta=DELTA, tolerance=TOLERANCE, bins=BINS
    )
    assert fit.rejected, fit.describe()
