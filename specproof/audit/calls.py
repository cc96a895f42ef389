"""Independence across calls: the verifier called again and again on identical inputs.

A verifier whose random stream restarts identically on every call keeps every round's law exact,
so no row of the battery can see it; what shows is that two calls on identical inputs agree
too often. For fixed inputs (drafts, target and draft rows, bonus token) the round's outcome o
has an exact law P; two independent calls give identical rows with probability sum_o P(o)^2,
computed here in float64 from the rows the verifier is given. Over n rows, I_b (row b identical
in both calls) minus its collision probability c_b is an independent variable in an interval of
length 1, so by Hoeffding P(|mean(I - c)| >= t) <= 2 exp(-2 n t^2) = alpha at
t = sqrt(ln(2/alpha) / (2n)), and a verifier whose identical-row rate differs from mean(c) by
delta or more passes with probability <= exp(-2 n (delta - t)^2) <= beta at the n drawn.

Rows: ``repeat`` (exact): rows with their own seeded generator (vLLM's per-request generators, or
FlashInfer's ``generator=``) give identical outputs when called again with the same seeds;
``unseeded`` (statistical): unseeded rows of two calls agree at the collision rate; ``seeds``
(statistical): seeded rows of calls with different seeds agree at the collision rate.

Each call gets its own copy of every input tensor: vLLM's sampler divides its logits by the
temperature in place (``logits.div_`` in ``apply_sampling_constraints``), so a second call on
the tensors the first one was given would see other logits. The ``inputs`` row says whether the
verifier wrote into its inputs (informational: vLLM does it on purpose, and each call here had
its own copy); it never fails the audit.
"""

from __future__ import annotations

import functools
import inspect
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from .audit_settings import AuditSettings
from .drafting import Drafts, draft_rounds
from .errors import VerifierError, out_of_memory
from .problems import TableProblem
from .report import INFO, CaseResult, exact_row, limit_row
from .settings import ErrorRates
from .signatures import Verifier
from .structure import check_structure

CASE = "calls"


