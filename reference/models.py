"""Target and draft models over a small vocabulary, exact and validated.

A model reads only the last ``order`` tokens of its context (``None``: all of it); the exact
enumerator uses that to share work between histories with the same recent tokens.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from .distributions import Dist, Tokens, argmax, as_dist, as_probability, one_hot, overlap


def _tail(context: Tokens, order: int | None) -> Tokens:
    if order is None:
        return context
    return context[len(context) - order :] if order else ()


def all_contexts(vocab_size: int, order: int) -> list[Tokens]:
    return list(itertools.product(range(vocab_size), repeat=order))


def _check_vocab(vocab_size: int) -> None:
    if not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")


def _check_order(order: int | None) -> None:
    if order is not None and (not isinstance(order, int) or order < 0):
        raise ValueError(f"order must be a non-negative integer or None, got {order!r}")


class TargetModel:
    """p(. | context): the law the decoder must reproduce exactly."""

    def __init__(
        self,
        vocab_size: int,
        next_token: Callable[[Tokens], Sequence[object]],
        *,
        order: int | None = None,
        name: str = "target",
    ) -> None:
        _check_vocab(vocab_size)
        _check_order(order)
        self.vocab_size = vocab_size
        self.order = order
        self.name = name
        self._next_token = next_token  # receives the last ``order`` context tokens
        self._cache: dict[Tokens, Dist] = {}

    @classmethod
    def from_table(
        cls, vocab_size: int, order: int, table: Mapping[Tokens, Sequence[object]], **kw: str
    ) -> TargetModel:
        """An n-gram table: one distribution for every context of ``order`` tokens."""
        _check_vocab(vocab_size)
        _check_order(order)
        rows: dict[Tokens, Dist] = {}
        for context in all_contexts(vocab_size, order):
            if context not in table:
                raise ValueError(f"target table: context {context} is missing")
            rows[context] = as_dist(
                table[context], vocab_size=vocab_size, where=f"target p(.|{context})"
            )
        extra = set(table) - set(rows)
        if extra:
            raise ValueError(f"target table: unexpected context(s) {sorted(extra)}")
        return cls(vocab_size, rows.__getitem__, order=order, **kw)

    def context_key(self, context: Tokens) -> Tokens:
        return _tail(context, self.order)

    def dist(self, context: Tokens) -> Dist:
        key = self.context_key(context)
        if key not in self._cache:
            self._cache[key] = as_dist(
                self._next_token(key), vocab_size=self.vocab_size, where=f"{self.name} p(.|{key})"
            )
        return self._cache[key]

    def greedy(self) -> TargetModel:
        """The temperature-0 target: a point mass on the argmax (ties to the lowest id)."""
        return TargetModel(
            self.vocab_size,
            lambda ctx: one_hot(argmax(self.dist(ctx)), self.vocab_size),
            order=self.order,
            name=f"greedy {self.name}",
        )


DraftKey = tuple[Tokens, int, int | None]
"""(last ``order`` context tokens, block position k, previous draft token x_{k-1} or None)."""


class Drafter:
    """A DSpark-style block drafter.

    Both callables receive the last ``order`` tokens of the context (all of it for ``None``).

    ``proposal(context, drafted)`` is q_k for k = len(drafted) + 1 and may depend on the drafted
    prefix (semi-autoregressive). ``confidence(context, drafted)`` is c_k: it is given only the
    tokens before x_k, so by construction it cannot see x_k.
    """

    def __init__(
        self,
        vocab_size: int,
        proposal: Callable[[Tokens, Tokens], Sequence[object]],
        confidence: Callable[[Tokens, Tokens], object],
        *,
        order: int | None = None,
        name: str = "drafter",
    ) -> None:
        _check_vocab(vocab_size)
        _check_order(order)
        self.vocab_size = vocab_size
        self.order = order
        self.name = name
        self._proposal = proposal
        self._confidence = confidence
        self._q: dict[tuple[Tokens, Tokens], Dist] = {}
        self._c: dict[tuple[Tokens, Tokens], Fraction] = {}

    @classmethod
    def from_tables(
        cls,
        vocab_size: int,
        order: int,
        gamma: int,
        proposals: Mapping[DraftKey, Sequence[object]],
        confidences: Mapping[DraftKey, object],
        **kw: str,
    ) -> Drafter:
        """Tables keyed by :data:`DraftKey`: q_k and c_k depend on (context, k, x_{k-1})."""
        _check_vocab(vocab_size)
        _check_order(order)
        if gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {gamma}")
        q: dict[DraftKey, Dist] = {}
        c: dict[DraftKey, Fraction] = {}
        for key in draft_keys(vocab_size, order, gamma):
            if key not in proposals or key not in confidences:
                raise ValueError(f"drafter tables: key {key} is missing")
            q[key] = as_dist(proposals[key], vocab_size=vocab_size, where=f"draft q{key}")
            c[key] = as_probability(confidences[key], where=f"confidence c{key}")

        def key_of(context: Tokens, drafted: Tokens) -> DraftKey:
            k = len(drafted) + 1
            if k > gamma:
                raise ValueError(f"drafter tables cover k <= {gamma}, asked for k = {k}")
            return (context, k, drafted[-1] if drafted else None)

        return cls(
            vocab_size,
            lambda ctx, d: q[key_of(ctx, d)],
            lambda ctx, d: c[key_of(ctx, d)],
            order=order,
            **kw,
        )

    @classmethod
    def from_model(
        cls, model: TargetModel, confidence: Callable[[Tokens, Tokens], object], name: str = ""
    ) -> Drafter:
        """An autoregressive drafter that proposes from ``model`` given context + drafted."""
        return cls(
            model.vocab_size,
            lambda ctx, d: model.dist(ctx + d),
            confidence,
            order=model.order,
            name=name or f"draft {model.name}",
        )

    def context_key(self, context: Tokens) -> Tokens:
        return _tail(context, self.order)

    def proposal(self, context: Tokens, drafted: Tokens) -> Dist:
        key = (self.context_key(context), drafted)
        if key not in self._q:
            where = f"{self.name} q(.|{key[0]}, drafted={drafted})"
            self._q[key] = as_dist(self._proposal(*key), vocab_size=self.vocab_size, where=where)
        return self._q[key]

    def confidence(self, context: Tokens, drafted: Tokens) -> Fraction:
        key = (self.context_key(context), drafted)
        if key not in self._c:
            where = f"{self.name} confidence c(.|{key[0]}, drafted={drafted})"
            self._c[key] = as_probability(self._confidence(*key), where=where)
        return self._c[key]

    def with_confidence(self, confidence: Callable[[Tokens, Tokens], object]) -> Drafter:
        return Drafter(
            self.vocab_size, self._proposal, confidence, order=self.order, name=self.name
        )


def draft_keys(vocab_size: int, order: int, gamma: int) -> list[DraftKey]:
    keys: list[DraftKey] = []
    for context in all_contexts(vocab_size, order):
        for k in range(1, gamma + 1):
            previous: list[int | None] = [None] if k == 1 else list(range(vocab_size))
            keys.extend((context, k, prev) for prev in previous)
    return keys


def with_true_confidences(drafter: Drafter, target: TargetModel) -> Drafter:
    """c_k = sum_x min(p_k, q_k): the exact chance x_k survives given x_<k were accepted."""
    orders = (drafter.order, target.order)
    order = None if None in orders else max(o for o in orders if o is not None)
    return Drafter(
        drafter.vocab_size,
        drafter.proposal,
        lambda ctx, d: overlap(target.dist(ctx + d), drafter.proposal(ctx, d)),
        order=order,
        name=f"{drafter.name} with true confidences",
    )
