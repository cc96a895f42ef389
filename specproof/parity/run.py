"""The audits behind a parity report and the per-position samples it draws."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specproof.audit.engine.audit import exact_tokens_for
from specproof.audit.engine.laws import first_tokens_law
from specproof.audit.engine.runs import guarded_probs, run_prompts, sample_runs, target_vocab
from specproof.audit.engine.subject import Engine
from specproof.audit.guard import Guard
from specproof.audit.laws import tokens_law
from specproof.audit.report import AuditReport
from specproof.audit.rounds import sample_rounds, verifier_round
from specproof.audit.signatures import Signature
from specproof.callables import load_callable
from specproof.command_rules import INCONCLUSIVE, PASSED, ROW_FAILED
from specproof.testing.lossless import (
    ENGINE_TWIN,
    VERIFIER_TWIN,
    Outcome,
    default_cases,
    engine_outcome,
    plugin_problems,
    twin_line,
    verifier_outcome,
)

from .plots import PlotsUnavailable, write_plots
from .positions import as_rows, position_tables
from .report import Section, render


def rounds_of(report: AuditReport, case: str) -> int | None:
    """The rounds (or runs) the audit sampled in ``case``: the n of its first sampled row."""
    return next((r.n for r in report.results if r.case == case and r.n is not None), None)


def draw(sections: list[Section], out: Path, notes: list[str]) -> None:
    """PNG plots for every section, or a note saying why there are none."""
    try:
        for section in sections:
            stem = section.case.replace(" ", "-").replace("/", "-")
            section.plots = [p.name for p in write_plots(section.tables, out, stem)]
    except PlotsUnavailable as missing:
        notes.append(str(missing))
        print(f"specproof parity-report: {missing}")


def verifier_report(
    path: str,
    signature: Signature,
    out: Path,
    *,
    command: str,
    level: str,
    seed: int,
    cases: Sequence[str] | None,
    plot_case: str,
) -> tuple[str, int]:
    """report.md's text for the verifier at ``path``, and its exit status."""
    fn = load_callable(path)
    chosen = tuple(cases) if cases else default_cases(signature)
    outcome: Outcome = verifier_outcome(
        fn,
        signature,
        level=level,
        seed=seed,
        cases=chosen,
    )
    outcome.report.subject = path
    sections: list[Section] = []
    notes: list[str] = []
    rounds = rounds_of(outcome.report, plot_case)
    if rounds is None:
        notes.append(f"no positions shown: case {plot_case} was not sampled")
    else:
        (problem,) = plugin_problems((plot_case,), seed, signature)
        sampled = sample_rounds(problem, verifier_round(fn, signature), rounds, seed)
        tables = position_tables(as_rows(sampled.outputs), tokens_law(problem), problem.num_tokens)
        note = (
            f"{problem.description}: {rounds} rounds drawn again with the audit's seed; each "
            "output is the round's tokens continued from the target, so every position follows "
            "the target's law exactly when the verifier is lossless."
        )
        sections.append(Section(plot_case, note, tables))
    draw(sections, out, notes)
    text = render(
        outcome, command=command, seed=seed, twin_line=twin_line(outcome, VERIFIER_TWIN),
        sections=sections, notes=notes,
    )  # fmt: skip
    return text, exit_status(outcome)


def engine_report(
    path: str, out: Path, *, command: str, level: str, seed: int, tokens: int
) -> tuple[str, int]:
    """report.md's text for the engine ``path`` makes, and whether it passed."""
    engine = load_callable(path)()
    if not isinstance(engine, Engine):
        raise ValueError(f"{path} returned {type(engine).__name__}, not an Engine")
    outcome = engine_outcome(engine, num_new_tokens=tokens, level=level, seed=seed)
    sections: list[Section] = []
    notes: list[str] = []
    runs = rounds_of(outcome.report, engine.name)
    guard = Guard(None)
    probs = guarded_probs(guard, engine)
    vocab = target_vocab(probs, engine)
    width = 0 if engine.greedy else exact_tokens_for(vocab, tokens)
    if runs is None or width == 0:
        notes.append(
            "no positions shown: the exact law of the first tokens is computed for V^N <= 64 "
            "and sampled engines only (the PIT rows test every position)"
        )
    else:
        emitted = sample_runs(engine, run_prompts(engine, runs, vocab, seed), tokens, seed, None)
        law = first_tokens_law(probs, engine.prompt, width, engine.eos_ids)
        tables = position_tables([e.tokens for e in emitted], law, width)
        note = f"{runs} runs drawn again with the audit's seeds; prompt {list(engine.prompt)}."
        sections.append(Section(engine.name, note, tables))
    guard.close()
    draw(sections, out, notes)
    text = render(
        outcome, command=command, seed=seed, twin_line=twin_line(outcome, ENGINE_TWIN),
        sections=sections, notes=notes,
    )  # fmt: skip
    return text, exit_status(outcome)


def exit_status(outcome: Outcome) -> int:
    """The one exit rule: 1 when a row failed or the must-fail twin passed (the report cannot
    tell a wrong law apart), 4 when no row failed but the rows fall short of their power, else
    0."""
    report = outcome.report
    if report.failed or outcome.twin_escaped:
        return ROW_FAILED
    return PASSED if report.passed else INCONCLUSIVE