def _copy(value: Any) -> Any:
    """A copy of a tensor (or of the tensors in vLLM's metadata) a call may write into."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, SimpleNamespace):
        return SimpleNamespace(**{k: _copy(v) for k, v in vars(value).items()})
    return value


def _changed(given: Any, original: Any) -> bool:
    """Whether the call wrote into ``given`` (its copy of ``original``); NaN equals NaN."""
    if isinstance(given, torch.Tensor):
        return given.shape != original.shape or not torch.equal(
            torch.nan_to_num(given, nan=0.0) if given.is_floating_point() else given,
            torch.nan_to_num(original, nan=0.0) if original.is_floating_point() else original,
        )
    if isinstance(given, SimpleNamespace):
        fields = vars(original)
        return any(_changed(v, fields.get(k)) for k, v in vars(given).items() if k in fields)
    return False


def _parameter_names(fn: Verifier) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def own_copies(fn: Verifier, written: set[str], outputs: frozenset[int] = frozenset()) -> Verifier:
    """``fn`` called on a fresh copy of every tensor argument, so that a call that writes into
    its inputs cannot change what the next call is given; the names of the arguments a call
    wrote into (but those at the positions in ``outputs``) are added to ``written``."""
    names = _parameter_names(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        given = [_copy(a) for a in args]
        given_kwargs = {k: _copy(v) for k, v in kwargs.items()}
        out = fn(*given, **given_kwargs)
        for index, (copy, original) in enumerate(zip(given, args, strict=True)):
            if index not in outputs and _changed(copy, original):
                written.add(names[index] if index < len(names) else f"argument {index}")
        written.update(k for k, v in given_kwargs.items() if _changed(v, kwargs[k]))
        return out

    return call


def inputs_row(written: set[str], rows: int) -> CaseResult:
    """Informational: whether the verifier wrote into the inputs it was given."""
    if not written:
        return exact_row(CASE, "inputs", rows, "pass", "no call wrote into its inputs")
    names = ", ".join(sorted(written))
    summary = f"writes into its inputs ({names}); each call had its own copy"
    detail = (
        f"{CASE}/inputs: the verifier wrote into {names} (as vLLM's sampler divides its logits "
        "by the temperature in place); informational, not a finding: every call was given its "
        "own copy, so the rows above test the law, and a caller must not reuse those tensors"
    )
    return exact_row(CASE, "inputs", rows, INFO, summary, detail)


def rows_needed(rates: ErrorRates) -> int:
    """Rows at which the Hoeffding test above has power 1 - beta at a rate gap of delta."""
    root = math.sqrt(math.log(2 / rates.alpha) / 2) + math.sqrt(math.log(1 / rates.beta) / 2)
    return math.ceil((root / rates.delta) ** 2)


def collision_probability(drafts: Drafts, bonus_given: bool) -> np.ndarray:
    """sum_o P(o)^2 per row for chain verification of its fixed drafts (random rows): the
    round ends with a rejection at position j (then a residual token) or after every draft
    (then the given bonus, or a token drawn from the next target row)."""
    p = drafts.target_probs.double().numpy()
    q = drafts.draft_probs.double().numpy()
    p = p / p.sum(-1, keepdims=True)
    q = q / np.maximum(q.sum(-1, keepdims=True), 1e-300)
    tokens = drafts.tokens.numpy()
    lengths = drafts.lengths.numpy()
    batch = len(lengths)
    rows = np.arange(batch)
    alive = np.ones(batch)  # P(every draft before j accepted)
    total = np.zeros(batch)
    for j in range(tokens.shape[1] + 1):
        ends = lengths == j
        last = np.ones(batch) if bonus_given else (p[:, min(j, p.shape[1] - 1)] ** 2).sum(-1)
        total += np.where(ends, alive**2 * last, 0.0)
        if j == tokens.shape[1]:
            break
        px, qx = p[rows, j, tokens[:, j]], q[rows, j, tokens[:, j]]
        accept = np.where(qx > 0, np.minimum(1.0, px / np.maximum(qx, 1e-300)), 0.0)
        residual = np.maximum(p[:, j] - q[:, j], 0.0)
        mass = residual.sum(-1)
        spread = np.where(mass > 0, (residual**2).sum(-1) / np.maximum(mass, 1e-300) ** 2, 1.0)
        live = lengths > j
        total += np.where(live, (alive * (1 - accept)) ** 2 * spread, 0.0)
        alive = np.where(live, alive * accept, alive)
    return total


def _rate_row(
    check: str,
    same: np.ndarray,
    collision: np.ndarray,
    rates: ErrorRates,
    what: str,
) -> CaseResult:
    alpha, beta, delta = rates.alpha, rates.beta, rates.delta
    n = len(same)
    if n == 0:
        return exact_row(CASE, check, 0, "FAIL", f"no {what} rows")
    rate, expected = float(same.mean()), float(collision.mean())
    gap = abs(rate - expected)
    bound = math.sqrt(math.log(2 / alpha) / (2 * n))
    passed = gap < bound
    summary = (
        f"identical {rate:.3f} vs exact {expected:.3f}: |diff| {gap:.4f} "
        f"{'<' if passed else '>='} bound {bound:.4f}"
    )
    miss = math.exp(-2 * n * max(delta - bound, 0.0) ** 2) if delta > bound else 1.0
    detail = (
        f"{CASE}/{check}: {what} rows of two calls on identical inputs were identical in "
        f"{int(same.sum())} of {n} ({rate:.4f}); independent calls give {expected:.4f} (sum_o "
        f"P(o)^2); Hoeffding bound {bound:.4f} at alpha = {alpha:g}; power {1 - miss:.6f} "
        f"against a gap >= {delta:g}"
    )
    return CaseResult(
        CASE,
        check,
        n,
        gap,
        bound,
        alpha,
        beta,
        delta,
        "pass" if passed else "FAIL",
        detail,
        summary=summary,
        power=1 - miss,
    )


def audit_calls(fn: Verifier, problem: TableProblem, settings: AuditSettings) -> list[CaseResult]:
    """The ``repeat``, ``unseeded`` and ``seeds`` rows on ``problem`` (random rows only) with
    ``settings.signature``, each call of ``fn`` carrying at most ``settings.limits.max_batch``
    requests."""
    if any(problem.greedy_modes):
        raise ValueError(f"{problem.name}: the calls rows use random rows only")
    signature, rates = settings.signature, settings.rates
    stream = torch.Generator().manual_seed(settings.seed + 1)
    needed = rows_needed(rates)
    seeded_rows = signature.carries_requests and problem.seeded
    batch = 3 * needed if seeded_rows else needed
    drafts = draft_rounds(problem, batch, stream)
    if signature.carries_requests and not problem.seeded:
        raise ValueError(f"{problem.name}: vLLM's calls rows need seeded requests")
    written: set[str] = set()
    fn = own_copies(fn, written, signature.output_arguments)
    try:
        calls = signature.repeated_calls(fn, drafts, problem, stream, settings)
        first, again, third, seeded = calls.first, calls.again, calls.third, calls.seeded
        for out in (first, again):
            check_structure(out, drafts, problem.vocab)
    except VerifierError as error:
        detail = f"{CASE}/layout: {error.message}"
        return [exact_row(CASE, "layout", batch, "FAIL", detail)]
    except Exception as error:
        if out_of_memory(error):  # a limit of this run, never a pass nor a finding
            return [limit_row(CASE, "runs", batch, min(batch, settings.limits.max_batch), error)]
        # The verifier raised: a failed row, not the audit's end.
        detail = f"{CASE}: the verifier raised {type(error).__name__}: {error}"
        return [exact_row(CASE, "runs", 0, "FAIL", detail)]
    collision = collision_probability(drafts, bonus_given=not signature.sends_bonus_row)
    identical = (first == again).all(1).numpy()
    results: list[CaseResult] = []
    unseeded = np.ones(batch, dtype=bool) if seeded is None else ~seeded
    results.append(
        _rate_row("unseeded", identical[unseeded], collision[unseeded], rates, "unseeded")
    )
    if seeded is not None:
        differs = np.nonzero(seeded & ~identical)[0]
        results.append(_repeat_row(differs, int(seeded.sum()), "per-request generators"))
        across = (first == third).all(1).numpy()
        results.append(
            _rate_row("seeds", across[seeded], collision[seeded], rates, "differently seeded")
        )
    elif calls.generator_runs is not None:
        seeded_a, seeded_b, seeded_c = calls.generator_runs
        differs = np.nonzero(~(seeded_a == seeded_b).all(1).numpy())[0]
        results.append(_repeat_row(differs, batch, "generator="))
        across = (seeded_a == seeded_c).all(1).numpy()
        results.append(_rate_row("seeds", across, collision, rates, "differently seeded"))
    results.append(inputs_row(written, batch))
    return results


def _repeat_row(differs: np.ndarray, rows: int, how: str) -> CaseResult:
    """The exact ``repeat`` row: every seeded row of two identical calls must be equal."""
    if len(differs):
        first = int(differs[0])
        verdict = "FAIL"
        detail = (
            f"{CASE}/repeat: row {first} (seeded through {how}) differs between two "
            f"calls with the same seeds on identical inputs; {len(differs)} of {rows} rows"
        )
        summary = f"seeded row {first} not reproduced"
    else:
        verdict = "pass"
        detail = f"seeded rows ({how}) reproduced exactly"
        summary = f"{rows} seeded rows reproduced exactly"
    return exact_row(CASE, "repeat", rows, verdict, summary, detail)
