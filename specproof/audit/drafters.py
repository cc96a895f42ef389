"""Drafters at real settings: LLM-scale logits at several temperatures, and the law a drafter
actually draws from against the q it reports, row by row.

A drafter may report any q, as long as it draws from it: the verifier's acceptance ratio is
computed with the reported q, so a drafter drawing from r != q is lossy by up to TV(r, q). The
battery cannot see a small gap (its tokens row is diluted by acceptance), so each ``fidelity``
row calls the drafter n times on one fixed logits row and tests the drawn tokens against the
reported q with :func:`specproof.stats.goodness_of_fit` (false-fail rate alpha, power 1 - beta
against TV >= delta, the float32 tolerance aside). Tokens of reported mass below 1e-4 share one
cell (a function of the outcome, so the test keeps its alpha).

The rows are bf16-representable logits over V = 256 whose top logits lie in 20-30, as an LLM's
do; temperatures 0.6, 0.7 and 1. The ``calls`` rows test repeated calls on identical logits
against sum_x q(x)^2 (:mod:`specproof.audit.calls`), and a drafter that accepts ``generator=``
is held to reproduce a seed and to be independent across seeds.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch

from specproof.stats import goodness_of_fit, required_samples

from .calls import rows_needed
from .drafting import DraftFn
from .report import CaseResult, exact_row
from .settings import ErrorRates

TEMPERATURES = (0.6, 0.7, 1.0)
VOCAB = 256
HEAD = 12
"""Tokens per row with logits in 20-30 (the rest lie in 0-12)."""
ROWS = 2
CHUNK = 8192
SMALL_MASS = 1e-4
DEFAULT_FIDELITY_DELTA = 0.025
"""TV the fidelity rows detect (the bf16 class: exact TV 0.045 and 0.027 on the two rows at
T = 0.7, :func:`bf16_tv`)."""
FIDELITY_TOLERANCE = 1e-4
"""TV the fidelity rows let pass (float rounding of the reported q)."""


def llm_rows(seed: int = 0, rows: int = ROWS) -> torch.Tensor:
    """``[rows, V]`` float32 logits, exactly representable in bf16, top logits in 20-30."""
    rng = np.random.default_rng(seed + 31)
    logits = rng.uniform(0.0, 12.0, size=(rows, VOCAB))
    for row in logits:
        head = rng.choice(VOCAB, size=HEAD, replace=False)
        row[head] = rng.uniform(24.0, 30.0, size=HEAD)
        row[head[0]] = 30.0
        row[head[1]] = 20.0
    return torch.from_numpy(logits).to(torch.bfloat16).to(torch.float32)


def _accepts_generator(fn: DraftFn) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _draw(
    fn: DraftFn, row: torch.Tensor, temperature: float, n: int, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """n calls' worth of draws on copies of ``row``: tokens [n] and the reported q [n, V]."""
    tokens, reported = [], []
    done = 0
    while done < n:
        size = min(CHUNK, n - done)
        result = fn(row.expand(size, -1).clone(), temperature, **kwargs)
        tokens.append(torch.as_tensor(result[0]).to(torch.int64).reshape(-1))
        reported.append(torch.as_tensor(result[1]).to(torch.float64))
        done += size
    return torch.cat(tokens), torch.cat(reported)


def _reported_law(reported: torch.Tensor) -> tuple[np.ndarray, float]:
    """The reported q (first row, renormalised) and the largest deviation of any other row."""
    q = reported[0].numpy()
    spread = float((reported - reported[0]).abs().max())
    return q / q.sum(), spread


def fidelity_rates(rates: ErrorRates) -> ErrorRates:
    """The fidelity rows' rates: the audit's alpha and beta, with this module's delta and a
    tolerance of 1e-4 (whatever the audit's own delta and tolerance are)."""
    return ErrorRates(rates.alpha, rates.beta, DEFAULT_FIDELITY_DELTA, FIDELITY_TOLERANCE)


