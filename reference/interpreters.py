"""Two readings of one decoding program: draw a sample, or compute the exact law.

The decoder is written against :class:`Interpreter`. Values it manipulates are "random values":
for :class:`Sampler` a plain drawn value, for :class:`Exact` a law (value -> Fraction).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any, Protocol

from .choices import Chooser, SamplingChooser, UniformSource, law_of

Random = Any
"""A random value as the interpreter represents it (a sample, or an exact law)."""


class Interpreter(Protocol):
    def run(self, program: Callable[[Chooser], Hashable], round: int, request: int) -> Random:
        """The random value of ``program``; its choices are addressed by (round, request)."""
        ...

    def pure(self, value: Hashable) -> Random: ...

    def bind(self, value: Random, then: Callable[[Any], Random]) -> Random:
        """Feed each outcome of ``value`` to ``then``, which returns a random value."""
        ...

    def product(self, values: Sequence[Random]) -> Random:
        """Independent random values as one random tuple."""
        ...

    def memo(self, key: Hashable, compute: Callable[[], Random]) -> Random:
        """``compute()``, reused for equal keys where that is sound (the exact reading)."""
        ...


class Sampler:
    def __init__(self, source: UniformSource) -> None:
        self.source = source

    def run(self, program: Callable[[Chooser], Hashable], round: int, request: int) -> Random:
        return program(SamplingChooser(self.source, round, request))

    def pure(self, value: Hashable) -> Random:
        return value

    def bind(self, value: Random, then: Callable[[Any], Random]) -> Random:
        return then(value)

    def product(self, values: Sequence[Random]) -> Random:
        return tuple(values)

    def memo(self, key: Hashable, compute: Callable[[], Random]) -> Random:
        return compute()


class Exact:
    def __init__(self) -> None:
        self._memo: dict[Hashable, dict[Hashable, Fraction]] = {}

    def run(self, program: Callable[[Chooser], Hashable], round: int, request: int) -> Random:
        return law_of(program)

    def pure(self, value: Hashable) -> Random:
        return {value: Fraction(1)}

    def bind(self, value: Random, then: Callable[[Any], Random]) -> Random:
        out: dict[Hashable, Fraction] = {}
        for outcome, weight in value.items():
            for result, inner in then(outcome).items():
                out[result] = out.get(result, Fraction(0)) + weight * inner
        return out

    def product(self, values: Sequence[Random]) -> Random:
        joint: dict[Hashable, Fraction] = {(): Fraction(1)}
        for law in values:
            step: dict[Hashable, Fraction] = {}
            for head, w in joint.items():
                assert isinstance(head, tuple)
                for outcome, v in law.items():
                    key = (*head, outcome)
                    step[key] = step.get(key, Fraction(0)) + w * v
            joint = step
        return joint

    def memo(self, key: Hashable, compute: Callable[[], Random]) -> Random:
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]
