"""Audit a whole generate loop against the target's own law (see :mod:`.rows` for the rows)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from ..guard import Guard, SubjectFailure
from ..report import AuditReport, CaseResult
from ..run import rounds_needed
from ..settings import ErrorRates, settled
from .acceptance import acceptance_row
from .binned import BINNED_TOKENS, BinnedLaw, binned_law
from .coverage import coverage_row
from .laws import chunk_size, first_tokens_law, sequence_bytes
from .rows import (
    NEAR_TIE,
    Settings,
    binned_law_row,
    exact_law_row,
    greedy_row,
    layout_row,
    pit_rows,
    pit_values,
    support_row,
)
from .runs import (
    Bars,
    SetupError,
    failure_row,
    guarded_probs,
    run_prompts,
    sample_runs,
    target_vocab,
)
from .sequence import sequence_problem, sequence_rates, simulation_problem, timed_sequence_rows
from .subject import Emission, Engine
from .summaries import TokenSummaries, token_summaries

DEFAULT_DELTA = 0.1
"""Engines cost a model call per round; delta = 0.1 keeps a default audit to a few thousand
runs (the function audit's 0.05 would take four times as many)."""
DEFAULT_RATES = ErrorRates(delta=DEFAULT_DELTA)
"""The engine audit's rates: the verifier audit's alpha, beta and tolerance, its own delta."""
DEFAULT_BINS = 10
ENGINE_TIMEOUT = 3600.0
"""Seconds a whole engine audit may run before the call still running fails as timed out: the
default of ``specproof audit-engine --timeout``, its parity report and the plugin's engine
check."""
DEFAULT_TOKENS = 4
"""New tokens per run unless told (``--tokens``): the one default of every engine audit, its
command, the tables, ``specproof parity-report engine`` and the pytest plugin's engine check."""
MAX_EXACT_CELLS = 64
"""The exact row runs when V^N is at most this; where it does not, the binned row
(:mod:`.binned`) takes at most this many cells, so it asks no more runs than an exact row."""

GREEDY_RUNS = 50
"""Runs of a greedy engine, each from its own random prompt (one prompt has one output)."""

MAX_ROW_BYTES = 4 << 30
"""What the audit may hold of the target's law: one teacher-forced call's rows
(:func:`.laws.sequence_bytes` per sequence) and every run's summaries."""


def check_binned(prompt_length: int, vocab: int, cells: int) -> None:
    """Refuse, before its one teacher-forced call, a binned law whose second-token rows (one
    sequence per kept first token) would pass :data:`MAX_ROW_BYTES`."""
    size = (cells - 1) * sequence_bytes(prompt_length, 1, vocab)
    if size > MAX_ROW_BYTES:
        raise SetupError(
            "binned_cells",
            f"the binned row's {cells - 1} second-token rows at V = {vocab} need "
            f"{size / 2**30:.3g} GiB, more than the {MAX_ROW_BYTES / 2**30:g} GiB allowed: ask "
            "for fewer cells",
        )


def check_plan(
    engine: Engine, vocab: int, runs: int, num_new_tokens: int, sequence_tokens: int | None = None
) -> None:
    """Refuse, before any run, an EOS outside the vocabulary and rows too large to hold (the
    sequence rows' target answers included)."""
    outside = sorted(t for t in engine.eos_ids if not 0 <= t < vocab)
    if outside:
        raise SetupError(
            "eos", f"EOS id {outside[0]} is outside the target's vocabulary 0..{vocab - 1}"
        )
    size = held_bytes(runs, len(engine.prompt), num_new_tokens, vocab)
    if size > MAX_ROW_BYTES:
        raise SetupError(
            "tokens",
            f"{runs} runs of {num_new_tokens} tokens at V = {vocab} need {size / 2**30:.3g} GiB "
            f"of target rows, more than the {MAX_ROW_BYTES / 2**30:g} GiB allowed: ask for fewer "
            "tokens or runs",
        )
    if sequence_tokens:
        problem = simulation_problem(len(engine.prompt), sequence_tokens, vocab)
        if problem:
            raise SetupError("sequence", problem)


SUMMARY_BYTES = 8 * 4
"""Bytes of one run's summaries per position (:class:`.summaries.TokenSummaries`)."""


def held_bytes(runs: int, prompt_length: int, num_new_tokens: int, vocab: int) -> int:
    """The most the audit holds of the target's law at once: the rows of one teacher-forced
    call and the summaries of every run (O(runs x tokens), whatever V is)."""
    chunk = min(runs, chunk_size(prompt_length, num_new_tokens, vocab))
    rows = chunk * sequence_bytes(prompt_length, num_new_tokens, vocab)
    return rows + runs * num_new_tokens * SUMMARY_BYTES


class EngineReport(AuditReport):
    """An audit report of an engine (its coverage warnings inform but do not fail, as in
    every report)."""


def exact_tokens_for(vocab: int, num_new_tokens: int) -> int:
    """The largest N <= num_new_tokens with V^N <= MAX_EXACT_CELLS (0: no exact row)."""
    tokens = 0
    while tokens < num_new_tokens and vocab ** (tokens + 1) <= MAX_EXACT_CELLS:
        tokens += 1
    return tokens


def audit_engine(
    engine: Engine,
    *,
    num_new_tokens: int = DEFAULT_TOKENS,
    runs: int | None = None,
    rates: ErrorRates | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    delta: float | None = None,
    tolerance: float | None = None,
    bins: int = DEFAULT_BINS,
    seed: int = 0,
    bars: Bars | None = None,
    timeout: float | None = None,
    sequence_tokens: int | None = None,
    binned_cells: int = MAX_EXACT_CELLS,
) -> EngineReport:
    """Run ``engine`` ``runs`` times (default: the n that gives every statistical row power
    >= 1 - beta against TV >= delta) and test what it emitted against the target's law.
    ``rates`` (:class:`~specproof.audit.settings.ErrorRates`) goes to every row as given;
    without it, it is made here from ``alpha``, ``beta``, ``delta`` and ``tolerance`` (each
    left out takes its default: :data:`DEFAULT_RATES`); giving both is refused.

    A subject that raises, returns what its contract rules out, or is still running after
    ``timeout`` seconds ends the audit with a FAIL row saying so, after the rows already run.
    Raises :class:`SetupError` (before any run) for a prompt or EOS outside the vocabulary or
    rows too large to hold. ``sequence_tokens``: also the sequence rows (:mod:`.sequence`)
    over separate runs of that many tokens (the engine needs an EOS). ``binned_cells``: the
    cell budget of the binned row where the exact row does not run (0: no binned row)."""
    start = time.perf_counter()
    rates = settled(rates, DEFAULT_RATES, alpha=alpha, beta=beta, delta=delta, tolerance=tolerance)
    if binned_cells == 1 or binned_cells < 0:
        problem = f"the binned row needs 0 or at least 2 cells, not {binned_cells}"
        raise SetupError("binned_cells", problem)
    if sequence_tokens and not engine.eos_ids:
        raise SetupError("eos", "the sequence rows need the engine's EOS (it has none)")
    if sequence_tokens:
        problem = sequence_problem(sequence_tokens, rates)
        if problem:
            raise SetupError("sequence", problem)
    guard = Guard(timeout)
    probs = guarded_probs(guard, engine)
    report = EngineReport(engine.name, "engine", notes=list(engine.notes))
    case = engine.name
    planned: int | None = runs
    try:
        vocab = target_vocab(probs, engine)
        settings = Settings(rates, bins)
        exact_tokens = 0 if engine.greedy else exact_tokens_for(vocab, num_new_tokens)
        law = (
            first_tokens_law(probs, engine.prompt, exact_tokens, engine.eos_ids)
            if exact_tokens
            else {}
        )
        binned = None
        if not engine.greedy and not exact_tokens and binned_cells and num_new_tokens:
            head = min(BINNED_TOKENS, num_new_tokens)
            check_binned(len(engine.prompt), vocab, binned_cells)
            binned = binned_law(probs, engine.prompt, head, engine.eos_ids, binned_cells)
        if planned is None:
            planned = GREEDY_RUNS
            if not engine.greedy:
                uniform = dict.fromkeys(range(bins), 1 / bins)  # the PIT rows' law
                tested = law or (binned.law if binned else {(): 1.0})
                planned = rounds_needed([uniform, tested], rates)
        check_plan(engine, vocab, planned, num_new_tokens, sequence_tokens)
        prompts = run_prompts(engine, planned, vocab, seed)
        emitted = sample_runs(engine, prompts, num_new_tokens, seed, bars, guard)
        report.results.append(layout_row(case, emitted, vocab, engine.eos_ids, num_new_tokens))
        if report.results[-1].passed:
            summaries = token_summaries(probs, prompts, emitted, vocab)
            report.results += law_rows(case, engine, emitted, summaries, law, exact_tokens,
                                       settings, num_new_tokens, seed, binned)  # fmt: skip
            if engine.draft_probs is not None and not engine.greedy:
                draft = guarded_probs(guard, engine, "draft_probs", vocab)
                row = acceptance_row(case, emitted, prompts, probs, draft, vocab,
                                     engine.eos_ids, settings, engine.acceptance_rule)  # fmt: skip
                # Before the coverage row, which closes the per-position rows.
                report.results.insert(len(report.results) - 1, row)
            if sequence_tokens:
                add_sequence_rows(
                    report, engine, sequence_tokens, settings, seed, bars, guard, probs
                )
    except SubjectFailure as failure:
        if failure.runs_done is None:  # before sampling (0) or after it (every run)
            failure.runs_done = report.results[0].n if report.results else 0
        report.results.append(failure_row(case, failure, planned))
    finally:
        guard.close()
    report.seconds = time.perf_counter() - start
    return report


def law_rows(
    case: str,
    engine: Engine,
    emitted: list[Emission],
    rows: TokenSummaries,
    law: dict[tuple[int, ...], float],
    exact_tokens: int,
    settings: Settings,
    num_new_tokens: int,
    seed: int,
    binned: BinnedLaw | None = None,
) -> list[CaseResult]:
    """support, then greedy or the exact (or binned) and PIT rows, then coverage."""
    out = [support_row(case, emitted, rows)]
    if engine.greedy:
        # A tie within the tolerance (the engine's stated numeric distance from the reference)
        # is one its numerics may break either way, as a statistical row would allow.
        near_tie = max(NEAR_TIE, settings.rates.tolerance)
        out.append(greedy_row(case, emitted, rows, near_tie))
    else:
        if law:
            out.append(exact_law_row(case, emitted, law, exact_tokens, engine.eos_ids, settings))
        if binned:
            out.append(binned_law_row(case, emitted, binned, engine.eos_ids, settings))
        # A stream of its own: an engine seeded like run 0 must not supply the PIT's draws.
        values = pit_values(emitted, rows, num_new_tokens, np.random.default_rng([seed, 1]))
        out += pit_rows(case, values, settings)
    longest = None if engine.max_draft is None else min(engine.max_draft, num_new_tokens - 1)
    out.append(coverage_row(case, emitted, longest))
    return out


def add_sequence_rows(
    report: EngineReport,
    engine: Engine,
    tokens: int,
    settings: Settings,
    seed: int,
    bars: Bars | None,
    guard: Guard,
    probs: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> None:
    """The layout, stop and length rows over long runs, and a note of what they cost;
    ``probs``: the 4-token rows' guarded ``target_probs`` (one V for every answer)."""
    if engine.greedy:
        report.notes.append("sequence rows: not run for a greedy engine (one output per prompt)")
        return
    rows, cost = timed_sequence_rows(
        engine,
        tokens,
        rates=sequence_rates(settings.rates, tokens),
        seed=seed,
        bars=bars,
        guard=guard,
        target_probs=probs,
    )
    report.results += rows
    report.notes.append(
        f"sequence rows: {cost['runs']:.0f} engine runs of up to {tokens} tokens "
        f"({cost['engine_seconds']:.1f} s) and as many drawn from the target "
        f"({cost['target_seconds']:.1f} s); tolerance {tokens} x {settings.rates.tolerance:g}"
    )
