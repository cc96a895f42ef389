"""Round samplers with known lossy bugs, their correct counterparts, and exact laws of both.

All work on position-only table problems (one state): the target row at output position t is
``p[t]``, the draft row at block position k is ``q[k]``. A round drafts gamma tokens, verifies
them, and the harness completes the output from the target. Exact laws enumerate every draft
sequence in float64, so each bug's discrepancy from the target law is computed, not guessed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import torch

from specproof.audit.drafting import categorical, draft_rounds
from specproof.audit.problems import PLACEHOLDER, TableProblem

BF16_LOGIT_OFFSET = 200.0
"""Logit magnitude at which bf16 rounds to whole units (spacing 1 in [128, 256))."""

Law = dict[tuple[int, ...], float]
RowMap = Callable[[torch.Tensor], torch.Tensor]


# Drafting bugs: tokens come from rows other than the q the ratio uses ----------------------


def bf16_rows(q: torch.Tensor) -> torch.Tensor:
    """The softmax of the same logits computed in bfloat16 (logits ~ 200, as shifted)."""
    logits = torch.log(q.double()) + BF16_LOGIT_OFFSET
    return torch.softmax(logits.to(torch.bfloat16), dim=-1).to(torch.float64)


def top_k_rows(k: int) -> RowMap:
    """Rows renormalised over their k most likely tokens (top-k-filtered logits)."""

    def rows(q: torch.Tensor) -> torch.Tensor:
        kept = torch.zeros_like(q, dtype=torch.float64)
        values, index = q.double().topk(k, dim=-1)
        kept.scatter_(-1, index, values)
        return kept / kept.sum(-1, keepdim=True)

    return rows


# Chain rounds --------------------------------------------------------------------------------


def chain_round(
    draft_rows: RowMap | None = None, relax: float = 1.0
) -> Callable[[TableProblem, int, torch.Generator], torch.Tensor]:
    """Chain verification: accept x_k when u * relax * q(x_k) < p(x_k), u ~ U[0, 1) (probability
    min(1, p / (relax q))); at the first rejection draw from norm(max(p - q, 0)); else the bonus.
    ``relax`` < 1 raises acceptance above min(1, p/q); ``draft_rows`` draws tokens from rows
    other than q. Both defaults give the correct, lossless round."""

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> torch.Tensor:
        drafts = draft_rounds(problem, batch, generator, draft_rows)
        gamma = problem.gamma
        x = drafts.tokens
        p_x = drafts.target_probs[:, :gamma].gather(2, x.unsqueeze(2)).squeeze(2).double()
        q_x = drafts.draft_probs.gather(2, x.unsqueeze(2)).squeeze(2).double()
        u = torch.rand((batch, gamma), generator=generator, dtype=torch.float64)
        accepted = ((q_x > 0) & (u * relax * q_x < p_x)).to(torch.int64).cumprod(1).sum(1)
        rows = torch.arange(batch)
        stop = accepted.clamp_max(gamma - 1)
        residual = (drafts.target_probs[rows, stop] - drafts.draft_probs[rows, stop]).double()
        correction = categorical(residual.clamp_min(0), generator)
        bonus = categorical(drafts.target_probs[:, gamma], generator)
        out = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
        keep = torch.arange(gamma).unsqueeze(0) < accepted.unsqueeze(1)
        out[:, :gamma] = torch.where(keep, x, PLACEHOLDER)
        out[rows, accepted] = torch.where(accepted < gamma, correction, bonus)
        return out

    return run


def exact_chain_law(
    problem: TableProblem, draft_rows: RowMap | None = None, relax: float = 1.0
) -> Law:
    """The exact law of the first ``problem.tokens`` tokens of :func:`chain_round`."""
    p, q = problem.p64()[:, 0], problem.q64()[:, 0]
    drawn = q if draft_rows is None else draft_rows(torch.from_numpy(q)).numpy()
    drawn = drawn / drawn.sum(axis=-1, keepdims=True)  # the sampler draws from normalised rows
    gamma = problem.gamma
    emitted: Law = {}

    def walk(k: int, prefix: tuple[int, ...], weight: float) -> None:
        if k == gamma:
            for y, m in enumerate(p[gamma]):
                _add(emitted, (*prefix, y), weight * m)
            return
        ratio = np.divide(p[k], relax * q[k], out=np.zeros_like(p[k]), where=q[k] > 0)
        accept = np.minimum(1.0, ratio)
        for x, m in enumerate(drawn[k]):
            if m * accept[x] > 0:
                walk(k + 1, (*prefix, x), weight * m * accept[x])
        rejected = float(np.dot(drawn[k], 1 - accept))
        residual = np.maximum(p[k] - q[k], 0)
        if rejected > 0 and residual.sum() > 0:
            for y, m in enumerate(residual / residual.sum()):
                _add(emitted, (*prefix, y), weight * rejected * m)

    walk(0, (), 1.0)
    return complete_law(problem, emitted)


# Block verification ------------------------------------------------------------------------


def _block_terms(
    p: np.ndarray, q: np.ndarray, x: tuple[int, ...], token_wise: bool
) -> tuple[list[float], list[float]]:
    """Weights w_0..w_l and acceptance levels h_1..h_l for drafts ``x`` (Sun et al.)."""
    gamma = len(x)
    weights = [1.0]
    levels = []
    for i in range(1, gamma + 1):
        weights.append(min(1.0, weights[-1] * p[i - 1][x[i - 1]] / q[i - 1][x[i - 1]]))
        if i < gamma:
            w = 1.0 if token_wise else weights[i]
            rho = float(np.maximum(w * p[i] - q[i], 0).sum())
            denominator = rho + 1 - weights[i]
            levels.append(rho / denominator if denominator > 0 else 1.0)
        else:
            levels.append(weights[i])
    return weights, levels


def exact_block_law(problem: TableProblem, token_wise: bool = False) -> Law:
    """The exact law of the first ``problem.tokens`` tokens of :func:`block_round`."""
    p, q = problem.p64()[:, 0], problem.q64()[:, 0]
    gamma = problem.gamma
    emitted: Law = {}
    for x in itertools.product(range(problem.vocab), repeat=gamma):
        drawn = float(np.prod([q[k][x[k]] for k in range(gamma)]))
        if drawn == 0:
            continue
        weights, levels = _block_terms(p, q, x, token_wise)
        for tau in range(gamma + 1):
            chance = (levels[tau - 1] if tau else 1.0) * float(
                np.prod([1 - h for h in levels[tau:]])
            )
            if chance == 0:
                continue
            if tau == gamma:
                correction = p[gamma]
            else:
                w = 1.0 if token_wise else weights[tau]
                correction = np.maximum(w * p[tau] - q[tau], 0)
                correction = correction / correction.sum()
            for y, m in enumerate(correction):
                _add(emitted, (*x[:tau], y), drawn * chance * m)
    return complete_law(problem, emitted)


def block_round(
    token_wise: bool = False,
) -> Callable[[TableProblem, int, torch.Generator], torch.Tensor]:
    """Block verification, vectorised; ``token_wise`` uses norm(max(p - q, 0)) (the known bug)."""

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> torch.Tensor:
        drafts = draft_rounds(problem, batch, generator)
        gamma = problem.gamma
        x = drafts.tokens
        p_rows = drafts.target_probs.double()
        q_rows = drafts.draft_probs.double()
        ratio = p_rows[:, :gamma].gather(2, x.unsqueeze(2)) / q_rows.gather(2, x.unsqueeze(2))
        weights = [torch.ones(batch, dtype=torch.float64)]
        levels = []
        for i in range(1, gamma + 1):
            weights.append(torch.clamp(weights[-1] * ratio[:, i - 1, 0], max=1.0))
            if i < gamma:
                w = torch.ones_like(weights[i]) if token_wise else weights[i]
                rho = (w.unsqueeze(1) * p_rows[:, i] - q_rows[:, i]).clamp_min(0).sum(1)
                denominator = rho + 1 - weights[i]
                safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
                levels.append(torch.where(denominator > 0, rho / safe, torch.ones_like(rho)))
            else:
                levels.append(weights[i])
        eta = torch.rand((batch, gamma), generator=generator, dtype=torch.float64)
        passed = eta < torch.stack(levels, 1)
        position = torch.arange(1, gamma + 1).unsqueeze(0)
        tau = torch.where(passed, position, torch.zeros_like(position)).max(1).values
        rows = torch.arange(batch)
        weight_tau = torch.stack(weights, 1)[rows, tau]
        if token_wise:
            weight_tau = torch.ones_like(weight_tau)
        at = tau.clamp_max(gamma - 1)
        residual = (weight_tau.unsqueeze(1) * p_rows[rows, at] - q_rows[rows, at]).clamp_min(0)
        correction = categorical(residual, generator)
        bonus = categorical(p_rows[:, gamma], generator)
        out = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
        keep = torch.arange(gamma).unsqueeze(0) < tau.unsqueeze(1)
        out[:, :gamma] = torch.where(keep, x, PLACEHOLDER)
        out[rows, tau] = torch.where(tau < gamma, correction, bonus)
        return out

    return run


# Shared ------------------------------------------------------------------------------------


def _add(law: Law, key: tuple[int, ...], mass: float) -> None:
    if mass > 0:
        law[key] = law.get(key, 0.0) + mass


def complete_law(problem: TableProblem, emitted: Law) -> Law:
    """Truncate or complete emitted sequences to ``problem.tokens`` tokens from the target."""
    p = problem.p64()[:, 0]
    out: Law = {}
    for tokens, mass in emitted.items():
        partial: Law = {tokens[: problem.tokens]: mass}
        for t in range(len(tokens), problem.tokens):
            partial = {
                (*k, y): m * p[t][y] for k, m in partial.items() for y in range(problem.vocab)
            }
        for k, m in partial.items():
            _add(out, k, m)
    return out
