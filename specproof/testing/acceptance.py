"""``acceptance_gate``: an engine's acceptance-length gate as a two-sided test with a stated
false-fail rate, for a CI that counts accepted drafts.

Give it the accepted count and either the acceptance probability of every proposal counted
(``probabilities``: sum over tokens of min(p, q) for the target's and drafter's processed laws
at the proposal's prefix, teacher-forced) or only the number proposed and their mean
(``proposed`` and ``expected_rate``; for a verifier test on fixed rows, sum min(p, q) of those
rows). The verdict fails "too many" (a verifier accepting what it must not: a loss) and "too
few" (a slowdown). False-fail rate <= ``alpha`` for any number of proposals, chain drafts
whose later probabilities depend on earlier acceptances included
(:mod:`specproof.stats.acceptance` has the argument); its power against a shift of ``shift``
in every acceptance probability is computed and reported with the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from specproof.stats.acceptance import (
    DEFAULT_SHIFT,
    AcceptanceTest,
    acceptance_test,
    rate_test,
)

DEFAULT_ALPHA = 1e-6
"""The false-fail rate of a gate unless told: the audit's per-row alpha."""


def acceptance_gate(
    accepted: int,
    *,
    probabilities: Sequence[float] | np.ndarray | None = None,
    proposed: int | None = None,
    expected_rate: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    shift: float = DEFAULT_SHIFT,
) -> AcceptanceTest:
    """The verdict on ``accepted`` drafts: ``.rejected``, ``.direction``, ``.power`` and
    ``.describe()``. Exactly one of ``probabilities`` or (``proposed``, ``expected_rate``)."""
    if isinstance(accepted, bool) or int(accepted) != accepted:
        raise ValueError(f"accepted must be a whole number, got {accepted!r}")
    if probabilities is not None:
        if proposed is not None or expected_rate is not None:
            raise ValueError("give probabilities, or proposed and expected_rate, not both")
        return acceptance_test(int(accepted), probabilities, alpha, shift)
    if proposed is None or expected_rate is None:
        raise ValueError("give probabilities, or both proposed and expected_rate")
    return rate_test(int(accepted), proposed, expected_rate, alpha, shift)


def assert_acceptance(
    accepted: int,
    *,
    probabilities: Sequence[float] | np.ndarray | None = None,
    proposed: int | None = None,
    expected_rate: float | None = None,
    alpha: float = DEFAULT_ALPHA,
    shift: float = DEFAULT_SHIFT,
) -> AcceptanceTest:
    """:func:`acceptance_gate`, printing its line and raising ``AssertionError`` with it when
    the count is rejected."""
    test = acceptance_gate(
        accepted,
        probabilities=probabilities,
        proposed=proposed,
        expected_rate=expected_rate,
        alpha=alpha,
        shift=shift,
    )
    line = f"specproof acceptance gate: {test.describe()}"
    print(line)
    if test.rejected:
        raise AssertionError(line)
    return test
