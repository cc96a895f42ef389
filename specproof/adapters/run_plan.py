"""How much an engine audit runs, as the command resolved it, handed to every adapter."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunPlan:
    """``runs`` per configuration (None: the n that powers every row) and the TV ``delta``
    that n is chosen against (None: the engine audit's default)."""

    runs: int | None = None
    delta: float | None = None

    def __post_init__(self) -> None:
        if self.runs is not None and self.runs < 1:
            raise ValueError(f"runs must be positive, got {self.runs}")
        if self.delta is not None and not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
