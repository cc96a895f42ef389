"""``assert_lossless`` and ``assert_engine_lossless``: the audit's rows as one pytest assertion,
each call checked against its must-fail twin (:mod:`.twins`).

A call prints (pytest shows it with ``-s`` or on failure) the level's false-fail rate and power,
then the audit's row table; it raises ``AssertionError`` carrying the table when a row fails,
:class:`TwinPassedError` when the subject passes but its twin passes too, and
:class:`TwinError` when the twin could not run (it raised, was refused or timed out): no
evidence either way. Its arguments are checked before any work (:mod:`.arguments`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from specproof.audit.cases import applies, verifier_problems
from specproof.audit.engine import Engine, audit_engine
from specproof.audit.engine.audit import DEFAULT_TOKENS, ENGINE_TIMEOUT
from specproof.audit.problems import TableProblem
from specproof.audit.report import AuditReport, CaseResult
from specproof.audit.run import audit_verifier
from specproof.audit.settings import DEFAULT_TIMEOUT, CallLimits, ErrorRates
from specproof.audit.signatures import DEFAULT_MAX_BATCH, Signature, signature_named
from specproof.reference.filters import FilterOrder

from .arguments import (
    checked_case_names,
    checked_count,
    checked_filter_order,
    checked_seed,
    checked_switch,
    checked_timeout,
    expressible,
)
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
    "filters-min-p-top-p",
    "filters-min-p-temperature",
)
"""The audit's cases a plugin call runs by default (those its signature can express): every
case of the audit's battery at small vocabularies, the four binding-filter cases included.
Left out for CI time: the large vocabularies (``large-vocab``, V = 50257, and
``large-vocab-long``, V = 2053 with drafts of 0..8, which is :data:`LARGE_CASES`: 11 to 70 s
more), ``long-ragged`` and the four adversarial cases, which ``specproof audit`` runs with the
rare-event hunt."""
LARGE_CASES = ("large-vocab-long",)
FILTER_CASES = CASES[-4:]
"""The binding-filter cases (top-k with top-p, min-p, min-p with top-p, min-p with the
temperature), in the order of the signature's engine or ``filter_order=``."""
HF_CASES = ("small-vocab", "zeros", "requests-random")
"""A signature called once per row (batch 1, as ``hf``): its default is these cases only
(``HF_CASES + FILTER_CASES`` adds the filter cases, about 7 s more at level full)."""


def default_cases(signature: Signature) -> tuple[str, ...]:
    """The cases a check runs unless told: :data:`CASES`, or :data:`HF_CASES` for a signature
    called once per row."""
    return HF_CASES if signature_named(signature).calls_per_row else CASES


def signature_cases(signature: Signature) -> tuple[str, ...]:
    """The default cases ``signature`` can express, in the battery's order: what a call runs
    unless told, and a base to add others to (``signature_cases("vllm") + LARGE_CASES``; a
    case the signature cannot express is refused)."""
    shape = signature_named(signature)
    return tuple(
        p.name for p in plugin_problems(default_cases(shape), 0, shape) if applies(p, shape)
    )


TWIN_CASE = "small-vocab"
"""The first case of every default run (every signature expresses it): V = 4, gamma = 2,
random rows, where the twin of a correct verifier is far from the law the check expects."""
PLUGIN_LONG_VOCAB = 2053
BROKEN_CHECKS = frozenset({"runs", "timeout", "layout", "generate", "target_probs"})
"""Rows that fail when a call could not run (it raised, timed out, returned the wrong shape):
in a twin's report they are no detection of a wrong law."""


class TwinPassedError(RuntimeError):
    """The must-fail twin passed the same check: the check cannot tell a wrong law apart."""


class TwinError(RuntimeError):
    """The must-fail twin could not run (it raised, was refused or timed out), so the check has
    no evidence that it tells a wrong law apart: an error of the check, not a detection."""


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
    def twin_broken(self) -> CaseResult | None:
        """The twin's first failed row that says it could not run (it raised, was refused or
        timed out), or None: such a row is no detection of a wrong law."""
        if self.twin is None:
            return None
        return next(
            (r for r in self.twin.results if r.verdict == "FAIL" and r.check in BROKEN_CHECKS),
            None,
        )

    @property
    def statistical_rows(self) -> int:
        return sum(1 for r in self.report.results if not r.exact)


def plugin_problems(
    names: Collection[str],
    seed: int,
    signature: Signature,
    filter_order: FilterOrder | None = None,
) -> list[TableProblem]:
    """The audit cases called ``names``, in the battery's order (raising ValueError for an
    unknown one); the binding-filter cases under ``filter_order`` (default: the signature's
    engine's)."""
    battery = verifier_problems(
        seed,
        large_vocab=PLUGIN_LONG_VOCAB,
        filter_order=filter_order or signature_named(signature).default_filter_order,
    )
    unknown = set(names) - {p.name for p in battery}
    if unknown:
        raise ValueError(f"unknown audit case(s): {', '.join(sorted(unknown))}")
    return [p for p in battery if p.name in names]


def verifier_plan(
    verifier: Callable[..., Any],
    signature: Signature,
    cases: object,
    seed: int,
    filter_order: FilterOrder | None,
) -> list[TableProblem]:
    """The problems a call runs: ``cases`` (None: the default ones the signature expresses for
    this verifier), each of them known and expressible, else one ValueError naming them."""
    if cases is None:
        found, _ = expressible(
            plugin_problems(default_cases(signature), seed, signature, filter_order),
            verifier,
            signature,
        )
        return found
    names = checked_case_names(cases)
    found, refused = expressible(
        plugin_problems(names, seed, signature, filter_order), verifier, signature
    )
    if refused:
        raise ValueError(f"cases that cannot be audited here: {'; '.join(refused)}")
    return found


