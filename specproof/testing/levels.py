"""The two strengths of the pytest plugin's checks, and what each promises.

Stdlib only: the plugin reads these at load time, before torch is imported."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    """Every statistical row of a call has false-fail rate <= ``alpha`` and power >= 1 - ``beta``
    against TV >= ``delta`` in the law it tests (the audit's rows, fewer cases)."""

    name: str
    alpha: float
    beta: float
    delta: float

    @property
    def power(self) -> float:
        return 1 - self.beta

    def promise(self, rows: int) -> str:
        """One line: the call's false-fail rate (union bound over its ``rows`` statistical rows)
        and its power."""
        return (
            f"specproof level {self.name}: false-fail rate <= {rows} rows x alpha {self.alpha:g} "
            f"= {rows * self.alpha:.2g}; power >= {self.power:g} against TV >= {self.delta:g} "
            "in every row's law"
        )


LEVELS = {
    "full": Level("full", alpha=1e-6, beta=0.01, delta=0.1),
    "quick": Level("quick", alpha=1e-6, beta=0.1, delta=0.2),
}
"""``full``: power 0.99 against TV 0.1 (the issue's CI bar); ``quick``: power 0.9 against TV
0.2, about a fifth of the rounds."""
DEFAULT_LEVEL = "full"


def level_named(name: str) -> Level:
    if name not in LEVELS:
        raise ValueError(f"specproof level must be one of {', '.join(LEVELS)}, got {name!r}")
    return LEVELS[name]
