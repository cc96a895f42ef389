"""The audits behind a parity report and the per-position samples it draws.

Every call of the subject (the verifier, the engine factory, the engine's ``generate`` and
``target_probs``) goes through the audit's guard (:mod:`specproof.audit.guard`), the redraw of
the plotted positions included: a subject that raises, calls ``sys.exit`` or runs past the time
limit fails a row of the report, which is still written."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.engine.audit import ENGINE_TIMEOUT, exact_tokens_for
from specproof.audit.engine.laws import first_tokens_law
from specproof.audit.engine.runs import guarded_probs, run_prompts, sample_runs, target_vocab
from specproof.audit.engine.subject import Engine
from specproof.audit.filters import filter_round
from specproof.audit.guard import Guard, SubjectFailure, abandoned_calls, describe
from specproof.audit.laws import tokens_law
from specproof.audit.report import AuditReport, CaseResult, exact_row
from specproof.audit.rounds import Sampled, sample_rounds
from specproof.audit.run import subject_rows
from specproof.audit.settings import DEFAULT_MAX_BATCH, DEFAULT_TIMEOUT
from specproof.audit.signatures import Signature
from specproof.callables import load_callable
from specproof.exit_status import INCONCLUSIVE, PASSED, ROW_FAILED
from specproof.testing.levels import level_named
from specproof.testing.lossless import (
    BROKEN_CHECKS,
    ENGINE_TWIN,
    VERIFIER_TWIN,
    Outcome,
    engine_outcome,
    plugin_problems,
    twin_line,
    verifier_outcome,
    verifier_plan,
)

from .plots import PlotsUnavailable, write_plots
from .positions import as_rows, position_tables
from .report import Section, render

Report = Callable[[], tuple[str, int]]
"""The work of a report once its arguments are checked: report.md's text and the exit status."""


def rounds_of(report: AuditReport, case: str) -> int | None:
    """The rounds (or runs) the audit sampled in ``case``: the n of its first sampled row."""
    return next((r.n for r in report.results if r.case == case and r.n is not None), None)


def broke(report: AuditReport, case: str) -> bool:
    """Whether a call of the subject broke ``case`` (it raised, hung or answered out of shape):
    its positions are then not drawn again."""
    return any(
        r.case == case and r.verdict == "FAIL" and r.check in BROKEN_CHECKS for r in report.results
    )


def draw(sections: list[Section], out: Path, notes: list[str]) -> None:
    """PNG plots for every section, or a note saying why there are none."""
    try:
        for section in sections:
            stem = section.case.replace(" ", "-").replace("/", "-")
            section.plots = [p.name for p in write_plots(section.tables, out, stem)]
    except PlotsUnavailable as missing:
        notes.append(str(missing))
        print(f"specproof parity-report: {missing}")


@dataclass(frozen=True)
class VerifierRequest:
    path: str
    signature: Signature
    level: str
    seed: int
    cases: Sequence[str] | None
    plot_case: str
    timeout: float = DEFAULT_TIMEOUT
    max_batch: int = DEFAULT_MAX_BATCH


def prepare_verifier_report(request: VerifierRequest, out: Path, *, command: str) -> Report:
    """Check every argument (import the verifier, name its cases; ValueError in one line, before
    any call of it) and return the work that writes the report."""
    fn = load_callable(request.path)
    level_named(request.level)
    plugin_problems((request.plot_case,), request.seed, request.signature)
    verifier_plan(fn, request.signature, request.cases, request.seed, None)

    def report() -> tuple[str, int]:
        return verifier_report(fn, request, out, command=command)

    return report


def verifier_report(
    fn: Callable[..., object], request: VerifierRequest, out: Path, *, command: str
) -> tuple[str, int]:
    """report.md's text for the verifier ``fn`` (at ``request.path``), and its exit status."""
    outcome: Outcome = verifier_outcome(
        fn,
        request.signature,
        level=request.level,
        seed=request.seed,
        cases=request.cases,
        max_batch=request.max_batch,
        timeout=request.timeout,
    )
    outcome.report.subject = request.path
    sections: list[Section] = []
    notes: list[str] = []
    rounds = rounds_of(outcome.report, request.plot_case)
    if rounds is None:
        notes.append(f"no positions shown: case {request.plot_case} was not sampled")
    elif broke(outcome.report, request.plot_case):
        notes.append(f"no positions shown: the verifier broke case {request.plot_case} (row above)")
    elif abandoned_calls():
        notes.append("no positions shown: a call of the verifier is still running")
    else:
        (problem,) = plugin_problems((request.plot_case,), request.seed, request.signature)
        sampled: list[Sampled] = []

        def redraw(guard: Guard) -> list[CaseResult]:
            settings = AuditSettings.of(request.signature, max_batch=request.max_batch)
            round_fn = filter_round(guard.subject(fn), settings)
            sampled.append(sample_rounds(problem, round_fn, rounds, request.seed))
            return []

        failed = subject_rows(f"{problem.name} (positions)", redraw, request.timeout)
        outcome.report.results += failed
        if sampled:
            outputs = as_rows(sampled[0].outputs)
            tables = position_tables(outputs, tokens_law(problem), problem.num_tokens)
            note = (
                f"{problem.description}: {rounds} rounds drawn again with the audit's seed; each "
                "output is the round's tokens continued from the target, so every position "
                "follows the target's law exactly when the verifier is lossless."
            )
            sections.append(Section(request.plot_case, note, tables))
        else:
            notes.append("no positions shown: the verifier failed the redraw (row above)")
    draw(sections, out, notes)
    text = render(
        outcome, command=command, seed=request.seed, twin_line=twin_line(outcome, VERIFIER_TWIN),
        sections=sections, notes=notes,
    )  # fmt: skip
    return text, exit_status(outcome)


