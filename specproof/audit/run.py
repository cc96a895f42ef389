"""Audits: a chain verifier (or a drafter) sampled on the battery, a scheduler exactly.

Coverage of a verifier round, by construction: the "round" row tests the joint law of
(draft length, row kind, every emitted token), which determines the accepted length, each
accepted draft, the correction token after a rejection at any position and the bonus token after
full acceptance. Any discrepancy in the law of any emitted token, or of their number, is at most
the TV of that joint law, which the row detects with power >= 1 - beta once it reaches delta.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TextIO

import torch

from specproof.reference import (
    BlockRule,
    Case,
    ChainRule,
    SpecInferRule,
    VerificationRule,
    distance_from_target,
)
from specproof.stats import HashPartition, goodness_of_fit, required_samples

from .audit_settings import AuditSettings
from .cases import applies, calls_problem, scheduler_cases, verifier_problems
from .drafting import DraftFn
from .errors import CaseTimeout, VerifierError, out_of_memory
from .filters import FilterOrder, FilterProblem, filter_round, reaches
from .guard import Guard, SubjectFailure, settle
from .laws import Law, exact_round_law, length_law, lengths_of, position_law, tokens_law
from .nonfinite import nonfinite_rows
from .problems import TableProblem
from .report import AuditReport, CaseResult, exact_row, limit_row
from .requests import GREEDY_TEMPERATURE
from .rounds import (
    RoundFn,
    Sampled,
    first_round_of,
    observed_classes,
    round_counts,
    sample_rounds,
)
from .settings import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    DEFAULT_LIMITS,
    DEFAULT_MAX_BATCH,
    DEFAULT_TIMEOUT,
    DEFAULT_TOLERANCE,
    CallLimits,
    ErrorRates,
)
from .signatures import Verifier, VerifierSignature, row_slices

__all__ = [  # the defaults stay importable from here, where older call sites read them
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_DELTA",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOLERANCE",
    "audit_problem",
    "audit_scheduler",
    "audit_verifier",
    "capped_drafter",
    "progress_bar",
    "rounds_needed",
    "run_audit",
]

GRACE = 5.0
"""Seconds a call abandoned at its case's time limit may take to return before the audit stops
(a call still running beside the next case's calls would share the subject's state)."""

Lines = Callable[[str], None]


def _name(fn: Callable[..., object]) -> str:
    return str(getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def progress_bar(stream: TextIO | None = None) -> Callable[[str], Callable[[int, int], None]]:
    """A factory of one-line progress bars on stderr, one per case."""
    out = stream or sys.stderr

    def for_case(label: str) -> Callable[[int, int], None]:
        def update(done: int, total: int) -> None:
            filled = int(30 * done / max(total, 1))
            line = f"\r  {label:<16} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} rounds"
            print(line, end="\n" if done >= total else "", file=out, flush=True)

        return update

    return for_case


def cells_needed(law: Mapping[Any, object], rates: ErrorRates) -> int:
    """Cells of a row's test: the law's, and one more for the tolerance's slack."""
    return len(law) + (1 if rates.tolerance > 0 else 0)


def rounds_needed(laws: Sequence[Mapping[Any, object]], rates: ErrorRates) -> int:
    """The n at which every row of a case reaches power 1 - beta against TV >= delta."""
    return max(
        required_samples(
            rates.delta,
            rates.alpha,
            rates.beta,
            cells_needed(law, rates),
            rates.tolerance,
        )
        for law in laws
    )


def _impossible(
    problem: TableProblem, sampled: Sampled, counts: dict, law: Law
) -> CaseResult | None:
    outside = [key for key in counts if key not in law]
    if not outside:
        return None
    index, first = first_round_of(problem, sampled, set(outside))
    length, greedy, *tokens = first
    what = f"draft length {length}, {'greedy' if greedy else 'random'} row, emitted {tuple(tokens)}"
    detail = (
        f"{problem.name}/support: impossible outcome in round {index} ({what}): exact "
        f"probability 0; {sum(counts[k] for k in outside)} such rounds of {len(sampled.lengths)}"
    )
    return CaseResult(
        problem.name,
        "support",
        len(sampled.lengths),
        None,
        None,
        0.0,
        None,
        None,
        "FAIL",
        detail,
        round=index,
        summary=f"impossible outcome in round {index}",
    )


