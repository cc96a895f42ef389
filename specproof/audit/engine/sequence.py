"""Sequence-level rows: where a long generation stops, against the target's own law.

A drift of a few percent in every position's law is below what a per-position row is powered
for, yet over a long generation it moves where the run stops: a DSpark deployment reported a
median reasoning length of 28k tokens with speculation against 57k or more without. These rows
run the engine for ``tokens`` new tokens (64 or more; its own EOS ends a run) and draw as many
runs from the target itself, token by token from ``target_probs`` under the same sampling
parameters (the target's law is not enumerable over 64 tokens), and compare them:

- ``stop``: the law of the stopping time (tokens up to and including the first EOS; "no EOS"
  when none came within ``tokens``), in :data:`STOP_BINS` equal-width bins plus the "no EOS"
  cell. Two-sample test: TV(P_m, Q_n) <= TV(P_m, R) + TV(Q_n, R) under the null P = Q = R, so
  rejecting at t_m + t_n, each the Bretagnolle-Huber-Carol threshold at alpha / 2 for its sample
  size (distribution-free, every n), gives false-fail rate <= alpha. If TV(P, Q) >= delta, the
  set A* = {P > Q} has P(A*) - Q(A*) >= delta and the statistic is at least P_m(A*) - Q_n(A*),
  a mean of m + n independent bounded terms; it falls below the threshold with probability
  at most exp(-2 (delta - t)^2 / (1/m + 1/n)) (Hoeffding).
- ``length``: the mean emitted length over ``tokens``. Under the null the two means differ by
  at least t with probability at most 2 exp(-2 t^2 / (1/m + 1/n)) (Hoeffding on [0, 1]); the
  power against a shift of the mean by delta x ``tokens`` follows as above.

Both rows take m = n runs, the n that gives power >= 1 - beta at delta (:func:`runs_needed`).

The long runs are checked as the 4-token runs are before any statistics (a ``layout`` row: ids
in 0..V-1, nothing after EOS, ``tokens`` tokens unless an EOS ends the run sooner), and every
answer of ``target_probs`` in the simulation goes through the same guard (a raise, a non-finite
or negative row, a changed V or a call past the time limit is a FAIL row of its own). The
arguments are checked before any run (:func:`sequence_problem`, :func:`simulation_problem`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from specproof.stats import hoeffding_threshold

from ..guard import Guard, SubjectFailure
from ..report import CaseResult
from ..settings import ErrorRates
from .laws import probability_rows
from .rows import layout_row
from .runs import failure_row, guarded_probs, sample_runs, target_vocab
from .subject import Emission, Engine, TargetProbs

SEQUENCE_TOKENS = 64
"""New tokens per run of the sequence rows (at least this many is what makes them long)."""
STOP_BINS = 8
"""Equal-width bins of the stopping time over 1..tokens; a ninth cell holds "no EOS"."""
SIMULATION_BATCH = 512
"""Target runs drawn together (one teacher-forced call per token for the whole batch), fewer
where one answer of the target would pass :data:`MAX_ANSWER_BYTES`."""
MAX_ANSWER_BYTES = 4 << 30
"""The largest answer of ``target_probs`` the simulation asks for ([B, L, V] in float64, as it
is checked), and the largest total of the runs' ids (8 bytes each, engine and target runs)."""


