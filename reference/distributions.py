"""Exact probability vectors over a vocabulary ``0..V-1``, held as ``Fraction``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from numbers import Rational

Token = int
Tokens = tuple[int, ...]
Dist = tuple[Fraction, ...]
"""A distribution: ``dist[v]`` is the exact probability of token ``v``."""


def to_fraction(value: object, *, where: str) -> Fraction:
    """Convert ``value`` to an exact ``Fraction``; ``where`` names it in errors."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: expected a number, got the boolean {value!r}")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int | Rational):
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where}: {value!r} is not a finite number")
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value)
        except ValueError:
            raise ValueError(f"{where}: cannot read {value!r} as an exact number") from None
    raise ValueError(f"{where}: expected a number, got {type(value).__name__}")


def as_dist(values: Iterable[object], *, vocab_size: int, where: str) -> Dist:
    """Validate and convert a probability vector: length V, no negative mass, sum exactly 1."""
    raw = list(values)
    dist = tuple(to_fraction(v, where=f"{where}[{i}]") for i, v in enumerate(raw))
    if len(dist) != vocab_size:
        raise ValueError(f"{where}: has {len(dist)} entries, the vocabulary has {vocab_size}")
    negative = [i for i, m in enumerate(dist) if m < 0]
    if negative:
        raise ValueError(f"{where}: negative mass at token(s) {negative}")
    total = sum(dist, Fraction(0))
    if total != 1:
        floats = any(isinstance(v, float) for v in raw)
        hint = " (floats convert exactly; write Fractions or 'p/q' strings)" if floats else ""
        raise ValueError(f"{where}: mass sums to {total}, not exactly 1{hint}")
    return dist


def as_probability(value: object, *, where: str) -> Fraction:
    """Validate a single probability in [0, 1]."""
    p = to_fraction(value, where=where)
    if not 0 <= p <= 1:
        raise ValueError(f"{where}: {p} is outside [0, 1]")
    return p


def one_hot(token: int, vocab_size: int) -> Dist:
    return tuple(Fraction(int(v == token)) for v in range(vocab_size))


def argmax(dist: Sequence[Fraction]) -> int:
    """The most likely token; ties go to the lowest id."""
    return list(dist).index(max(dist))


def overlap(p: Sequence[Fraction], q: Sequence[Fraction]) -> Fraction:
    """sum_x min(p(x), q(x)) = 1 - TV(p, q): the chance one chain step accepts."""
    return sum((min(a, b) for a, b in zip(p, q, strict=True)), Fraction(0))


def total_variation(p: Sequence[Fraction], q: Sequence[Fraction]) -> Fraction:
    return sum((abs(a - b) for a, b in zip(p, q, strict=True)), Fraction(0)) / 2


def normalise(weights: Sequence[Fraction]) -> Dist | None:
    """Scale non-negative weights to sum 1; ``None`` when they carry no mass."""
    total = sum(weights, Fraction(0))
    if total == 0:
        return None
    return tuple(w / total for w in weights)


def residual(p: Sequence[Fraction], q: Sequence[Fraction]) -> Dist | None:
    """norm(max(0, p - q)); ``None`` when p == q (no residual mass)."""
    return normalise([max(Fraction(0), a - b) for a, b in zip(p, q, strict=True)])


def top_tokens(dist: Sequence[Fraction], width: int) -> Tokens:
    """The ``width`` most likely tokens with positive mass, ties to the lowest id."""
    ranked = sorted((v for v in range(len(dist)) if dist[v] > 0), key=lambda v: (-dist[v], v))
    return tuple(ranked[:width])
