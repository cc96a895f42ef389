"""Errors of an audited call: a broken structural rule, a case past its time limit."""

from __future__ import annotations


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
