"""``assert_lossless`` and ``assert_engine_lossless``: the audit's rows as one pytest assertion,
each call checked against its must-fail twin (:mod:`.twins`).

A call prints (pytest shows it with ``-s`` or on failure) the level's false-fail rate and power,
then the audit's row table; it raises ``AssertionError`` carrying the table when a row fails,
and :class:`TwinPassedError` when the subject passes but its twin passes too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from specproof.audit.cases import verifier_problems
from specproof.audit.engine import Engine, audit_engine
from specproof.audit.engine.audit import DEFAULT_TOKENS
from specproof.audit.problems import TableProblem
from specproof.audit.report import AuditReport
from specproof.audit.run import audit_verifier
from specproof.audit.settings import CallLimits, ErrorRates
from specproof.audit.signatures import DEFAULT_MAX_BATCH, Signature, signature_named

from .levels import DEFAULT_LEVEL, Level, level_named
from .twins import shifted_target_probs, shifted_target_twin

CASES = (
    "small-vocab",
    "one-hot-draft",
    "one-hot-target",
    "p-equals-q",
    "zeros",
    "ragged",
    "greedy",
    "greedy-ties",
    "mixed",
    "long",
    "requests",
    "requests-random",
    "filters-order",
    "filters-min-p",
)
"""The audit's cases a plugin call runs by default (those its signature can express): every
law the audit's battery tests at small vocabularies. Left out for CI time: the large
vocabularies (``large-vocab-long``, V = 2053, drafts of 0..8, is :data:`LARGE_CASES`: 11 to
70 s more) and the four adversarial cases, which ``specproof audit`` runs."""
LARGE_CASES = ("large-vocab-long",)
HF_CASES = ("small-vocab", "zeros", "requests-random")
"""A signature called once per row (batch 1, as ``hf``): its default is these cases only."""


def default_cases(signature: Signature) -> tuple[str, ...]:
    """The cases a check runs unless told: :data:`CASES`, or :data:`HF_CASES` for a signature
    called once per row."""
    return HF_CASES if signature_named(signature).calls_per_row else CASES


TWIN_CASE = "small-vocab"
"""The twin's case (every signature expresses it): V = 4, gamma = 2, random rows."""
PLUGIN_LONG_VOCAB = 2053


class TwinPassedError(RuntimeError):
    """The must-fail twin passed the same check: the check cannot tell a wrong law apart."""


@dataclass(frozen=True)
class Outcome:
    """What a call checked: the subject's report and its twin's."""

    level: Level
    report: AuditReport
    twin: AuditReport | None

    @property
    def twin_escaped(self) -> bool:
        """The twin ran and no row of it failed (a LIMIT or WARN row is no detection)."""
        return self.twin is not None and not any(r.verdict == "FAIL" for r in self.twin.results)

    @property
    def statistical_rows(self) -> int:
        return sum(1 for r in self.report.results if not r.exact)


def plugin_problems(names: Collection[str], seed: int, signature: Signature) -> list[TableProblem]:
    """The audit cases called ``names`` (raising ValueError for an unknown one)."""
    battery = verifier_problems(
        seed,
        large_vocab=PLUGIN_LONG_VOCAB,
        filter_order=signature_named(signature).default_filter_order,
    )
    unknown = set(names) - {p.name for p in battery}
    if unknown:
        raise ValueError(f"unknown audit case(s): {', '.join(sorted(unknown))}")
    return [p for p in battery if p.name in names]


def _say(outcome: Outcome, label: str) -> None:
    print(outcome.level.promise(outcome.statistical_rows))
    print(outcome.report.table())
    if outcome.twin is not None:
        print(twin_line(outcome, label))


def twin_line(outcome: Outcome, label: str) -> str:
    """What the must-fail twin did, in one line."""
    if outcome.twin is None:
        return "must-fail twin: not run (the subject failed, or twin=False)"
    failed = [r for r in outcome.twin.results if r.verdict == "FAIL"]
    if not failed:
        return f"must-fail twin ({label}): PASSED (no row failed)"
    return f"must-fail twin ({label}): FAIL as required ({failed[0].result()})"


def _settle(outcome: Outcome, label: str) -> Outcome:
    _say(outcome, label)
    if not outcome.report.passed:
        raise AssertionError(
            f"{outcome.report.subject} is not lossless "
            f"({outcome.level.promise(outcome.statistical_rows)}):\n{outcome.report.table()}"
        )
    if outcome.twin is not None and outcome.twin_escaped:
        raise TwinPassedError(
            f"the must-fail twin of {outcome.report.subject} ({label}) passed the same check, so "
            "this check cannot tell a wrong law apart (too few rounds, or a subject that ignores "
            f"its target):\n{outcome.twin.table()}"
        )
    return outcome


