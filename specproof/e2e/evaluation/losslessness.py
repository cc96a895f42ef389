"""End-to-end losslessness: the first tokens the speculative decoder emits after a fixed prompt
follow the target's own sampling law.

The exact law of the first ``n_tokens`` (1 or 2) comes from the target's whole-window
forward pass, float64 softmax of its logits. Many requests decode the same prompt in one
batch; with a non-anticipating scheduler their outputs are independent draws from that law
(the reference's lossless matrix checks the joint law of several requests exactly), so the
counts go to :func:`specproof.stats.goodness_of_fit` through a hash partition of the outcomes.
The sampler computes in float32, so the null is "within ``tolerance`` of the float64 law in
TV"; :func:`float32_gap` measures the first-token part of that gap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import torch

from specproof.stats import FitResult, HashPartition, goodness_of_fit

from ..decoding.rounds import (
    Drafter,
    Schedule,
    VerifyStep,
    optimized_chain_verify,
    speculative_generate,
)
from ..models.target import Target


@torch.no_grad()
def first_tokens_law(
    target: Target, prompt: Sequence[int], n_tokens: int, temperature: float = 1.0
) -> dict[tuple[int, ...], float]:
    """Exact law (float64) of the first 1 or 2 tokens sampled from the target after ``prompt``."""
    if n_tokens not in (1, 2):
        raise ValueError("n_tokens must be 1 or 2")
    tokens = torch.tensor([list(prompt)])
    first = torch.softmax(target(tokens).logits[0, -1].double() / temperature, dim=-1)
    vocab = first.shape[0]
    if n_tokens == 1:
        return {(v,): float(first[v]) for v in range(vocab)}
    extended = torch.cat((tokens.expand(vocab, -1), torch.arange(vocab)[:, None]), dim=1)
    second = torch.softmax(target(extended).logits[:, -1].double() / temperature, dim=-1)
    joint = first[:, None] * second
    return {(v, w): float(joint[v, w]) for v in range(vocab) for w in range(vocab)}


@torch.no_grad()
def float32_gap(target: Target, prompt: Sequence[int], temperature: float = 1.0) -> float:
    """TV between the decoder's float32 first-token row (cached pass) and the float64 law."""
    exact = torch.softmax(
        target(torch.tensor([list(prompt)])).logits[0, -1].double() / temperature, dim=-1
    )
    cache = target.new_cache(1)
    tokens = torch.tensor([list(prompt)])
    count = torch.tensor([len(prompt)])
    row = target.extend(tokens, count, cache).logits[0, len(prompt) - 1]
    decoder = torch.softmax(row.float() / temperature, dim=-1).double()
    return float(0.5 * (decoder - exact).abs().sum())


def sample_first_tokens(
    target: Target,
    drafter: Drafter,
    prompt: Sequence[int],
    n_tokens: int,
    samples: int,
    *,
    schedule: Schedule,
    sps: Callable[[int], float] | None = None,
    confidence_temperatures: Sequence[float] | None = None,
    temperature: float = 1.0,
    batch: int = 2000,
    seed: int = 0,
    verify: VerifyStep = optimized_chain_verify,
) -> Counter[tuple[int, ...]]:
    """Counts of the first ``n_tokens`` emitted, over ``samples`` requests of ``prompt``."""
    counts: Counter[tuple[int, ...]] = Counter()
    done = 0
    call = 0
    while done < samples:
        size = min(batch, samples - done)
        result = speculative_generate(
            target,
            drafter,
            [list(prompt)] * size,
            n_tokens,
            temperature=temperature,
            schedule=schedule,
            sps=sps,
            confidence_temperatures=confidence_temperatures,
            seed=seed * 1_000_003 + call,
            verify=verify,
        )
        counts.update(tuple(t) for t in result.tokens)
        done += size
        call += 1
    return counts


def rank_cells(law: dict[tuple[int, ...], float], top: int = 3) -> dict[tuple[int, ...], int]:
    """A partition fixed by the exact law alone: each token's rank under the target (its
    marginal for the first token, its conditional given the first for the second), capped
    at ``top - 1``; the cell is the tuple of capped ranks, numbered. It separates samplers
    that favour or shun the target's likeliest tokens, which hash bins average away."""
    first: dict[int, float] = {}
    for outcome, mass in law.items():
        first[outcome[0]] = first.get(outcome[0], 0.0) + mass
    rank1 = {v: i for i, v in enumerate(sorted(first, key=lambda v: (-first[v], v)))}
    rank2: dict[tuple[int, int], int] = {}
    if any(len(o) == 2 for o in law):
        by_first: dict[int, list[tuple[float, int]]] = {}
        for outcome, mass in law.items():
            by_first.setdefault(outcome[0], []).append((-mass, outcome[1]))
        for v, items in by_first.items():
            for i, (_, w) in enumerate(sorted(items)):
                rank2[(v, w)] = i
    cells = {}
    for outcome in law:
        r1 = min(rank1[outcome[0]], top - 1)
        r2 = min(rank2[(outcome[0], outcome[1])], top - 1) if len(outcome) == 2 else 0
        cells[outcome] = r1 * top + r2
    return cells


def losslessness_test(
    counts: Counter[tuple[int, ...]],
    law: dict[tuple[int, ...], float],
    *,
    alpha: float,
    beta: float,
    delta: float,
    tolerance: float,
    bins: int = 8,
    salt: int = 0,
    partition: str = "rank",
    name: str = "",
) -> FitResult:
    """Goodness of fit of the counts to the exact law over a fixed partition of outcomes:
    ``rank`` (:func:`rank_cells`, 9 cells) or ``hash`` (``bins`` hash cells).

    False fail at most ``alpha`` when the sampler is within ``tolerance`` of the law; power
    at least 1 - ``beta`` against any sampler whose law pushed through the partition is at
    TV >= ``delta``, once the sample count reaches ``result.required_n`` (``result.powered``).
    """
    if partition == "hash":
        return goodness_of_fit(
            counts,
            law,
            alpha=alpha,
            beta=beta,
            delta=delta,
            tolerance=tolerance,
            partition=HashPartition(bins, salt),
            name=name,
        )
    cells = rank_cells(law)
    binned_law: dict[int, float] = {}
    for outcome, mass in law.items():
        binned_law[cells[outcome]] = binned_law.get(cells[outcome], 0.0) + mass
    binned: Counter[int] = Counter()
    for outcome, count in counts.items():
        binned[cells.get(outcome, -1)] += count
    return goodness_of_fit(
        binned, binned_law, alpha=alpha, beta=beta, delta=delta, tolerance=tolerance, name=name
    )
