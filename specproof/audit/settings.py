"""The values an audit holds its rows to, made once by a command and passed down to the rows.

:class:`ErrorRates`: what every statistical row promises (false-fail rate, power, the TV it must
detect, the TV a correct float verifier may differ by). :class:`CallLimits`: how much one call
of the subject may carry and how long it may run. :class:`HuntSettings`: how long the rare-event
hunt runs. :class:`CallSettings`: what a signature's calls read of a verifier audit's settings
(:class:`specproof.audit.audit_settings.AuditSettings`, which holds all of these). Each value
refuses an out-of-range field when made, so a row never meets one. Stdlib only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

DEFAULT_ALPHA = 1e-6
DEFAULT_BETA = 1e-4
DEFAULT_DELTA = 0.05
DEFAULT_TOLERANCE = 1e-4
"""TV a correct float32 verifier may differ by (rounding in its sums and draws)."""
DEFAULT_MAX_BATCH = 1024
"""Requests per verifier call (``--max-batch``): the order of what an engine verifies in one
step. Larger calls can exhaust a verifier that is correct at engine sizes (vllm-ascend's
pure-PyTorch fallback builds tokens x requests masks); the audit calls more often instead."""
DEFAULT_TIMEOUT = 600.0
"""Seconds one case may take before it fails as timed out."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class ErrorRates:
    """Every statistical row has false-fail rate <= ``alpha`` and power >= 1 - ``beta`` against
    TV >= ``delta`` in the law it tests; a TV up to ``tolerance`` (< delta) counts as a pass."""

    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    delta: float = DEFAULT_DELTA
    tolerance: float = DEFAULT_TOLERANCE

    def __post_init__(self) -> None:
        for name in ("alpha", "beta", "delta"):
            value = getattr(self, name)
            if not (_is_number(value) and 0 < value < 1):
                raise ValueError(f"{name} must be in (0, 1), got {value!r}")
        if not (_is_number(self.tolerance) and 0 <= self.tolerance < 1):
            raise ValueError(f"tolerance must be in [0, 1), got {self.tolerance!r}")
        if self.delta <= self.tolerance:
            raise ValueError(
                f"delta must exceed tolerance, got delta {self.delta!r} <= tolerance "
                f"{self.tolerance!r}"
            )


@dataclass(frozen=True)
class CallLimits:
    """One call of the subject carries at most ``max_batch`` requests (more rounds take more
    calls); one case may take ``timeout`` seconds before it fails as timed out."""

    max_batch: int = DEFAULT_MAX_BATCH
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if not (isinstance(self.max_batch, int) and not isinstance(self.max_batch, bool)):
            raise ValueError(f"max_batch must be a whole number, got {self.max_batch!r}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {self.max_batch!r}")
        if not (_is_number(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


HUNT_ROUNDS = 2**62
"""Rounds per hunt case when only its time budget bounds it."""


@dataclass(frozen=True)
class HuntSettings:
    """Each rare-event case runs ``rounds`` rounds, or as many as fit in ``budget`` seconds
    (None: no budget; one of the two must bound it), in calls of ``batch`` rounds (None: the
    signature's or the hunt's default); :class:`CallLimits` caps every call as elsewhere."""

    rounds: int = HUNT_ROUNDS
    budget: float | None = None
    batch: int | None = None

    def __post_init__(self) -> None:
        if not (_whole(self.rounds) and self.rounds >= 1):
            raise ValueError(f"hunt rounds must be a whole number >= 1, got {self.rounds!r}")
        if self.budget is not None and not (
            _is_number(self.budget) and math.isfinite(self.budget) and self.budget > 0
        ):
            raise ValueError(
                f"hunt budget must be a positive number of seconds, got {self.budget!r}"
            )
        if self.batch is not None and not (_whole(self.batch) and self.batch >= 1):
            raise ValueError(f"hunt batch must be a whole number >= 1, got {self.batch!r}")
        if self.budget is None and self.rounds == HUNT_ROUNDS:
            raise ValueError("hunt needs rounds or a budget in seconds (it would never end)")


class CallSettings(Protocol):
    """What a signature's calls of the verifier read of the audit's settings: the limits of one
    call, and the temperature that marks greedy rows in vLLM's metadata."""

    @property
    def limits(self) -> CallLimits: ...

    @property
    def marker(self) -> float: ...


Value = TypeVar("Value", ErrorRates, CallLimits)


def settled(value: Value | None, default: Value, **loose: float | None) -> Value:
    """``value``, or ``default`` with the ``loose`` keywords given (not None) put in: how a
    public entry point that still takes ``alpha=``, ``max_batch=``... builds the value once.
    Giving both the value and a loose keyword is refused (which would win is not obvious)."""
    given: dict[str, Any] = {name: item for name, item in loose.items() if item is not None}
    if value is None:
        return dataclasses.replace(default, **given)
    if given:
        names = ", ".join(f"{name}=" for name in given)
        raise TypeError(f"give {type(value).__name__} or {names}, not both")
    return value


DEFAULT_RATES = ErrorRates()
"""The verifier audit's rates (the engine audit's delta is its own)."""
DEFAULT_LIMITS = CallLimits()