def assert_lossless(verifier: Callable[..., Any], signature: Signature, **options: Any) -> Outcome:
    """Audit ``verifier`` (a chain verifier with ``signature``: ``flashinfer``, ``vllm``,
    ``vllm-logits`` or ``hf``; see ``specproof audit --help``) and its must-fail twin (the
    verifier handed target rows shifted by one token id); raise ``AssertionError`` with the row
    table when a row fails, :class:`TwinPassedError` when the twin passes. Options: those of
    :func:`verifier_outcome`."""
    return _settle(verifier_outcome(verifier, signature, **options), VERIFIER_TWIN)


VERIFIER_TWIN = "target rows shifted by one token id"
ENGINE_TWIN = "target law shifted by one token id"


def verifier_outcome(
    verifier: Callable[..., Any],
    signature: Signature,
    *,
    level: str | Level = DEFAULT_LEVEL,
    seed: int = 0,
    cases: Sequence[str] | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    calls: bool = False,
    twin: bool = True,
) -> Outcome:
    """The audit of ``verifier`` on ``cases``, then (when it passed) of its twin on
    :data:`TWIN_CASE`; nothing raised for a failed row.

    Every statistical row has false-fail rate <= alpha and power >= 1 - beta against TV >=
    delta (``level``: ``full`` 0.99 against 0.1, ``quick`` 0.9 against 0.2; alpha 1e-6 per
    row). ``cases`` defaults to :data:`CASES` (:data:`HF_CASES` for ``hf``); ``calls`` adds
    the audit's repeated-call rows (seeded requests reproduce)."""
    chosen = level if isinstance(level, Level) else level_named(level)
    rates = ErrorRates(chosen.alpha, chosen.beta, chosen.delta)
    limits = CallLimits(max_batch=max_batch)
    report = audit_verifier(
        verifier,
        signature,
        seed=seed,
        problems=plugin_problems(
            cases if cases is not None else default_cases(signature),
            seed,
            signature,
        ),
        calls=calls,
        robustness=False,
        rates=rates,
        limits=limits,
    )
    twin_report = None
    if twin and report.passed:
        twin_report = audit_verifier(
            shifted_target_twin(verifier, signature),
            signature,
            seed=seed + 1,
            problems=plugin_problems((TWIN_CASE,), seed, signature),
            calls=False,
            robustness=False,
            fail_fast=True,
            rates=rates,
            limits=limits,
        )
    return Outcome(chosen, report, twin_report)


def assert_engine_lossless(
    generate: Callable[..., Any],
    target_probs: Callable[[torch.Tensor], torch.Tensor],
    prompt: Sequence[int],
    **options: Any,
) -> Outcome:
    """Audit an engine's ``generate(prompt, num_new_tokens, seed)`` against ``target_probs``
    (sequences [B, L] -> the target's processed law [B, L, V] after each prefix, from a plain
    pass), as ``specproof audit-engine`` does, and its twin (the same engine checked against the
    target law shifted by one token id), raising as :func:`assert_lossless` does. Options:
    those of :func:`engine_outcome`."""
    engine = Engine(
        options.pop("name", "") or str(getattr(generate, "__name__", "engine")),
        generate,
        target_probs,
        tuple(prompt),
        eos=options.pop("eos", None),
        greedy=options.pop("greedy", False),
        max_draft=options.pop("max_draft", None),
    )
    return _settle(engine_outcome(engine, **options), ENGINE_TWIN)


def engine_outcome(
    engine: Engine,
    *,
    num_new_tokens: int = DEFAULT_TOKENS,
    level: str | Level = DEFAULT_LEVEL,
    seed: int = 0,
    twin: bool = True,
) -> Outcome:
    """The audit of ``engine`` (its ``generate`` against its ``target_probs``), then (when it
    passed) of the same engine against the target law shifted by one token id; nothing raised.
    Rates as in :func:`verifier_outcome`."""
    chosen = level if isinstance(level, Level) else level_named(level)
    rates = ErrorRates(chosen.alpha, chosen.beta, chosen.delta)
    report = audit_engine(engine, num_new_tokens=num_new_tokens, seed=seed, rates=rates)
    twin_report = None
    if twin and report.passed:
        twin_engine = replace(
            engine,
            name=f"{engine.name} (twin)",
            target_probs=shifted_target_probs(engine.target_probs),
        )
        twin_report = audit_engine(
            twin_engine,
            num_new_tokens=num_new_tokens,
            seed=seed + 1,
            rates=rates,
        )
    return Outcome(chosen, report, twin_report)