def audit_problem(
    problem: TableProblem,
    round_fn: RoundFn,
    *,
    rates: ErrorRates,
    seed: int,
    limits: CallLimits = DEFAULT_LIMITS,
    round_law: Law | None = None,
    progress: Callable[[int, int], None] | None = None,
    lossless_only: bool = False,
    rounds: int | None = None,
    guard: Guard | None = None,
) -> list[CaseResult]:
    """The rows of one case: layout (exact), support (exact), round, tokens and length.

    ``lossless_only`` keeps only the target-law row "tokens" (for drafters, whose reported q
    legitimately changes the round law). ``rounds`` overrides the n the rows need (more rounds
    keep every row's alpha; the stated power needs at least the default n). ``limits.max_batch``
    (the requests per call ``round_fn`` makes) names the limit when the verifier runs out of
    memory. Each batch of rounds runs through ``guard`` (one held to ``limits.timeout`` when
    None):
    a call still running at the time limit fails the case as timed out."""
    exact_law = exact_round_law(problem) if round_law is None else round_law
    lengths = length_law(exact_law)
    completed = tokens_law(problem)
    bins = HashPartition(8, salt=seed) if len(completed) > 120 else None
    joint = (
        list(position_law(exact_law, problem.gamma + 1).values())
        if problem.positions
        else [exact_law]
    )
    checked: list[Mapping[Any, object]] = (
        [bins.law(completed) if bins else completed]
        if lossless_only
        else [*joint, bins.law(completed) if bins else completed, lengths]
    )
    n = rounds_needed(checked, rates) if rounds is None else rounds
    timeout = limits.timeout
    guard = guard or Guard(timeout)
    guard.start_clock()
    what = f"a call of the verifier in {problem.name}"

    def guarded(*args: Any) -> Any:
        return guard.run(what, round_fn, *args)

    stat = (rates.alpha, rates.beta, rates.delta)
    try:
        sampled = sample_rounds(
            problem, guarded, n, seed, progress=progress, deadline=guard.deadline
        )
    except VerifierError as error:
        where = f" in round {error.round}" if error.round is not None else ""
        detail = f"{problem.name}/layout: {error.message}{where}"
        return [
            CaseResult(
                problem.name,
                "layout",
                n,
                None,
                None,
                0.0,
                None,
                None,
                "FAIL",
                detail,
                round=error.round,
                summary=f"{error.message}{where}",
            )
        ]
    except CaseTimeout as error:
        detail = f"{problem.name}: timed out after {timeout:g} s ({error})"
        return [exact_row(problem.name, "timeout", n, "FAIL", detail)]
    except Exception as error:  # a crash is a failed case, reported with its message
        if out_of_memory(error):  # a limit of this run, never a pass nor a finding
            return [limit_row(problem.name, "runs", n, min(n, limits.max_batch), error)]
        detail = f"{problem.name}: {type(error).__name__}: {error}"
        return [exact_row(problem.name, "runs", n, "FAIL", detail)]
    finally:
        guard.close()
    rows = [exact_row(problem.name, "layout", n, "pass", "every row well formed")]
    counts = round_counts(problem, sampled)
    if not lossless_only:
        impossible = _impossible(problem, sampled, counts, exact_law)
        rows.append(
            impossible or exact_row(problem.name, "support", n, "pass", "no impossible outcome")
        )
    tokens_samples = observed_classes(problem, sampled.outputs)
    checks: list[
        tuple[
            str, Iterable[Hashable] | Mapping[Any, int], Mapping[Any, float], HashPartition | None
        ]
    ] = [("tokens", tokens_samples, completed, bins)]
    if not lossless_only:
        if problem.positions:
            observed = position_law(counts, problem.gamma + 1)
            rounds_checks: list[Any] = [
                (f"position {j}", observed.get(j, {}), law_j, None)
                for j, law_j in enumerate(joint, start=1)
            ]
        else:
            rounds_checks = [("round", counts, exact_law, None)]
        checks = [*rounds_checks, *checks, ("length", lengths_of(counts), lengths, None)]
    for check, samples, law, part in checks:
        fit = goodness_of_fit(
            samples,
            law,
            alpha=rates.alpha,
            beta=rates.beta,
            delta=rates.delta,
            tolerance=rates.tolerance,
            partition=part,
            name=f"{problem.name}/{check}",
        )
        rows.append(
            CaseResult(
                problem.name,
                check,
                fit.n,
                fit.tv_estimate,
                fit.bound,
                *stat,
                fit.verdict,
                fit.describe(),
                power=fit.power,
            )
        )
    return rows


