"""The batched chain verifier of the speed tables (specproof.e2e.decoding.verifier).

Statistical tests: each has false-fail rate alpha = 2.5e-7 (1e-6 for the file, four tests),
valid for every sample size (specproof.stats' non-asymptotic bound), null "within TV 1e-4 of
the exact law" (float32 rows). With n = required_samples, each rejects any sampler at TV >=
0.05 from the law, over its 5 outcomes (6 cells with the tolerance's), with probability >=
1 - 1e-3. The lossy mutant below is at TV 0.2 from the law, so the last test's chance to pass
wrongly is at most 1e-3.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from specproof.e2e.decoding.verifier import batched_chain_verify
from specproof.stats import goodness_of_fit, required_samples

ALPHA = 2.5e-7
BETA = 1e-3
DELTA = 0.05
TOLERANCE = 1e-4
VOCAB = 5
P = torch.tensor(
    [
        [0.50, 0.20, 0.15, 0.10, 0.05],
        [0.05, 0.05, 0.60, 0.20, 0.10],
        [0.20, 0.20, 0.20, 0.20, 0.20],
    ]
)
Q = torch.tensor([[0.10, 0.30, 0.30, 0.20, 0.10], [0.30, 0.10, 0.20, 0.20, 0.20]])


def samples() -> int:
    return required_samples(DELTA, ALPHA, BETA, VOCAB + 1, TOLERANCE)


def drafted(n: int, seed: int) -> torch.Tensor:
    """Drafts x_k ~ q_k, independently per row (the drafter's randomness)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.stack(
        [torch.multinomial(Q[k], n, replacement=True, generator=generator) for k in range(2)], 1
    )


def first_token_counts(
    n: int, lengths: int, seed: int, verify: object = batched_chain_verify
) -> Counter[int]:
    tokens = drafted(n, seed)
    out, accepted = verify(  # type: ignore[operator]
        P.expand(n, -1, -1),
        Q.expand(n, -1, -1),
        tokens,
        torch.full((n,), lengths),
        temperature=1.0,
        generator=torch.Generator().manual_seed(seed + 1),
    )
    assert bool((accepted <= lengths).all())
    return Counter(out[:, 0].tolist())


def law_of(row: torch.Tensor) -> dict[int, float]:
    values = row.double() / row.double().sum()
    return {v: float(values[v]) for v in range(VOCAB)}


@pytest.mark.parametrize("lengths", [1, 2])
def test_first_emitted_token_follows_the_target(lengths: int) -> None:
    """Whatever is drafted and however many drafts are verified, the first emitted token is
    distributed as p_1: speculative sampling's lossless property, with no rule re-derived."""
    counts = first_token_counts(samples(), lengths, seed=lengths)
    fit = goodness_of_fit(
        counts, law_of(P[0]), alpha=ALPHA, beta=BETA, delta=DELTA, tolerance=TOLERANCE
    )
    assert fit.powered and not fit.rejected, fit.describe()


def test_without_drafts_the_token_is_drawn_from_the_first_row() -> None:
    n = samples()
    out, accepted = batched_chain_verify(
        P.expand(n, -1, -1),
        Q.expand(n, -1, -1),
        drafted(n, 3),
        torch.zeros(n, dtype=torch.int64),
        temperature=1.0,
        generator=torch.Generator().manual_seed(4),
    )
    assert bool((accepted == 0).all()) and bool((out[:, 1:] == -1).all())
    fit = goodness_of_fit(
        Counter(out[:, 0].tolist()),
        law_of(P[0]),
        alpha=ALPHA,
        beta=BETA,
        delta=DELTA,
        tolerance=TOLERANCE,
    )
    assert fit.powered and not fit.rejected, fit.describe()


def test_a_verifier_that_resamples_from_p_after_a_rejection_is_caught() -> None:
    """The mutant draws the token after a rejection from p instead of norm(max(0, p - q)):
    its first-token law is 0.2 away from p_1 in TV, and the same test rejects it."""

    def from_p(
        target: torch.Tensor,
        draft: torch.Tensor,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        *,
        temperature: float,
        generator: torch.Generator,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.arange(len(tokens))
        x = tokens[:, 0]
        u = torch.rand(len(tokens), generator=generator, dtype=torch.float64)
        keep = u * draft[rows, 0, x].double() < target[rows, 0, x].double()
        fallback = torch.multinomial(target[:, 0], 1, generator=generator)[:, 0]
        out = torch.full((len(tokens), tokens.shape[1] + 1), -1)
        out[:, 0] = torch.where(keep, x, fallback)
        return out, keep.to(torch.int64)

    counts = first_token_counts(samples(), 1, seed=5, verify=from_p)
    fit = goodness_of_fit(
        counts, law_of(P[0]), alpha=ALPHA, beta=BETA, delta=DELTA, tolerance=TOLERANCE
    )
    assert fit.rejected, fit.describe()


def test_greedy_accepts_the_argmax_prefix_and_emits_the_argmax() -> None:
    target = torch.zeros(3, 4, VOCAB)
    target[:, 0, 1] = target[:, 1, 2] = target[:, 2, 3] = target[:, 3, 4] = 1.0
    tokens = torch.tensor([[1, 2, 3], [1, 0, 3], [0, 2, 3]])
    out, accepted = batched_chain_verify(
        target,
        torch.full((3, 3, VOCAB), 1 / VOCAB),
        tokens,
        torch.tensor([3, 3, 2]),
        temperature=0.0,
        generator=torch.Generator().manual_seed(0),
    )
    assert accepted.tolist() == [3, 1, 0]
    assert out.tolist() == [[1, 2, 3, 4], [1, 2, -1, -1], [1, -1, -1, -1]]
