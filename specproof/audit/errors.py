"""Errors of an audited call: a broken structural rule, a case past its time limit, a call that
ran out of memory."""

from __future__ import annotations

import torch


class VerifierError(AssertionError):
    """The verifier broke a structural rule of its signature (not a statistical finding).

    ``row`` is the offending row of the batch when known; the sampler turns it into a round."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.round: int | None = None


class CaseTimeout(TimeoutError):
    """A case ran past its time limit."""


def out_of_memory(error: BaseException) -> bool:
    """The call ran out of memory: Python's MemoryError, torch's OutOfMemoryError (CUDA and
    other devices) or the CPU allocator's RuntimeError."""
    if isinstance(error, MemoryError):
        return True
    oom = getattr(torch, "OutOfMemoryError", None)
    if oom is not None and isinstance(error, oom):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text.lower()
    )
