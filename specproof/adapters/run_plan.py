"""How much an engine audit runs, as the command resolved it, handed to every adapter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunPlan:
    """``runs`` per configuration (None: the n that powers every row), the TV ``delta`` that
    n is chosen against and the binned row's cell budget ``binned_cells`` (0: no binned row);
    None: the engine audit's default."""

    runs: int | None = None
    delta: float | None = None
    binned_cells: int | None = None

    def audit_options(self) -> dict[str, Any]:
        """The keyword arguments of ``audit_engine`` this plan sets."""
        options = {"runs": self.runs, "delta": self.delta, "binned_cells": self.binned_cells}
        return {key: value for key, value in options.items() if value is not None}

    def __post_init__(self) -> None:
        if self.runs is not None and self.runs < 1:
            raise ValueError(f"runs must be positive, got {self.runs}")
        if self.delta is not None and not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        if self.binned_cells is not None and (self.binned_cells == 1 or self.binned_cells < 0):
            raise ValueError(f"binned_cells must be 0 or at least 2, got {self.binned_cells}")
