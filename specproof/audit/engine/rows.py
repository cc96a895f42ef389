"""The rows of an engine audit, each from the sampled runs and the target's teacher-forced law.

- ``layout`` (exact): ids outside 0..V-1, a token after EOS, more tokens than asked, fewer
  without an EOS.
- ``support`` (exact): an emitted token whose processed target probability is 0.
- ``exact`` (statistical): the law of the first N tokens against the target's, cell by cell.
- ``exact-binned`` (statistical; where V^N is too large for ``exact``): the same law over the
  target's most probable tokens and "other" bins (:mod:`.binned`).
- ``pit`` (statistical): the randomized probability integral transform of every emitted token,
  U = F(x - 1) + W p(x) with W uniform, is uniform on [0, 1] under the null, and by the chain
  rule the transforms of one run's tokens are independent (a position after EOS has the point
  law at EOS, whose transform is W itself). Binned, they are tested against the uniform law per
  position and pooled; a pooled row alone could hide biases that cancel across positions.
- ``greedy`` (exact): every token is the target's argmax; a mismatch at a near tie (top-2
  margin <= ``near_tie``: :data:`NEAR_TIE`, or the audit's tolerance when that is larger) is
  numerics, one at a clear margin is a bug.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from specproof.stats import FitResult, goodness_of_fit

from ..report import CaseResult, exact_row
from ..settings import ErrorRates
from .binned import BinnedLaw
from .subject import Emission
from .summaries import TokenSummaries, summarise

Rows = TokenSummaries | np.ndarray
"""What the rows read of the target's law behind each token: its summaries, or the rows
[runs, >= tokens, V] themselves."""

NEAR_TIE = 1e-4
"""Top-2 probability margin below which a greedy mismatch is put down to float rounding."""


@dataclass(frozen=True)
class Settings:
    """The audit's error rates (made once, by the command or :func:`.audit.audit_engine`) and
    the PIT rows' bins."""

    rates: ErrorRates
    bins: int


def tested_row(
    case: str, check: str, counts: Mapping[Any, int], law: Mapping[Any, float], settings: Settings
) -> CaseResult:
    """The goodness-of-fit test of ``counts`` against ``law`` at the audit's settings, as a row."""
    rates = settings.rates
    fit = goodness_of_fit(
        counts,
        law,
        alpha=rates.alpha,
        beta=rates.beta,
        delta=rates.delta,
        tolerance=rates.tolerance,
        name=f"{case}/{check}",
    )
    return fit_row(case, check, fit, settings)


def fit_row(case: str, check: str, fit: FitResult, settings: Settings) -> CaseResult:
    """A statistical row: beta is the goal's miss rate, ``power`` what this n reaches against
    delta (short of 1 - beta, the report is inconclusive)."""
    power, rates = fit.power, settings.rates
    relation = ">=" if fit.rejected else "<"
    return CaseResult(
        case=case,
        check=check,
        n=fit.n,
        tv_estimate=fit.tv_estimate,
        bound=fit.bound,
        alpha=rates.alpha,
        beta=rates.beta,
        delta=rates.delta,
        verdict=fit.verdict,
        detail=fit.describe(),
        summary=(
            f"TV estimate {fit.tv_estimate:.4f} {relation} bound {fit.bound:.4f}, "
            f"{fit.cells} cells (power {power:.4f} at TV {rates.delta:g})"
        ),
        power=power,
    )


def summaries_of(runs: Sequence[Emission], rows: Rows) -> TokenSummaries:
    return rows if isinstance(rows, TokenSummaries) else summarise(runs, rows)


def layout_row(
    case: str, runs: Sequence[Emission], vocab: int, eos: frozenset[int], num_new_tokens: int
) -> CaseResult:
    for index, run in enumerate(runs):
        problem = layout_problem(run.tokens, vocab, eos, num_new_tokens)
        if problem:
            count = sum(bool(layout_problem(r.tokens, vocab, eos, num_new_tokens)) for r in runs)
            return exact_row(
                case, "layout", len(runs), "FAIL", f"run {index}: {problem}",
                f"run {index}: {problem} ({count} such runs of {len(runs)})",
            )  # fmt: skip
    return exact_row(case, "layout", len(runs), "pass", "every run well formed")


def layout_problem(
    tokens: tuple[int, ...], vocab: int, eos: frozenset[int], num_new_tokens: int
) -> str:
    if len(tokens) > num_new_tokens:
        return f"{len(tokens)} tokens for {num_new_tokens} asked"
    outside = [t for t in tokens if not 0 <= t < vocab]
    if outside:
        return f"token id {outside[0]} outside 0..{vocab - 1}"
    ended = end_of(tokens[:-1], eos)
    if ended is not None:
        return f"token after EOS at position {ended + 1}"
    if len(tokens) < num_new_tokens and (not tokens or tokens[-1] not in eos):
        return f"{len(tokens)} tokens for {num_new_tokens} asked, without EOS"
    return ""


