"""Audit a whole generate loop against the target's own law (see :mod:`.rows` for the rows)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..report import AuditReport
from ..run import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_TOLERANCE, rounds_needed
from .coverage import WARN, coverage_row
from .laws import first_tokens_law, next_token_rows
from .rows import (
    Settings,
    exact_law_row,
    greedy_row,
    layout_row,
    pit_rows,
    pit_values,
    support_row,
)
from .subject import Emission, Engine, as_emission

DEFAULT_DELTA = 0.1
"""Engines cost a model call per round; delta = 0.1 keeps a default audit to a few thousand
runs (the function audit's 0.05 would take four times as many)."""
DEFAULT_BINS = 10
MAX_EXACT_CELLS = 64
"""The exact row runs when V^N is at most this."""

GREEDY_RUNS = 50
"""Runs of a greedy engine, each from its own random prompt (one prompt has one output)."""

Bars = Callable[[str], Callable[[int, int], None]]


def run_prompts(engine: Engine, runs: int, vocab: int, seed: int) -> list[tuple[int, ...]]:
    """The engine's prompt for every run of a sampled engine; random prompts of the same
    length (without EOS) for a greedy one, whose output one prompt determines."""
    if not engine.greedy:
        return [engine.prompt] * runs
    rng = np.random.default_rng(seed)
    tokens = [t for t in range(vocab) if t not in engine.eos_ids]
    return [tuple(int(t) for t in rng.choice(tokens, len(engine.prompt))) for _ in range(runs)]


def sample_runs(
    engine: Engine,
    prompts: list[tuple[int, ...]],
    num_new_tokens: int,
    seed: int,
    bars: Bars | None,
) -> list[Emission]:
    """Run ``engine`` once per prompt: run i with seed + i, or batch b of a batched engine
    with seed + b."""
    runs = len(prompts)
    update = bars(engine.name) if bars else None
    emitted: list[Emission] = []
    step = engine.batch if engine.generate_many else 1
    for call, start in enumerate(range(0, runs, step)):
        chunk = prompts[start : start + step]
        if engine.generate_many:
            out = engine.generate_many(chunk, num_new_tokens, seed + call)
            if len(out) != len(chunk):
                raise ValueError(f"generate_many returned {len(out)} runs for {len(chunk)}")
            emitted += [as_emission(o) for o in out]
        else:
            emitted.append(as_emission(engine.generate(chunk[0], num_new_tokens, seed + start)))
        done = len(emitted)
        if update and (done == runs or step > 1 or done % max(runs // 50, 1) == 0):
            update(done, runs)
    return emitted


def teacher_forced_rows(
    engine: Engine, prompts: list[tuple[int, ...]], emitted: list[Emission], vocab: int
) -> np.ndarray:
    """[runs, K + 1, V]: the target's law of each run's tokens; one batch per distinct prompt."""
    width = max((len(r.tokens) for r in emitted), default=0)
    out = np.zeros((len(emitted), width + 1, vocab))
    for prompt in dict.fromkeys(prompts):
        index = [i for i, p in enumerate(prompts) if p == prompt]
        rows = next_token_rows(engine.target_probs, prompt, [emitted[i].tokens for i in index])
        out[index, : rows.shape[1]] = rows
    return out


class EngineReport(AuditReport):
    """An audit report whose coverage warnings inform but do not fail."""

    @property
    def passed(self) -> bool:
        checked = [r for r in self.results if r.verdict != WARN]
        return bool(checked) and all(r.passed for r in checked)


def exact_tokens_for(vocab: int, num_new_tokens: int) -> int:
    """The largest N <= num_new_tokens with V^N <= MAX_EXACT_CELLS (0: no exact row)."""
    tokens = 0
    while tokens < num_new_tokens and vocab ** (tokens + 1) <= MAX_EXACT_CELLS:
        tokens += 1
    return tokens


def audit_engine(
    engine: Engine,
    *,
    num_new_tokens: int = 4,
    runs: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    delta: float = DEFAULT_DELTA,
    tolerance: float = DEFAULT_TOLERANCE,
    bins: int = DEFAULT_BINS,
    seed: int = 0,
    bars: Bars | None = None,
    sequence_tokens: int | None = None,
) -> EngineReport:
    """Run ``engine`` ``runs`` times (default: the n that gives every statistical row power
    >= 1 - beta against TV >= delta) and test what it emitted against the target's law.
    ``sequence_tokens``: also the sequence rows (:mod:`.sequence`) over separate runs of that
    many tokens."""
    start = time.perf_counter()
    if sequence_tokens and not engine.eos_ids:
        raise ValueError("the sequence rows need the engine's EOS (it has none)")
    settings = Settings(alpha, beta, delta, tolerance, bins)
    vocab = next_token_rows(engine.target_probs, engine.prompt, [()]).shape[-1]
    exact_tokens = 0 if engine.greedy else exact_tokens_for(vocab, num_new_tokens)
    law = (
        first_tokens_law(engine.target_probs, engine.prompt, exact_tokens, engine.eos_ids)
        if exact_tokens
        else {}
    )
    if runs is None:
        runs = GREEDY_RUNS
        if not engine.greedy:
            uniform = dict.fromkeys(range(bins), 1 / bins)  # the PIT rows' law
            runs = rounds_needed([uniform, law or {(): 1.0}], alpha, beta, delta, tolerance)
    prompts = run_prompts(engine, runs, vocab, seed)
    emitted = sample_runs(engine, prompts, num_new_tokens, seed, bars)
    report = EngineReport(engine.name, "engine", notes=list(engine.notes))
    case = engine.name
    report.results.append(layout_row(case, emitted, vocab, engine.eos_ids, num_new_tokens))
    if not report.results[-1].passed:
        report.seconds = time.perf_counter() - start
        return report
    rows = teacher_forced_rows(engine, prompts, emitted, vocab)
    report.results.append(support_row(case, emitted, rows))
    if engine.greedy:
        report.results.append(greedy_row(case, emitted, rows))
    else:
        if law:
            report.results.append(
                exact_law_row(case, emitted, law, exact_tokens, engine.eos_ids, settings)
            )
        # A stream of its own: an engine seeded like run 0 must not supply the PIT's draws.
        values = pit_values(emitted, rows, num_new_tokens, np.random.default_rng([seed, 1]))
        report.results += pit_rows(case, values, settings)
    longest = None if engine.max_draft is None else min(engine.max_draft, num_new_tokens - 1)
    report.results.append(coverage_row(case, emitted, longest))
    if sequence_tokens:
        add_sequence_rows(report, engine, sequence_tokens, settings, seed, bars)
    report.seconds = time.perf_counter() - start
    return report


def add_sequence_rows(
    report: EngineReport,
    engine: Engine,
    tokens: int,
    settings: Settings,
    seed: int,
    bars: Bars | None,
) -> None:
    """The stop and length rows over long runs, and a note of what they cost."""
    from .sequence import timed_sequence_rows

    if engine.greedy:
        report.notes.append("sequence rows: not run for a greedy engine (one output per prompt)")
        return
    rows, cost = timed_sequence_rows(
        engine,
        tokens,
        alpha=settings.alpha,
        beta=settings.beta,
        delta=settings.delta,
        tolerance=settings.tolerance * tokens,
        seed=seed,
        bars=bars,
    )
    report.results += rows
    report.notes.append(
        f"sequence rows: {cost['runs']:.0f} engine runs of up to {tokens} tokens "
        f"({cost['engine_seconds']:.1f} s) and as many drawn from the target "
        f"({cost['target_seconds']:.1f} s); tolerance {tokens} x {settings.tolerance:g}"
    )