def fidelity_rows(
    fn: DraftFn,
    *,
    rates: ErrorRates,
    seed: int = 0,
    temperatures: tuple[float, ...] = TEMPERATURES,
) -> list[CaseResult]:
    """One statistical row per (temperature, logits row): drawn tokens against reported q, at
    ``rates`` (the audit passes :func:`fidelity_rates` of its own)."""
    alpha, beta, delta, tolerance = rates.alpha, rates.beta, rates.delta, rates.tolerance
    results = []
    torch.manual_seed(seed)
    for temperature in temperatures:
        case = f"fidelity-T{temperature:g}"
        for index, row in enumerate(llm_rows(seed)):
            probe = torch.as_tensor(fn(row.unsqueeze(0).clone(), temperature)[1]).double()[0]
            big = probe.numpy() >= SMALL_MASS
            # The test's cells: each large token, the small ones pooled, and (with a
            # tolerance) the cell goodness_of_fit adds for it; n must power all of them.
            cells = int(big.sum()) + 1 + (1 if tolerance > 0 else 0)
            n = required_samples(delta, alpha, beta, cells, tolerance)
            tokens, reported = _draw(fn, row, temperature, n)
            q, spread = _reported_law(reported)
            check = f"row {index}"
            if spread > 1e-6:
                detail = f"{case}/{check}: reported q differs by {spread:.3g} on identical logits"
                results.append(exact_row(case, check, n, "FAIL", detail))
                continue
            classes = np.where(big, np.arange(VOCAB), -1)
            law: dict[int, float] = {}
            for token, mass in enumerate(q):
                law[int(classes[token])] = law.get(int(classes[token]), 0.0) + float(mass)
            observed = classes[tokens.numpy()]
            values, counts = np.unique(observed, return_counts=True)
            fit = goodness_of_fit(
                dict(zip(values.tolist(), counts.tolist(), strict=True)),
                {k: v for k, v in law.items() if v > 0},
                alpha=alpha,
                beta=beta,
                delta=delta,
                tolerance=tolerance,
                name=f"{case}/{check}",
            )
            results.append(
                CaseResult(
                    case,
                    check,
                    fit.n,
                    fit.tv_estimate,
                    fit.bound,
                    alpha,
                    beta,
                    delta,
                    fit.verdict,
                    fit.describe(),
                    power=fit.power,
                )
            )
    return results


def drafter_calls(fn: DraftFn, *, rates: ErrorRates, seed: int = 0) -> list[CaseResult]:
    """Repeated calls on identical logits (T = 1): identical draws at the rate sum_x q(x)^2;
    with ``generator=``, a seed reproduced and different seeds independent."""
    from .calls import _rate_row, _repeat_row

    n = rows_needed(rates)
    rows = llm_rows(seed)
    logits = rows[torch.arange(n) % len(rows)]
    torch.manual_seed(seed + 7)
    first_tokens, first_q = fn(logits.clone(), 1.0)
    torch.manual_seed(seed + 8)
    again_tokens, _ = fn(logits.clone(), 1.0)
    q = torch.as_tensor(first_q).double()
    q = q / q.sum(-1, keepdim=True)
    collision = (q**2).sum(-1).numpy()
    same = (torch.as_tensor(first_tokens) == torch.as_tensor(again_tokens)).numpy()
    results = [_rate_row("unseeded", same, collision, rates, "unseeded")]
    results = [_as_drafter(r) for r in results]
    if _accepts_generator(fn):
        s1, s2 = seed + 11, seed + 12
        a = fn(logits.clone(), 1.0, generator=torch.Generator().manual_seed(s1))[0]
        b = fn(logits.clone(), 1.0, generator=torch.Generator().manual_seed(s1))[0]
        c = fn(logits.clone(), 1.0, generator=torch.Generator().manual_seed(s2))[0]
        differs = np.nonzero((torch.as_tensor(a) != torch.as_tensor(b)).numpy())[0]
        results.append(_as_drafter(_repeat_row(differs, n, "generator=")))
        across = (torch.as_tensor(a) == torch.as_tensor(c)).numpy()
        results.append(_as_drafter(_rate_row("seeds", across, collision, rates, "seeded")))
    return results


def _as_drafter(row: CaseResult) -> CaseResult:
    from dataclasses import replace

    return replace(row, case="drafter-calls", detail=row.detail.replace("calls/", "drafter-calls/"))


def bf16_tv(temperature: float, seed: int = 0) -> list[float]:
    """Exact TV, per fidelity row, between the law of the bf16 drafting class (softmax of bf16
    logits / T in bf16) and the float32 q it reports: the power target of the fidelity rows."""
    out = []
    for row in llm_rows(seed):
        drawn = torch.softmax(row.to(torch.bfloat16) / temperature, -1).double()
        drawn = drawn / drawn.sum()
        reported = torch.softmax(row.double() / temperature, -1)
        out.append(0.5 * float((drawn - reported).abs().sum()))
    return out