def stop_cell(tokens: Sequence[int], eos: frozenset[int], length: int) -> int:
    """The stopping time's cell: 0..STOP_BINS - 1 for an EOS at 1..``length``, STOP_BINS for
    a run without EOS."""
    stop = next((i + 1 for i, t in enumerate(tokens) if t in eos), None)
    if stop is None:
        return STOP_BINS
    return min((stop - 1) * STOP_BINS // length, STOP_BINS - 1)


def runs_needed(rates: ErrorRates) -> int:
    """n per side at which both rows reach power 1 - beta against delta (the ``stop`` row's
    threshold is the larger: two BHC thresholds over STOP_BINS + 1 cells at alpha / 2);
    ``rates.tolerance`` is the sequence rows' own (``tokens`` x the audit's)."""
    alpha, beta = rates.alpha, rates.beta
    margin = rates.delta - rates.tolerance  # in (0, 1): ErrorRates holds delta > tolerance
    cells = STOP_BINS + 1
    subsets = math.log(2.0**cells - 2)
    root = math.sqrt(2 * (subsets - math.log(alpha / 2))) + math.sqrt(-math.log(beta))
    return math.ceil((root / margin) ** 2)


def sequence_rates(rates: ErrorRates, tokens: int) -> ErrorRates:
    """The sequence rows' rates: the audit's, with a tolerance of ``tokens`` x its own (a TV
    per token adds up over a run); refused (ValueError) when that reaches delta."""
    return dataclasses.replace(rates, tolerance=tokens * rates.tolerance)


def sequence_problem(tokens: int, rates: ErrorRates) -> str:
    """Why sequence rows of ``tokens`` tokens cannot run at the audit's ``rates`` ("" when
    they can), known before any run: their tolerance (``tokens`` x ``rates.tolerance``) must
    stay below delta, and the runs' ids must fit in :data:`MAX_ANSWER_BYTES`."""
    if tokens < 1:
        return f"{tokens} tokens: need at least 1"
    delta, tolerance = rates.delta, rates.tolerance
    spread = tokens * tolerance
    if spread >= delta:
        return (
            f"{tokens} tokens x tolerance {tolerance:g} = {spread:g} is the sequence rows' "
            f"tolerance, and it must stay below delta {delta:g}: ask for fewer tokens, a larger "
            "delta or a smaller tolerance"
        )
    runs = runs_needed(sequence_rates(rates, tokens))
    size = 2 * runs * tokens * 8
    if size > MAX_ANSWER_BYTES:
        return (
            f"{runs} engine runs and as many target runs of up to {tokens} tokens need "
            f"{size / 2**30:.3g} GiB of ids, more than the {MAX_ANSWER_BYTES / 2**30:g} GiB "
            "allowed: ask for fewer tokens or a larger delta"
        )
    return ""


def simulation_batch(prompt: int, tokens: int, vocab: int) -> int:
    """Target runs drawn together: at most SIMULATION_BATCH, and an answer of at most
    :data:`MAX_ANSWER_BYTES` for the longest context (0 when one run alone passes it)."""
    per_run = (prompt + tokens) * vocab * 8
    return min(SIMULATION_BATCH, MAX_ANSWER_BYTES // per_run)


def simulation_problem(prompt: int, tokens: int, vocab: int) -> str:
    """Why the target simulation cannot run at V = ``vocab`` ("" when it can)."""
    if simulation_batch(prompt, tokens, vocab) >= 1:
        return ""
    size = (prompt + tokens) * vocab * 8
    return (
        f"{tokens} tokens after a prompt of {prompt} at V = {vocab} need target rows of "
        f"{size / 2**30:.3g} GiB for a single run, more than the "
        f"{MAX_ANSWER_BYTES / 2**30:g} GiB allowed: ask for fewer tokens"
    )


def simulate_target(
    target_probs: TargetProbs,
    prompt: Sequence[int],
    eos: frozenset[int],
    tokens: int,
    runs: int,
    rng: np.random.Generator,
    progress: Callable[[int, int], None] | None = None,
    batch: int = SIMULATION_BATCH,
) -> list[tuple[int, ...]]:
    """``runs`` generations drawn from the target alone: each token from ``target_probs`` after
    the prompt and the tokens so far (inverse CDF in float64), a run ending at EOS; ``batch``
    runs drawn together."""
    out: list[tuple[int, ...]] = []
    for start in range(0, runs, batch):
        size = min(batch, runs - start)
        drawn = np.zeros((size, tokens), dtype=np.int64)
        length = np.full(size, tokens)
        open_rows = np.arange(size)
        for position in range(tokens):
            if not len(open_rows):
                break
            context = np.concatenate(
                [np.tile(prompt, (len(open_rows), 1)), drawn[open_rows, :position]], axis=1
            )
            rows = target_probs(torch.tensor(context, dtype=torch.long))
            law = probability_rows(rows[:, -1:])[:, 0]
            cdf = np.cumsum(law, axis=-1)
            u = rng.random(len(open_rows)) * cdf[:, -1]
            picked = (cdf <= u[:, None]).sum(axis=1).clip(max=law.shape[-1] - 1)
            drawn[open_rows, position] = picked
            ended = np.isin(picked, list(eos))
            length[open_rows[ended]] = position + 1
            open_rows = open_rows[~ended]
        out += [tuple(int(t) for t in drawn[i, : length[i]]) for i in range(size)]
        if progress:
            progress(len(out), runs)
    return out


def _row(
    case: str,
    check: str,
    n: int,
    statistic: float,
    bound: float,
    power: float,
    rates: ErrorRates,
    what: str,
) -> CaseResult:
    delta = rates.delta
    rejected = statistic >= bound
    relation = ">=" if rejected else "<"
    summary = (
        f"{what} {statistic:.4f} {relation} bound {bound:.4f} (power {power:.4f} at {delta:g})"
    )
    return CaseResult(
        case=case,
        check=check,
        n=n,
        tv_estimate=statistic,
        bound=bound,
        alpha=rates.alpha,
        beta=rates.beta,
        delta=delta,
        verdict="FAIL" if rejected else "pass",
        detail=f"{case}/{check}: {summary}; engine runs and target runs, {n} each",
        summary=summary,
        power=power,
    )


def stop_row(
    case: str,
    engine_runs: Sequence[Sequence[int]],
    target_runs: Sequence[Sequence[int]],
    eos: frozenset[int],
    tokens: int,
    *,
    rates: ErrorRates,
) -> CaseResult:
    """Two-sample test of the stopping time's law (binned), see the module docstring."""
    alpha, delta, tolerance = rates.alpha, rates.delta, rates.tolerance
    m, n = len(engine_runs), len(target_runs)
    cells = STOP_BINS + 1
    mine = np.bincount([stop_cell(r, eos, tokens) for r in engine_runs], minlength=cells) / m
    theirs = np.bincount([stop_cell(r, eos, tokens) for r in target_runs], minlength=cells) / n
    statistic = float(np.abs(mine - theirs).sum() / 2)
    bound = (
        hoeffding_threshold(m, cells, alpha / 2) + hoeffding_threshold(n, cells, alpha / 2)
    ) + tolerance
    gap = delta - bound
    power = 0.0 if gap <= 0 else 1 - math.exp(-2 * gap * gap / (1 / m + 1 / n))
    return _row(case, "stop", m, statistic, bound, power, rates, "TV estimate")


def length_row(
    case: str,
    engine_runs: Sequence[Sequence[int]],
    target_runs: Sequence[Sequence[int]],
    tokens: int,
    *,
    rates: ErrorRates,
) -> CaseResult:
    """Two-sample Hoeffding test of the mean emitted length / ``tokens``."""
    alpha, delta, tolerance = rates.alpha, rates.delta, rates.tolerance
    m, n = len(engine_runs), len(target_runs)
    mine = float(np.mean([len(r) for r in engine_runs])) / tokens
    theirs = float(np.mean([len(r) for r in target_runs])) / tokens
    spread = 1 / m + 1 / n
    bound = math.sqrt(math.log(2 / alpha) * spread / 2) + tolerance
    gap = delta - bound
    power = 0.0 if gap <= 0 else 1 - math.exp(-2 * gap * gap / spread)
    what = f"mean length {mine * tokens:.1f} vs {theirs * tokens:.1f}: difference / {tokens}"
    return _row(case, "length", m, abs(mine - theirs), bound, power, rates, what)


def sequence_case(engine: Engine, tokens: int) -> str:
    return f"{engine.name} ({tokens} tokens)"


def sequence_rows(
    engine: Engine,
    runs: list[Emission],
    tokens: int,
    *,
    rates: ErrorRates,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    target_probs: TargetProbs | None = None,
    batch: int = SIMULATION_BATCH,
) -> list[CaseResult]:
    """The ``stop`` and ``length`` rows of the engine's ``runs`` (each of ``tokens`` new
    tokens) against as many runs drawn from the target (through ``target_probs``, the
    engine's own when None; ``batch`` runs drawn together)."""
    if not engine.eos_ids:
        raise ValueError("the sequence rows need the engine's EOS (it has none)")
    rng = np.random.default_rng([seed, 2])
    probs = engine.target_probs if target_probs is None else target_probs
    target = simulate_target(
        probs, engine.prompt, engine.eos_ids, tokens, len(runs), rng, progress, batch
    )
    emitted = [r.tokens for r in runs]
    case = sequence_case(engine, tokens)
    return [
        stop_row(case, emitted, target, engine.eos_ids, tokens, rates=rates),
        length_row(case, emitted, target, tokens, rates=rates),
    ]


def timed_sequence_rows(
    engine: Engine,
    tokens: int = SEQUENCE_TOKENS,
    runs: int | None = None,
    *,
    rates: ErrorRates,
    seed: int = 0,
    bars: Callable[[str], Callable[[int, int], None]] | None = None,
    guard: Guard | None = None,
    target_probs: TargetProbs | None = None,
) -> tuple[list[CaseResult], dict[str, float]]:
    """Run the engine ``runs`` times (default :func:`runs_needed`) for ``tokens`` tokens and
    return the rows (``layout`` first, as for the 4-token runs), tested at ``rates`` (whose
    tolerance is the sequence rows' own, :func:`sequence_rates`), with the seconds spent on
    the engine and on the target's simulation. ``target_probs``: the engine's, already guarded and
    holding the V of earlier answers (:func:`.audit.guarded_probs`), or None to guard them
    here. A subject that misbehaves (a run out of layout, a call that raises, returns what its
    contract rules out or runs past ``guard``'s time limit) ends the rows with a FAIL row."""
    n = runs or runs_needed(rates)
    case = sequence_case(engine, tokens)
    guard = guard or Guard()
    probs = target_probs or guarded_probs(guard, engine)
    start = time.perf_counter()
    cost = {"runs": float(n), "engine_seconds": 0.0, "target_seconds": 0.0}
    try:
        vocab = target_vocab(probs, engine)
        batch = simulation_batch(len(engine.prompt), tokens, vocab)
        if batch < 1:
            raise ValueError(simulation_problem(len(engine.prompt), tokens, vocab))
        emitted = sample_runs(engine, [engine.prompt] * n, tokens, seed, bars, guard)
        cost["engine_seconds"] = time.perf_counter() - start
        layout = layout_row(case, emitted, vocab, engine.eos_ids, tokens)
        if not layout.passed:
            return [layout], cost
        rows = sequence_rows(
            engine,
            emitted,
            tokens,
            rates=rates,
            seed=seed,
            progress=bars(f"{engine.name} target") if bars else None,
            target_probs=probs,
            batch=batch,
        )
    except SubjectFailure as failure:
        return [failure_row(case, failure, n)], cost
    cost["target_seconds"] = time.perf_counter() - start - cost["engine_seconds"]
    return [layout, *rows], cost