def subject_rows(
    case: str, rows: Callable[[Guard], list[CaseResult]], timeout: float | None = None
) -> list[CaseResult]:
    """``rows(guard)`` (calling the subject as ``guard.subject(fn)``), or a FAIL row saying how
    the subject broke them (it raised, returned None or the wrong type, or was still running at
    ``timeout`` seconds): the rows already run are kept, and the audit goes on to its report."""
    guard = Guard(timeout)
    try:
        return guard.run(f"a call of the subject in {case}", rows, guard)
    except SubjectFailure as failure:
        detail = f"{case}: timed out after {timeout:g} s ({failure})"
        return [exact_row(case, "timeout", None, "FAIL", detail)]
    except VerifierError as error:
        return [exact_row(case, "layout", None, "FAIL", f"{case}/layout: {error.message}")]
    except Exception as error:
        detail = f"{case}: stopped by {type(error).__name__}: {error}"
        return [exact_row(case, "runs", None, "FAIL", detail)]
    finally:
        guard.close()


def capped_drafter(drafter: DraftFn, limits: CallLimits) -> DraftFn:
    """``drafter`` called on at most ``limits.max_batch`` logits rows at a time (each row is a
    request of its own), the answers put back together; a call within the cap is passed
    through."""

    @functools.wraps(drafter)
    def call(logits: torch.Tensor, temperature: float, **kwargs: Any) -> Any:
        if logits.shape[0] <= limits.max_batch:
            return drafter(logits, temperature, **kwargs)
        parts = [
            drafter(logits[rows], temperature, **kwargs)
            for rows in row_slices(logits.shape[0], limits)
        ]
        malformed = [p for p in parts if not (isinstance(p, tuple | list) and len(p) == 2)]
        if malformed:
            return malformed[0]  # refused where the answer is checked
        tokens = torch.cat([torch.as_tensor(p[0]).reshape(-1) for p in parts])
        probs = torch.cat([torch.as_tensor(p[1]).reshape(-1, logits.shape[-1]) for p in parts])
        return tokens, probs

    return call


def stopped(timeout: float) -> bool:
    """Whether a call abandoned at a time limit is still running ``GRACE`` seconds on (at most
    ``timeout``): the audit then stops, since further calls would run beside it."""
    return not settle(min(GRACE, timeout))