def _say(outcome: Outcome, label: str) -> None:
    print(outcome.level.promise(outcome.statistical_rows))
    print(outcome.report.table())
    if outcome.twin is not None:
        print(twin_line(outcome, label))


def twin_line(outcome: Outcome, label: str) -> str:
    """What the must-fail twin did, in one line."""
    if outcome.twin is None:
        return "must-fail twin: not run (the subject failed, or twin=False)"
    broken = outcome.twin_broken
    if broken is not None:
        return f"must-fail twin ({label}): could not run, no detection ({broken.result()})"
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
    broken = outcome.twin_broken
    if outcome.twin is not None and broken is not None:
        raise TwinError(
            f"the must-fail twin of {outcome.report.subject} ({label}) could not run, so this "
            f"check has no evidence that it tells a wrong law apart: {broken.detail}"
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
    verifier handed target rows shifted by one token id, on the cases the call ran); raise
    ``AssertionError`` with the row table when a row fails, :class:`TwinPassedError` when the
    twin passes, :class:`TwinError` when the twin could not run. Options: those of
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
    calls: bool = True,
    twin: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    filter_order: FilterOrder | None = None,
) -> Outcome:
    """The audit of ``verifier`` on ``cases``, then (when it passed) of its twin on the same
    cases (stopping at the first case it fails); nothing raised for a failed row. Every
    argument is checked first (one-line ``ValueError``).

    Every statistical row has false-fail rate <= alpha and power >= 1 - beta against TV >=
    delta (``level``: ``full`` 0.99 against 0.1, ``quick`` 0.9 against 0.2; alpha 1e-6 per
    row). ``cases`` defaults to :data:`CASES` (:data:`HF_CASES` for ``hf``), those the
    signature can express; ``calls`` (default on) adds the audit's repeated-call rows (calls
    on identical inputs are independent, seeded requests reproduce); ``timeout``: seconds one
    case may run before it fails as timed out; ``filter_order``: the engine's order of the
    request's filters (default: that of the signature's engine)."""
    if not callable(verifier):
        raise ValueError(f"the verifier must be callable, got {type(verifier).__name__}")
    shape = signature_named(signature)
    chosen = level if isinstance(level, Level) else level_named(level)
    seed = checked_seed(seed)
    order = checked_filter_order(filter_order)
    limits = CallLimits(checked_count("max_batch", max_batch), checked_timeout(timeout))
    calls, twin = checked_switch("calls", calls), checked_switch("twin", twin)
    problems = verifier_plan(verifier, shape, cases, seed, order)
    rates = ErrorRates(chosen.alpha, chosen.beta, chosen.delta)
    report = audit_verifier(
        verifier,
        shape,
        seed=seed,
        problems=problems,
        calls=calls,
        robustness=False,
        rates=rates,
        limits=limits,
        filter_order=order,
    )
    twin_report = None
    if twin and report.passed:
        ran = {r.case for r in report.results}
        twin_report = audit_verifier(
            shifted_target_twin(verifier, shape),
            shape,
            seed=seed + 1,
            problems=[p for p in problems if p.name in ran],
            calls=False,
            robustness=False,
            fail_fast=True,
            rates=rates,
            limits=limits,
            filter_order=order,
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
    ``name``, ``eos``, ``greedy``, ``max_draft`` (the engine's) and those of
    :func:`engine_outcome`."""
    for name, fn in (("generate", generate), ("target_probs", target_probs)):
        if not callable(fn):
            raise ValueError(f"{name} must be callable, got {type(fn).__name__}")
    if isinstance(prompt, str | bytes) or not isinstance(prompt, Sequence) or not prompt:
        raise ValueError(f"prompt must be a non-empty sequence of token ids, got {prompt!r}")
    ids = tuple(checked_count("prompt id", t, low=0) for t in prompt)
    engine = Engine(
        options.pop("name", "") or str(getattr(generate, "__name__", "engine")),
        generate,
        target_probs,
        ids,
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
    timeout: float = ENGINE_TIMEOUT,
) -> Outcome:
    """The audit of ``engine`` (its ``generate`` against its ``target_probs``), then (when it
    passed) of the same engine against the target law shifted by one token id; nothing raised.
    Every argument is checked first (one-line ``ValueError``). Rates as in
    :func:`verifier_outcome`; ``timeout``: seconds each audit (the engine's, then its twin's)
    may run before the call still running fails the timeout row."""
    chosen = level if isinstance(level, Level) else level_named(level)
    tokens = checked_count("num_new_tokens", num_new_tokens)
    seed = checked_seed(seed)
    seconds = checked_timeout(timeout)
    twin = checked_switch("twin", twin)
    rates = ErrorRates(chosen.alpha, chosen.beta, chosen.delta)
    report = audit_engine(engine, num_new_tokens=tokens, seed=seed, rates=rates, timeout=seconds)
    twin_report = None
    if twin and report.passed:
        twin_engine = replace(
            engine,
            name=f"{engine.name} (twin)",
            target_probs=shifted_target_probs(engine.target_probs),
        )
        twin_report = audit_engine(
            twin_engine, num_new_tokens=tokens, seed=seed + 1, rates=rates, timeout=seconds
        )
    return Outcome(chosen, report, twin_report)