@dataclass(frozen=True)
class EngineRequest:
    path: str
    level: str
    seed: int
    tokens: int
    timeout: float = ENGINE_TIMEOUT


def prepare_engine_report(request: EngineRequest, out: Path, *, command: str) -> Report:
    """Check every argument (import the factory; ValueError in one line, before it is called)
    and return the work that writes the report."""
    factory = load_callable(request.path)
    level_named(request.level)

    def report() -> tuple[str, int]:
        return engine_report(factory, request, out, command=command)

    return report


def built_engine(factory: Callable[[], object], request: EngineRequest) -> Engine | CaseResult:
    """The factory's engine, called through the guard, or the FAIL row saying how it broke
    (it raised, exited, hung, or returned something else than an Engine)."""
    guard = Guard(request.timeout)
    what = f"the engine factory {request.path}"
    try:
        made = guard.call("factory", what, factory)
    except SubjectFailure as failure:
        return exact_row(request.path, failure.check, None, "FAIL", failure.reason)
    finally:
        guard.close()
    if not isinstance(made, Engine):
        reason = f"{what} returned {type(made).__name__}, not an Engine"
        return exact_row(request.path, "factory", None, "FAIL", reason)
    return made


def engine_report(
    factory: Callable[[], object], request: EngineRequest, out: Path, *, command: str
) -> tuple[str, int]:
    """report.md's text for the engine ``factory`` makes, and its exit status."""
    level = level_named(request.level)
    engine = built_engine(factory, request)
    if isinstance(engine, CaseResult):
        report = AuditReport(request.path, "engine")
        report.results.append(engine)
        outcome = Outcome(level, report, None)
        text = render(
            outcome, command=command, seed=request.seed, twin_line=twin_line(outcome, ENGINE_TWIN),
            sections=[], notes=["no positions shown: there is no engine to run"],
        )  # fmt: skip
        return text, exit_status(outcome)
    outcome = engine_outcome(
        engine,
        num_new_tokens=request.tokens,
        level=level,
        seed=request.seed,
        timeout=request.timeout,
    )
    sections: list[Section] = []
    notes: list[str] = []
    if abandoned_calls():
        notes.append("no positions shown: a call of the engine is still running")
    elif broke(outcome.report, engine.name):
        notes.append("no positions shown: the engine broke the audit's runs (row above)")
    else:
        failed = engine_positions(engine, outcome, request, sections, notes)
        if failed is not None:
            outcome.report.results.append(failed)
    draw(sections, out, notes)
    text = render(
        outcome, command=command, seed=request.seed, twin_line=twin_line(outcome, ENGINE_TWIN),
        sections=sections, notes=notes,
    )  # fmt: skip
    return text, exit_status(outcome)


def engine_positions(
    engine: Engine,
    outcome: Outcome,
    request: EngineRequest,
    sections: list[Section],
    notes: list[str],
) -> CaseResult | None:
    """The engine's runs drawn again for the position tables (into ``sections``), every call
    through the guard; the FAIL row of a call that broke, else None."""
    runs = rounds_of(outcome.report, engine.name)
    guard = Guard(request.timeout)
    try:
        probs = guarded_probs(guard, engine)
        vocab = target_vocab(probs, engine)
        width = 0 if engine.greedy else exact_tokens_for(vocab, request.tokens)
        if runs is None or width == 0:
            notes.append(
                "no positions shown: the exact law of the first tokens is computed for V^N <= 64 "
                "and sampled engines only (the PIT rows test every position)"
            )
            return None
        prompts = run_prompts(engine, runs, vocab, request.seed)
        emitted = sample_runs(engine, prompts, request.tokens, request.seed, None, guard)
        law = first_tokens_law(probs, engine.prompt, width, engine.eos_ids)
    except SubjectFailure as failure:
        notes.append("no positions shown: the engine failed the redraw (row above)")
        detail = f"{engine.name} (positions): {failure.reason}"
        return exact_row(engine.name, failure.check, None, "FAIL", detail)
    except Exception as error:  # the subject's answer broke a check of the redraw
        notes.append("no positions shown: the engine failed the redraw (row above)")
        detail = f"{engine.name} (positions): {describe(error)}"
        return exact_row(engine.name, "runs", None, "FAIL", detail)
    finally:
        guard.close()
    tables = position_tables([e.tokens for e in emitted], law, width)
    note = f"{runs} runs drawn again with the audit's seeds; prompt {list(engine.prompt)}."
    sections.append(Section(engine.name, note, tables))
    return None


def exit_status(outcome: Outcome) -> int:
    """The one exit rule: 1 when a row failed, the must-fail twin passed or could not run (the
    report cannot tell a wrong law apart), 4 when no row failed but the rows fall short of
    their power, else 0."""
    report = outcome.report
    if report.failed or outcome.twin_escaped or outcome.twin_broken is not None:
        return ROW_FAILED
    return PASSED if report.passed else INCONCLUSIVE
