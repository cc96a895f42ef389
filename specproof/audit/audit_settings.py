"""What a verifier audit's command resolved, as one frozen value passed from the command to
every row: :class:`AuditSettings`.

A new option is a field here (checked in ``__post_init__``), a flag in the command, and a read
where a row uses it; the functions in between pass the value on unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specproof.reference.filters import FILTER_ORDERS, FilterOrder

from .requests import GREEDY_TEMPERATURE
from .settings import (
    DEFAULT_LIMITS,
    DEFAULT_RATES,
    CallLimits,
    ErrorRates,
    HuntSettings,
    settled,
)
from .signatures import VerifierSignature, signature_named


@dataclass(frozen=True)
class AuditSettings:
    """One verifier audit's settings: the ``signature`` (the object, never its name), the
    ``rates`` every statistical row holds to, the ``limits`` of every call, the ``seed`` of the
    battery and the rounds, the ``marker`` (temperature that marks greedy rows in vLLM's
    metadata), the ``filter_order`` of the binding filter cases (None: the signature engine's,
    filled in when made), ``fail_fast`` (stop after the first case with a failed row),
    ``calls`` (the repeated-call rows), ``robustness`` (the non-finite rows) and ``hunt`` (the
    rare-event hunt the command runs after the battery; None: no hunt).

    :meth:`of` makes one from a signature's name and the public keywords (``alpha=``,
    ``max_batch=``...)."""

    signature: VerifierSignature
    rates: ErrorRates = DEFAULT_RATES
    limits: CallLimits = DEFAULT_LIMITS
    seed: int = 0
    marker: float = GREEDY_TEMPERATURE
    filter_order: FilterOrder | None = None
    fail_fast: bool = False
    calls: bool = True
    robustness: bool = True
    hunt: HuntSettings | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.signature, VerifierSignature):
            raise ValueError(
                f"signature must be a VerifierSignature (AuditSettings.of takes its name), got "
                f"{self.signature!r}"
            )
        for name, kind in (("rates", ErrorRates), ("limits", CallLimits)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name} must be {kind.__name__}, got {getattr(self, name)!r}")
        if not (isinstance(self.seed, int) and not isinstance(self.seed, bool)):
            raise ValueError(f"seed must be a whole number, got {self.seed!r}")
        marker = self.marker
        if not (isinstance(marker, int | float) and not isinstance(marker, bool)) or not (
            math.isfinite(marker)
        ):
            raise ValueError(f"marker (the greedy marker) must be finite, got {marker!r}")
        if self.filter_order is None:
            object.__setattr__(self, "filter_order", self.signature.default_filter_order)
        elif self.filter_order not in FILTER_ORDERS:
            raise ValueError(
                f"filter_order must be one of {', '.join(FILTER_ORDERS)}, got {self.filter_order!r}"
            )
        for name in ("fail_fast", "calls", "robustness"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.hunt is not None and not isinstance(self.hunt, HuntSettings):
            raise ValueError(f"hunt must be HuntSettings or None, got {self.hunt!r}")

    @property
    def order(self) -> FilterOrder:
        """The filter order of the binding cases (the signature engine's unless told)."""
        assert self.filter_order is not None  # filled in when made
        return self.filter_order

    @classmethod
    def of(
        cls,
        signature: VerifierSignature | str,
        *,
        rates: ErrorRates | None = None,
        limits: CallLimits | None = None,
        alpha: float | None = None,
        beta: float | None = None,
        delta: float | None = None,
        tolerance: float | None = None,
        max_batch: int | None = None,
        timeout: float | None = None,
        seed: int = 0,
        marker: float = GREEDY_TEMPERATURE,
        filter_order: FilterOrder | None = None,
        fail_fast: bool = False,
        calls: bool = True,
        robustness: bool = True,
        hunt: HuntSettings | None = None,
    ) -> AuditSettings:
        """The settings of a ``signature`` (an object or its name, resolved here: the one place
        a name becomes the object), with ``rates`` and ``limits`` given whole or made from the
        loose keywords (each left out takes its default; giving both is refused), and the other
        fields as given."""
        return cls(
            signature_named(signature),
            settled(rates, DEFAULT_RATES, alpha=alpha, beta=beta, delta=delta, tolerance=tolerance),
            settled(limits, DEFAULT_LIMITS, max_batch=max_batch, timeout=timeout),
            seed=seed,
            marker=marker,
            filter_order=filter_order,
            fail_fast=fail_fast,
            calls=calls,
            robustness=robustness,
            hunt=hunt,
        )