def audit_verifier(
    fn: Verifier,
    signature: VerifierSignature | str,
    *,
    rates: ErrorRates | None = None,
    limits: CallLimits | None = None,
    alpha: float | None = None,
    beta: float | None = None,
    delta: float | None = None,
    tolerance: float | None = None,
    seed: int = 0,
    problems: Sequence[TableProblem] | None = None,
    subject: str = "",
    progress: Lines | None = None,
    bars: Callable[[str], Callable[[int, int], None]] | None = None,
    timeout: float | None = None,
    drafter: DraftFn | None = None,
    fail_fast: bool = False,
    marker: float = GREEDY_TEMPERATURE,
    calls: bool = True,
    robustness: bool = True,
    max_batch: int | None = None,
    filter_order: FilterOrder | None = None,
) -> AuditReport:
    """Sample ``fn`` on every problem its signature can express; every statistical row has
    false-fail rate <= alpha and power >= 1 - beta against TV >= delta in the law it tests.
    ``rates`` (:class:`ErrorRates`) and ``limits`` (:class:`CallLimits`: ``max_batch``,
    ``timeout``) go to every row as given; without them, they are made here from the keywords
    ``alpha``, ``beta``, ``delta``, ``tolerance``, ``max_batch`` and ``timeout`` (each left
    out takes its default, :mod:`specproof.audit.settings`); giving both is refused.
    ``fail_fast`` stops after the first case with a failed row; ``marker`` is the temperature
    marking greedy rows in vLLM's metadata; ``calls`` adds the repeated-call rows
    (:mod:`specproof.audit.calls`); ``robustness`` the non-finite rows, kept apart in
    ``report.robustness`` (:mod:`specproof.audit.nonfinite`; not for drafter audits);
    ``max_batch``: the most requests one call of the verifier or the drafter carries (more
    calls, same rounds);
    ``filter_order`` is the order in which the engine combines top-k and top-p (default: that
    of the signature's engine, its ``default_filter_order``), used when ``problems`` is not
    given.

    A front: the keywords become one :class:`~specproof.audit.audit_settings.AuditSettings`
    (checked when made), and :func:`run_audit` runs the audit on it."""
    settings = AuditSettings.of(
        signature,
        rates=rates,
        limits=limits,
        alpha=alpha,
        beta=beta,
        delta=delta,
        tolerance=tolerance,
        max_batch=max_batch,
        timeout=timeout,
        seed=seed,
        marker=marker,
        filter_order=filter_order,
        fail_fast=fail_fast,
        calls=calls,
        robustness=robustness,
    )
    return run_audit(
        fn,
        settings,
        problems=problems,
        subject=subject,
        progress=progress,
        bars=bars,
        drafter=drafter,
    )


def run_audit(
    fn: Verifier,
    settings: AuditSettings,
    *,
    problems: Sequence[TableProblem] | None = None,
    subject: str = "",
    progress: Lines | None = None,
    bars: Callable[[str], Callable[[int, int], None]] | None = None,
    drafter: DraftFn | None = None,
) -> AuditReport:
    """The audit of ``fn`` (or of ``drafter``, verified by ``fn``) as :func:`audit_verifier`
    describes it, every row reading ``settings`` (the battery of ``settings.seed`` in
    ``settings.order`` when ``problems`` is not given)."""
    start = time.perf_counter()
    signature, rates, seed = settings.signature, settings.rates, settings.seed
    limits = settings.limits
    timeout = limits.timeout
    kind = f"{signature} verifier" if drafter is None else f"drafter (verified by {signature})"
    if drafter is not None:
        drafter = capped_drafter(drafter, limits)
    report = AuditReport(subject or _name(drafter or fn), kind)
    skipped: list[str] = []
    not_run: list[str] = []
    if problems is None:
        problems = verifier_problems(seed, filter_order=settings.order)
    hung = ""  # the case whose abandoned call still runs: the audit stops there
    for problem in problems:
        if not applies(problem, signature) or (drafter is not None and problem.ngram):
            continue
        if isinstance(problem, FilterProblem) and not reaches(fn, signature):
            skipped.append(problem.name)
            continue
        if hung:
            not_run.append(problem.name)
            continue
        if progress:
            progress(f"{problem.name}: {problem.description}")
        guard = Guard(timeout)
        draft_fn = None if drafter is None else guard.subject(drafter)
        report.results += audit_problem(
            problem,
            filter_round(guard.subject(fn), settings, draft_fn),
            rates=rates,
            seed=seed,
            limits=limits,
            progress=bars(problem.name) if bars else None,
            lossless_only=drafter is not None,
            guard=guard,
        )
        if guard.abandoned and stopped(timeout):
            hung = problem.name
        if settings.fail_fast and report.failed:
            break
    report.skipped += skipped
    if skipped:
        report.notes.append(
            f"not audited: {', '.join(skipped)} (an hf verifier needs the keywords top_k, "
            "top_p and min_p to receive the request's filters)"
        )
    sections: list[tuple[str, str, Callable[[Guard], list[CaseResult]]]] = []
    if drafter is not None and settings.calls:
        from .drafters import drafter_calls, fidelity_rates, fidelity_rows

        sections.append(
            (
                "fidelity",
                "the law drawn from against the q reported, LLM-scale rows",
                lambda g: fidelity_rows(g.subject(drafter), rates=fidelity_rates(rates), seed=seed),
            )
        )
        sections.append(
            (
                "calls",
                "the drafter called again on identical inputs",
                lambda g: drafter_calls(g.subject(drafter), rates=rates, seed=seed),
            )
        )
    if settings.calls and drafter is None:
        from .calls import audit_calls

        def calls_rows(g: Guard) -> list[CaseResult]:
            return audit_calls(g.subject(fn), calls_problem(signature, seed), settings)

        sections.append(("calls", "identical inputs, called again", calls_rows))
    if settings.robustness and drafter is None:
        sections.append(
            (
                "nonfinite",
                "NaN and inf rows (robustness, not a losslessness verdict)",
                lambda g: nonfinite_rows(g.subject(fn), settings),
            )
        )
    for name, line, rows in sections:
        if settings.fail_fast and report.failed:
            break
        if hung:
            not_run.append(name)
            continue
        if progress:
            progress(f"{name}: {line}")
        found = subject_rows(name, rows, timeout)
        (report.robustness if name == "nonfinite" else report.results).extend(found)
        if stopped(timeout):
            hung = name
    report.skipped += not_run
    if hung:
        report.notes.append(
            f"stopped at {hung}: a call of the subject was still running {min(GRACE, timeout):g} s "
            f"after the time limit of {timeout:g} s, and calls beside it could share its state; "
            f"not run: {', '.join(not_run) or 'nothing else'}"
        )
    report.seconds = time.perf_counter() - start
    return report


