"""Rare-event hunts: cases whose correct output is unique, so that a bug firing once in a
million rounds shows as an impossible output (exact, alpha = 0).

- ``zero-target-draft``: every drafted token has target probability 0 (p = e_0, q = e_1), so
  any acceptance is impossible; the only correct output is the correction token 0.
- ``p-equals-q``: p == q one-hot at every position, so a rejection is impossible; the only
  correct output is every draft, then the bonus token.

The inputs are built once and the verifier is called on them again and again (fresh random
state each call). With no impossible output in N rounds, a per-round rate r of the event is
excluded at 95 %: P(no event) = (1 - r)^N <= 0.05 once r >= -ln(0.05)/N (about 3/N).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .audit_settings import AuditSettings
from .errors import VerifierError, out_of_memory
from .guard import Guard, SubjectFailure, settle
from .ids import integer_ids
from .problems import PLACEHOLDER
from .report import AuditReport, CaseResult, exact_row, limit_row
from .settings import HuntSettings
from .signatures import Verifier, VerifierSignature

DEFAULT_BATCH = 1 << 18
"""Rounds per call before the cap: calls carry min(this, ``max_batch``) requests."""
CONFIDENCE = 0.95
HUNT_GAMMA = 4
"""Drafts per hunted round: a rule switched on only from 3 drafts is inside the hunt."""
GRACE = 5.0
"""Seconds a call abandoned at the time limit may take to return before the hunt stops."""
DEFAULT_BUDGET = 45.0
"""Seconds per hunt case when the command runs the hunt by default."""


@dataclass(frozen=True)
class HuntCase:
    name: str
    target: torch.Tensor  # [gamma + 1, V] float32, the same for every round
    draft: torch.Tensor  # [gamma, V]
    tokens: torch.Tensor  # [gamma] drafted tokens
    expected: tuple[int, ...]  # the only correct output
    description: str


def hunt_cases(gamma: int = HUNT_GAMMA, vocab: int = 2) -> list[HuntCase]:
    e0, e1 = torch.eye(vocab)[0], torch.eye(vocab)[1]
    return [
        HuntCase(
            "zero-target-draft",
            e0.repeat(gamma + 1, 1),
            e1.repeat(gamma, 1),
            torch.ones(gamma, dtype=torch.int64),
            (0,),
            "every draft has p = 0: any acceptance is impossible",
        ),
        HuntCase(
            "p-equals-q",
            e1.repeat(gamma + 1, 1),
            e1.repeat(gamma, 1),
            torch.ones(gamma, dtype=torch.int64),
            (1,) * (gamma + 1),
            "p == q: any rejection is impossible",
        ),
    ]


def excluded_rate(rounds: int, confidence: float = CONFIDENCE) -> float:
    """The smallest per-round event rate that N event-free rounds exclude at ``confidence``."""
    return -math.log(1 - confidence) / rounds


def rounds_to_find(rate: float, confidence: float = CONFIDENCE) -> int:
    """Rounds after which an event of this per-round rate shows with probability >= confidence."""
    return math.ceil(math.log(1 - confidence) / math.log1p(-rate))


Call = Callable[[int, torch.Generator], torch.Tensor]


def _projected(done: int, budget: float | None, stop_at: float) -> int:
    """Rounds a budgeted hunt will have run at its end, at the pace so far (progress bars)."""
    assert budget is not None
    elapsed = budget - (stop_at - time.monotonic())
    return max(done + 1, int(done * budget / max(elapsed, 1e-9)))


def _caller(fn: Verifier, signature: VerifierSignature, case: HuntCase, batch: int) -> Call:
    """Inputs for ``batch`` rounds of the case, built once; returns [batch, gamma + 1] outputs."""
    return signature.hunt_call(fn, case.tokens, case.draft, case.target, batch)


def _hunt_of(settings: AuditSettings) -> HuntSettings:
    if settings.hunt is None:
        raise ValueError("these settings ask for no hunt (hunt=None): give HuntSettings")
    return settings.hunt


def hunt_case(
    fn: Verifier,
    case: HuntCase,
    settings: AuditSettings,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> CaseResult:
    """Run ``settings.hunt.rounds`` rounds of one hunt case, or (``settings.hunt.budget``) as
    many as fit in that many seconds, up to those rounds; exact verdict (alpha = 0), failed as
    timed out after ``settings.limits.timeout`` seconds. Each call carries at most
    ``settings.limits.max_batch`` requests: the hunt keeps its rounds by calling more often."""
    hunt, limits, signature = _hunt_of(settings), settings.limits, settings.signature
    batch = hunt.batch if hunt.batch is not None else signature.hunt_batch or DEFAULT_BATCH
    batch = max(1, min(batch, hunt.rounds, limits.max_batch))
    guard = Guard(limits.timeout)
    try:
        return _hunt(
            guard,
            _caller(guard.subject(fn), signature, case, batch),
            case,
            hunt.rounds,
            seed=settings.seed,
            batch=batch,
            progress=progress,
            budget=hunt.budget,
        )
    finally:
        guard.close()


def _hunt(
    guard: Guard,
    call: Call,
    case: HuntCase,
    rounds: int,
    *,
    seed: int,
    batch: int,
    progress: Callable[[int, int], None] | None,
    budget: float | None,
) -> CaseResult:
    """The hunt's loop, each call of ``call`` held to ``guard``'s deadline."""
    timeout = guard.timeout
    generator = torch.Generator().manual_seed(seed)
    gamma = case.draft.shape[0]
    expected = torch.full((gamma + 1,), PLACEHOLDER, dtype=torch.int64)
    expected[: len(case.expected)] = torch.tensor(case.expected)
    deadline = guard.deadline
    assert timeout is not None and deadline is not None
    what = f"a call of the verifier in {case.name}"
    stop_at = None if budget is None else time.monotonic() + budget
    done = 0
    while done < rounds:
        try:
            out = integer_ids(guard.run(what, call, batch, generator), "output")
        except SubjectFailure as failure:
            detail = f"{case.name}/hunt: timed out after {timeout:g} s ({failure}) at {done} rounds"
            return exact_row(case.name, "timeout", done, "FAIL", detail)
        except VerifierError as error:
            return exact_row(case.name, "hunt", done, "FAIL", str(error))
        except Exception as error:
            if out_of_memory(error):  # a limit of this run, never a pass nor a finding
                return limit_row(case.name, "hunt", done, batch, error)
            detail = f"{case.name}/hunt: {type(error).__name__}: {error}"
            return exact_row(case.name, "hunt", done, "FAIL", detail)
        if out.dim() != 2 or out.shape[0] != batch:
            # Count only rows that came back: fewer rows than requests is itself a failure.
            rows = out.shape[0] if out.dim() else 0
            summary = f"returned {rows} rows for {batch} requests (shape {tuple(out.shape)})"
            return exact_row(
                case.name, "hunt", done, "FAIL", summary, f"{case.name}/hunt: {summary}"
            )
        padded = torch.full((out.shape[0], gamma + 1), PLACEHOLDER, dtype=torch.int64)
        padded[:, : min(out.shape[1], gamma + 1)] = out[:, : gamma + 1]
        bad = torch.nonzero((padded != expected).any(1))
        take = min(batch, rounds - done)
        if len(bad) and int(bad[0, 0]) < take:
            index = done + int(bad[0, 0])
            seen = tuple(int(t) for t in padded[int(bad[0, 0])] if t != PLACEHOLDER)
            detail = (
                f"{case.name}/hunt: impossible output {seen} in round {index} (the only correct "
                f"output is {case.expected}: {case.description})"
            )
            return CaseResult(
                case.name,
                "hunt",
                index + 1,
                None,
                None,
                0.0,
                None,
                None,
                "FAIL",
                detail,
                round=index,
                summary=f"impossible output {seen} in round {index}",
            )
        done += take
        if stop_at is not None and time.monotonic() > stop_at:
            if progress is not None:
                progress(done, done)
            break
        if progress is not None:
            progress(done, rounds if stop_at is None else _projected(done, budget, stop_at))
        if time.monotonic() > deadline and done < rounds:
            detail = f"{case.name}/hunt: timed out after {timeout:g} s at {done} of {rounds} rounds"
            return exact_row(case.name, "timeout", done, "FAIL", detail)
    detail = (
        f"no impossible event in {done} rounds: rate < {excluded_rate(done):.3g} "
        f"(= -ln(0.05)/N) at 95 %"
    )
    return exact_row(case.name, "hunt", done, "pass", detail)


def hunt_verifier(
    fn: Verifier,
    settings: AuditSettings,
    *,
    bars: Callable[[str], Callable[[int, int], None]] | None = None,
) -> AuditReport:
    """Every hunt case for ``settings.hunt.rounds`` rounds, or for ``settings.hunt.budget``
    seconds each (at most those rounds), each call held to ``settings.limits``."""
    _hunt_of(settings)
    timeout = settings.limits.timeout
    start = time.perf_counter()
    report = AuditReport(getattr(fn, "__name__", "verifier"), f"{settings.signature} hunt")
    for index, case in enumerate(hunt_cases()):
        if not settle(min(GRACE, timeout)):  # a call abandoned at the time limit still runs
            names = ", ".join(c.name for c in hunt_cases()[index:])
            report.notes.append(f"hunt: a call of the verifier is still running; not run: {names}")
            break
        report.results.append(
            hunt_case(fn, case, settings, progress=bars(case.name) if bars else None)
        )
    report.seconds = time.perf_counter() - start
    return report