def support_row(case: str, runs: Sequence[Emission], rows: Rows) -> CaseResult:
    """``rows``: the summaries of the target's law behind each token, or the rows themselves
    (``rows[r, k]`` the law of run r's token k)."""
    mass = summaries_of(runs, rows).mass
    offending = [
        (index, position, token)
        for index, run in enumerate(runs)
        for position, token in enumerate(run.tokens)
        if mass[index, position] == 0
    ]
    if not offending:
        return exact_row(case, "support", len(runs), "pass", "every token has target mass > 0")
    index, position, token = offending[0]
    summary = f"token {token} of target mass 0 at run {index}, position {position + 1}"
    detail = f"{summary}: exact probability 0 ({len(offending)} such tokens)"
    return exact_row(case, "support", len(runs), "FAIL", summary, detail)


def exact_law_row(
    case: str,
    runs: Sequence[Emission],
    law: dict[tuple[int, ...], float],
    tokens: int,
    eos: frozenset[int],
    settings: Settings,
) -> CaseResult:
    counts = Counter(first_tokens(run.tokens, tokens, eos) for run in runs)
    return tested_row(case, f"exact(N={tokens})", counts, law, settings)


def binned_law_row(
    case: str,
    runs: Sequence[Emission],
    binned: BinnedLaw,
    eos: frozenset[int],
    settings: Settings,
) -> CaseResult:
    """The binned law of the first N tokens (:mod:`.binned`) against the runs' cells."""
    counts = Counter(binned.cell(first_tokens(run.tokens, binned.tokens, eos)) for run in runs)
    row = tested_row(case, binned.check, counts, binned.law, settings)
    kept = binned.cells - binned.bins
    what = (
        f"binned: {kept} cells of the target's most probable tokens and {binned.bins} "
        f"'other' bins holding mass {binned.rest_mass:.4f}"
    )
    return replace(row, summary=f"{row.summary}; {what}", detail=f"{row.detail}; {what}")


def end_of(tokens: tuple[int, ...], eos: frozenset[int]) -> int | None:
    """The index of the first EOS id in ``tokens``, or None."""
    return next((i for i, t in enumerate(tokens) if t in eos), None)


def first_tokens(tokens: tuple[int, ...], count: int, eos: frozenset[int]) -> tuple[int, ...]:
    head = tokens[:count]
    ended = end_of(head, eos)
    return head if ended is None else head[: ended + 1]


def pit_values(
    runs: Sequence[Emission], rows: Rows, num_new_tokens: int, rng: np.random.Generator
) -> np.ndarray:
    """[runs, num_new_tokens] randomized PIT values; positions after the run's end get a fresh
    uniform (the point law at EOS)."""
    values = rng.random((len(runs), num_new_tokens))
    summaries = summaries_of(runs, rows)
    for index, run in enumerate(runs):
        for position in range(len(run.tokens)):
            mass = summaries.mass[index, position]
            below = summaries.below[index, position]
            values[index, position] = min(below + values[index, position] * mass, 1.0)
    return values


def pit_rows(case: str, values: np.ndarray, settings: Settings) -> list[CaseResult]:
    bins = settings.bins
    uniform = {b: 1 / bins for b in range(bins)}
    binned = np.minimum((values * bins).astype(np.int64), bins - 1)

    def fit(cells: np.ndarray, name: str) -> CaseResult:
        counts = Counter(int(b) for b in cells.reshape(-1))
        return tested_row(case, name, counts, uniform, settings)

    rows = [fit(binned[:, k], f"pit@{k + 1}") for k in range(binned.shape[1])]
    return [*rows, fit(binned, "pit(pooled)")]


def greedy_row(
    case: str, runs: Sequence[Emission], rows: Rows, near_tie: float = NEAR_TIE
) -> CaseResult:
    """``rows`` as in :func:`support_row`."""
    summaries = summaries_of(runs, rows)
    ties = 0
    for index, run in enumerate(runs):
        for position, token in enumerate(run.tokens):
            best = int(summaries.best[index, position])
            if token == best:
                continue
            margin = float(summaries.best_mass[index, position] - summaries.mass[index, position])
            if margin > near_tie:
                summary = (
                    f"token {token} for argmax {best} at run {index}, position {position + 1}: "
                    f"margin {margin:.3g} > {near_tie:g}, a bug"
                )
                return exact_row(case, "greedy", len(runs), "FAIL", summary)
            ties += 1
    total = sum(len(run.tokens) for run in runs)
    summary = f"{total - ties} of {total} tokens are the target's argmax"
    if ties:
        summary += f"; {ties} near-tie mismatches (margin <= {near_tie:g}, numerics)"
    return exact_row(case, "greedy", len(runs), "pass", summary)
