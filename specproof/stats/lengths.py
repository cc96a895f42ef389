"""The law of the accepted length: tokens a request emits in one round (accepted drafts plus the
correction or bonus token, the paper's tau), exactly from the reference and sampled from it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction

from specproof.reference import SpeculativeDecoder, round_law, sample_round


def accepted_length_law(dec: SpeculativeDecoder, prompt: Sequence[int]) -> dict[int, Fraction]:
    """Exact law of the number of tokens one request emits in the first round."""
    law: dict[int, Fraction] = {}
    for outputs, weight in round_law(dec, [prompt]).items():
        length = len(outputs[0])
        law[length] = law.get(length, Fraction(0)) + weight
    return law


def sample_accepted_lengths(
    dec: SpeculativeDecoder, prompt: Sequence[int], seeds: Iterable[int]
) -> Counter[int]:
    """First-round lengths drawn by the reference sampler, one seeded run per seed."""
    return Counter(len(sample_round(dec, [prompt], seed)[0]) for seed in seeds)


def lengths_from_rows(rows: Iterable[Sequence[int]], padding: int = -1) -> Counter[int]:
    """Emitted lengths of verifier output rows: entries before the first ``padding``."""
    lengths: Counter[int] = Counter()
    for row in rows:
        length = 0
        for token in row:
            if token == padding:
                break
            length += 1
        lengths[length] += 1
    return lengths
