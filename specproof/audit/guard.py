"""Every call into the audited subject goes through a :class:`Guard`: whatever the subject does
(raises, exits, hangs), the audit gets either its answer or a :class:`SubjectFailure` to report
as a FAIL row (``audit-engine`` calls the subject through :meth:`Guard.call`; ``audit`` runs
each batch of its harness, the subject's calls inside it, through :meth:`Guard.run`).

With a time limit, calls run on one daemon worker thread and the audit waits at most until the
deadline; a call still running then is abandoned (Python cannot stop a thread), so the command
ends the process itself once it has printed and written the report (:func:`abandoned_calls`).
The subject wrapped by :meth:`Guard.subject` refuses further calls once its guard abandoned
one, so an abandoned batch ends at the subject's next call instead of running on.

A subject that calls ``sys.exit`` does not end the audit: its ``SystemExit`` becomes a
:class:`SubjectExit` (an ordinary exception, so the call fails a row like any raise, with the
table kept) in :meth:`Guard.subject`, :meth:`Guard.run` and :meth:`Guard.call`.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

TIMEOUT_CHECK = "timeout"


class SubjectFailure(Exception):
    """The subject misbehaved; ``check`` names the row (generate, target_probs or timeout)."""

    def __init__(self, check: str, reason: str, runs_done: int | None = None) -> None:
        super().__init__(reason)
        self.check = check
        self.reason = reason
        self.runs_done = runs_done


class SubjectExit(Exception):
    """The subject called ``sys.exit`` (or raised ``SystemExit``) inside a call."""

    def __init__(self, code: object) -> None:
        super().__init__(f"the subject called sys.exit({code!r})")
        self.code = code


def _exits_as_failures(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with a ``SystemExit`` it raises turned into :class:`SubjectExit`."""
    try:
        return fn(*args, **kwargs)
    except SystemExit as exit_:
        raise SubjectExit(exit_.code) from exit_


_ABANDONED: list[threading.Thread] = []
WORKER_JOIN_SECONDS = 5.0
"""How long :meth:`Guard.close` waits for an idle worker to end (it ends at once)."""


def abandoned_calls() -> bool:
    """True while a call abandoned at its deadline is still running."""
    return any(thread.is_alive() for thread in _ABANDONED)


class CallRefused(Exception):
    """A call of the subject after its guard abandoned one (the batch it belongs to is over)."""


def settle(seconds: float) -> bool:
    """Wait up to ``seconds`` for abandoned calls to end; True when none is still running."""
    end = time.monotonic() + seconds
    for thread in list(_ABANDONED):
        thread.join(max(0.0, end - time.monotonic()))
        if not thread.is_alive():
            _ABANDONED.remove(thread)
    return not abandoned_calls()


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        try:
            job.result = job.fn(*job.args, **job.kwargs)
        except BaseException as error:  # the subject's own exit or error, reported by the guard
            job.error = error
        job.done.set()


def describe(error: BaseException) -> str:
    if isinstance(error, SystemExit | SubjectExit):
        return f"SystemExit: the subject called sys.exit({error.code!r})"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class Guard:
    """Calls into the subject, each held to the audit's deadline (none when ``timeout`` is
    None: calls then run on the caller's thread)."""

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._thread: threading.Thread | None = None
        self.abandoned = False

    def _worker(self) -> queue.SimpleQueue[_Job | None]:
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            self._thread = threading.Thread(
                target=_serve, args=(self._jobs,), name="specproof-subject", daemon=True
            )
            self._thread.start()
        return self._jobs

    def close(self) -> None:
        """End the worker thread (after the call it is running, if any); an idle worker is
        joined, so that no thread of the guard outlives the audit."""
        if self._jobs is not None:
            self._jobs.put(None)
            if self._thread is not None and not self.abandoned:
                self._thread.join(WORKER_JOIN_SECONDS)
        self._jobs = self._thread = None

    def start_clock(self) -> None:
        """The time limit counts from now (after the audit's own set-up of the case)."""
        if self.timeout is not None:
            self.deadline = time.monotonic() + self.timeout

    def subject(self, fn: Callable[..., T]) -> Callable[..., T]:
        """``fn``, refusing every call once this guard abandoned one (same signature, so that
        the audit's inspection of its parameters sees ``fn``'s)."""

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> T:
            if self.abandoned:
                raise CallRefused("a call of this subject was abandoned at the time limit")
            return _exits_as_failures(fn, *args, **kwargs)

        return guarded

    def run(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the worker thread, held to the deadline: whatever it
        raises is raised here unchanged (``SystemExit`` as :class:`SubjectExit`); running past
        the deadline raises a failure of the timeout row that says ``what`` was still running."""
        left = self._left(what)
        if left is None:
            return _exits_as_failures(fn, *args, **kwargs)
        job = _Job(_exits_as_failures, (fn, *args), kwargs)
        self._worker().put(job)
        if not job.done.wait(left):
            self._abandon()
            raise SubjectFailure(
                TIMEOUT_CHECK, f"{what} still running at the time limit of {self.timeout:g} s"
            )
        if job.error is not None:
            raise job.error
        return job.result

    def _left(self, what: str) -> float | None:
        """Seconds to the deadline (None without one); a failure when none is left."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SubjectFailure(
                TIMEOUT_CHECK, f"time limit of {self.timeout:g} s reached before {what}"
            )
        return left

    def _abandon(self) -> None:
        assert self._thread is not None
        _ABANDONED.append(self._thread)
        self.abandoned = True
        self.close()  # the worker ends if the call ever returns

    def call(self, check: str, what: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``; a raise (or ``sys.exit``) becomes a failure of row ``check`` that
        says ``what`` raised, and running past the deadline a failure of the timeout row."""
        if self.deadline is None:
            try:
                return fn(*args)
            except KeyboardInterrupt:
                raise
            except BaseException as error:
                raise SubjectFailure(check, f"{what} raised {describe(error)}") from error
        left = self._left(what)
        assert left is not None
        job = _Job(fn, args)
        self._worker().put(job)
        if not job.done.wait(left):
            self._abandon()
            raise SubjectFailure(
                TIMEOUT_CHECK, f"{what} still running at the time limit of {self.timeout:g} s"
            )
        if isinstance(job.error, KeyboardInterrupt):
            raise job.error
        if job.error is not None:
            raise SubjectFailure(check, f"{what} raised {describe(job.error)}") from job.error
        return job.result
