"""The best draft law for a group of target laws, and the per-context ceiling estimates.

Speculative sampling accepts a draft from q at a slot whose target law is p with probability
sum_x min(p(x), q(x)) = 1 - TV(p, q). A drafter that cannot tell apart the situations i of a
group (it sees the same inputs in each) must use one q for all of them; the best such q
maximises the group's mean acceptance

    F(q) = (1 / n) sum_i sum_x min(p_i(x), q(x))

over the simplex. F is separable over x: F(q) = sum_x g_x(q(x)) with g_x concave, piecewise
linear and increasing, of slope j / n where exactly j of the p_i(x) exceed q(x). So the exact
optimum fills one unit of mass into the steepest pieces first (:func:`best_pooled_law`).

Per context, from n target continuations sampled with their teacher-forced laws
(:mod:`.block_laws`), slot k's groups are: every sample (the marginal drafter, which sees the
context only) or the samples sharing x_{k-1} (the vanilla-Markov drafter, which also sees the
previous byte). Two estimates bracket the ceiling E[max_q F]:

- in sample (upper): q fitted and scored on the same samples. Its expectation is at least the
  ceiling (the mean of a maximum is at least the maximum of the mean); with one sample in a
  group it is 1.
- split (lower): cross-fitted over ``FOLDS`` folds of the samples: each sample is scored under
  the q fitted on the other folds. Each fitted q is a drafter of the family, scored on samples
  it never saw, so the expectation is that drafter's acceptance, at most the ceiling. A Markov
  group absent from the fitting folds gets their marginal law (still a function of the context
  and x_{k-1}). The bias of both shrinks as the groups fill; the gap between them bounds it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

FOLDS = 8
"""Folds of the split estimate: each q is fitted on 7/8 of the samples."""


class PooledLaw(NamedTuple):
    law: np.ndarray
    """The best q [V]."""
    acceptance: float
    """Its mean acceptance over the group's laws."""


def acceptance(laws: np.ndarray, draft: np.ndarray) -> np.ndarray:
    """sum_x min(p(x), q(x)) per row of ``laws`` [n, V] against one ``draft`` [V] or one per row."""
    return np.minimum(laws, draft).sum(axis=-1)


def best_pooled_law(laws: np.ndarray) -> PooledLaw:
    """The q maximising the mean over rows of ``laws`` [n, V] (each a probability vector) of
    sum_x min(p_i(x), q(x)), and that mean: exact, by filling the steepest pieces first."""
    laws = np.asarray(laws, dtype=np.float64)
    if laws.ndim != 2 or len(laws) == 0:
        raise ValueError("need laws as a non-empty [n, V] array")
    count = len(laws)
    ordered = -np.sort(-laws, axis=0)  # row j (0-based): the (j + 1)-th largest p_i(x)
    pieces = ordered - np.vstack((ordered[1:], np.zeros((1, laws.shape[1]))))
    # Piece j covers q(x) in [ordered[j + 1], ordered[j]], where j + 1 of the laws exceed
    # q(x): slope (j + 1) / n. The steepest (j = n - 1, from 0 up to the smallest p_i(x)) first.
    law = np.zeros(laws.shape[1])
    value = 0.0
    left = 1.0
    for j in range(count - 1, -1, -1):
        row = pieces[j]
        total = float(row.sum())
        if total <= 0.0:
            continue
        take = min(1.0, left / total)
        law += take * row
        value += take * total * (j + 1) / count
        left -= take * total
        if left <= 0.0:
            break
    # sum_x max_i p_i(x) >= 1, so the pieces hold a unit of mass up to rounding.
    law /= law.sum()
    return PooledLaw(law, min(value, 1.0))


class SlotEstimates(NamedTuple):
    """Per slot k = 1..K for one context: the mean acceptance of the best drafter of a family,
    in sample (upper) and split (lower)."""

    in_sample: np.ndarray
    split: np.ndarray


def grouped_in_sample(laws: np.ndarray, groups: np.ndarray) -> float:
    """Mean acceptance of the best q per group, fitted and scored on the same rows."""
    total = 0.0
    for group in np.unique(groups):
        rows = laws[groups == group]
        total += len(rows) * best_pooled_law(rows).acceptance
    return total / len(laws)


def grouped_split(laws: np.ndarray, groups: np.ndarray, fit: np.ndarray) -> np.ndarray:
    """Per row not in ``fit`` (a boolean mask): its acceptance under the best q of its group
    fitted on the ``fit`` rows (the fitted rows' pooled law where its group has none there)."""
    fallback = best_pooled_law(laws[fit]).law
    scored = ~fit
    out = np.empty(int(scored.sum()))
    for group in np.unique(groups[scored]):
        fitted = fit & (groups == group)
        draft = best_pooled_law(laws[fitted]).law if fitted.any() else fallback
        picked = groups[scored] == group
        out[picked] = acceptance(laws[scored][picked], draft)
    return out


def split_estimate(laws: np.ndarray, groups: np.ndarray, folds: int = FOLDS) -> float:
    """Cross-fitted mean acceptance: rows i with i % folds == f are scored under the laws
    fitted on the other rows, for each f; the mean over all rows."""
    folds = min(folds, len(laws))
    if folds < 2:
        raise ValueError("the split needs at least two samples")
    fold = np.arange(len(laws)) % folds
    scores = [grouped_split(laws, groups, fold != f) for f in range(folds)]
    return float(np.concatenate(scores).mean())


def context_estimates(
    laws: np.ndarray, previous: np.ndarray
) -> tuple[SlotEstimates, SlotEstimates]:
    """(marginal, Markov) estimates per slot for one context.

    ``laws`` [n, K, V]: the target's law at slot k of sample i given the context and the
    sample's bytes before slot k; ``previous`` [n, K]: x_{k-1} of sample i at slot k (x_0, the
    context's last byte, at slot 1).
    """
    count, slots, _ = laws.shape
    if previous.shape != (count, slots):
        raise ValueError(f"previous has shape {previous.shape}, laws need {(count, slots)}")
    everyone = np.zeros(count, dtype=np.int64)
    results = []
    for grouping in ("marginal", "markov"):
        upper, lower = np.empty(slots), np.empty(slots)
        for k in range(slots):
            groups = everyone if grouping == "marginal" else previous[:, k]
            upper[k] = grouped_in_sample(laws[:, k], groups)
            lower[k] = split_estimate(laws[:, k], groups)
        results.append(SlotEstimates(upper, lower))
    return results[0], results[1]


def survival_weights(ratios: np.ndarray) -> np.ndarray:
    """[n, K] weights prod_{j < k} min(1, q_j(y_j) / p_j(y_j)) from ``ratios`` [n, K] of
    min(1, q_k(y_k) / p_k(y_k)): E over target samples of weight x acceptance at slot k is the
    probability that drafts 1..k are all accepted (the drafter's own drafts, as decoded)."""
    ones = np.ones((len(ratios), 1))
    return np.cumprod(np.hstack((ones, ratios[:, :-1])), axis=1)
