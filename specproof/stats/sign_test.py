"""An exact one-sided sign test over paired per-chunk speed ratios, with its power.

Each chunk of prompts is decoded by both decoders back to back, so the ratio of their speeds
on that chunk cancels the shared machine's slow phases. Under the null "on every chunk, either
decoder is as likely to be the faster" the number of chunks on which decoder A is slower is
Binomial(n, 1/2) (ties are dropped), whatever the distribution of the ratios: the test is
exact, with false-alarm rate at most alpha for every n. Its power is computed against the
stated alternative "A is slower on a chunk with probability ``slower_share``".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


def binomial_tail(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(max(k, 0), n + 1))


@dataclass(frozen=True)
class SignTest:
    """ "A is slower than B", one-sided: reject when at least ``critical`` of the ``n`` untied
    chunks have ratio A / B below 1."""

    n: int
    slower: int
    critical: int | None
    p_value: float
    alpha: float
    power: float
    slower_share: float
    rejected: bool
    median_ratio: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sign_test_slower(
    ratios: Sequence[float], alpha: float = 0.05, slower_share: float = 0.9
) -> SignTest:
    """Sign test of "A is slower than B" from per-chunk ratios speed(A) / speed(B)."""
    untied = [r for r in ratios if r != 1.0]
    n = len(untied)
    slower = sum(r < 1.0 for r in untied)
    p_value = binomial_tail(n, slower, 0.5)
    critical = next((k for k in range(n + 1) if binomial_tail(n, k, 0.5) <= alpha), None)
    power = 0.0 if critical is None else binomial_tail(n, critical, slower_share)
    ordered = sorted(ratios)
    middle = len(ordered) // 2
    median = (
        float("nan")
        if not ordered
        else ordered[middle]
        if len(ordered) % 2
        else 0.5 * (ordered[middle - 1] + ordered[middle])
    )
    return SignTest(
        n=n,
        slower=slower,
        critical=critical,
        p_value=p_value,
        alpha=alpha,
        power=power,
        slower_share=slower_share,
        rejected=p_value <= alpha,
        median_ratio=median,
    )