# Schedulers -------------------------------------------------------------------------------


def default_rules() -> list[VerificationRule]:
    return [ChainRule(), SpecInferRule(2), BlockRule()]


def audit_scheduler(
    fn: Callable[..., list[int]],
    *,
    cases: Sequence[Case] | None = None,
    rules: Sequence[VerificationRule] | None = None,
    subject: str = "",
    progress: Lines | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> AuditReport:
    """Exact law of the reference decoder with ``fn`` as scheduler, for every case x rule; a
    case passes only if the output law equals the target law exactly (TV = 0), and fails as
    timed out when it is still running at ``timeout`` seconds."""
    start = time.perf_counter()
    report = AuditReport(subject or _name(fn), "scheduler")
    for case in cases if cases is not None else scheduler_cases():
        for rule in rules if rules is not None else default_rules():
            if progress:
                progress(f"{case.name} x {rule.name}: exact law")
            guard = Guard(timeout)
            what = f"a call of the scheduler in {case.name}/{rule.name}"
            decoder = case.decoder(fn, rule)  # a scheduler may be an object, not a function
            try:
                tv = guard.run(what, distance_from_target, decoder, case.prompts, case.num_tokens)
            except SubjectFailure as failure:
                detail = f"{case.name}/{rule.name}: timed out after {timeout:g} s ({failure})"
                report.results.append(exact_row(case.name, "timeout", None, "FAIL", detail))
                if stopped(timeout):
                    report.notes.append(f"stopped at {case.name}/{rule.name}: {failure}")
                    report.seconds = time.perf_counter() - start
                    return report
                continue
            except Exception as error:
                detail = f"{case.name}/{rule.name}: {type(error).__name__}: {error}"
                report.results.append(exact_row(case.name, rule.name, None, "FAIL", detail))
                continue
            finally:
                guard.close()
            detail = f"{case.name}/{rule.name}: exact TV from the target law = {tv} (lossy)"
            report.results.append(
                CaseResult(
                    case.name,
                    rule.name,
                    None,
                    float(tv),
                    None,
                    0.0,
                    None,
                    None,
                    "pass" if tv == 0 else "FAIL",
                    detail,
                    exact_tv=str(tv),
                )
            )
    report.seconds = time.perf_counter() - start
    return report
