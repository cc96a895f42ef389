"""Shared pieces of the executable certificates: exhaustive grids, small models, exact checks.

Everything is exact (``fractions.Fraction``); a certificate fails by raising ``AssertionError``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from specproof.reference import (
    Chooser,
    DraftBlock,
    Drafter,
    TargetModel,
    VerificationRule,
    distance_from_target,
    exact_law,
    law_of,
    reference_law,
)
from specproof.reference.decoder import Outputs, SpeculativeDecoder
from specproof.reference.distributions import Dist, Tokens
from specproof.reference.generators import random_drafter, random_target

RoundLaw = dict[Tokens, Fraction]
"""The exact law of the tokens one request emits in one round."""


@dataclass(frozen=True)
class Outcome:
    """What a certificate established: the verdict and one line on what it checked."""

    theorem: str
    verdict: str
    checked: str


def require(condition: bool, message: str) -> None:
    """Fail loudly: a certificate's statement does not hold."""
    if not condition:
        raise AssertionError(message)


def grid_dists(vocab_size: int, denominator: int) -> list[Dist]:
    """Every distribution on ``vocab_size`` tokens with masses in multiples of 1/denominator."""
    out: list[Dist] = []
    for cuts in itertools.combinations_with_replacement(range(denominator + 1), vocab_size - 1):
        edges = [0, *cuts, denominator]
        out.append(tuple(Fraction(edges[i + 1] - edges[i], denominator) for i in range(vocab_size)))
    return out


def constant_target(p: Sequence[Fraction]) -> TargetModel:
    """A target that ignores its context (order 0)."""
    dist = tuple(p)
    return TargetModel(len(dist), lambda ctx: dist, order=0, name="p")


def constant_drafter(
    q: Sequence[Fraction], confidence: Callable[[Tokens, Tokens], Fraction] | None = None
) -> Drafter:
    """A drafter proposing ``q`` at every position, with confidence 1 unless given."""
    dist = tuple(q)
    conf = confidence or (lambda ctx, drafted: Fraction(1))
    return Drafter(len(dist), lambda ctx, drafted: dist, conf, order=0, name="q")


def random_models(
    seed: int, vocab_size: int, order: int, gamma: int, denominator: int = 6
) -> tuple[TargetModel, Drafter]:
    """Seeded exact tabular models; zeros are frequent at small denominators (edge cases)."""
    rng = random.Random(seed)
    target = random_target(rng, vocab_size, order, denominator=denominator)
    drafter = random_drafter(rng, vocab_size, order, gamma, denominator=denominator)
    return target, drafter


def assert_lossless(
    dec: SpeculativeDecoder, prompts: Sequence[Tokens], num_tokens: int, what: str
) -> None:
    """The exact output law of ``dec`` equals the target law."""
    distance = distance_from_target(dec, prompts, num_tokens)
    require(distance == 0, f"{what}: exact TV distance from the target law is {distance}, not 0")


def laws(
    dec: SpeculativeDecoder, prompts: Sequence[Tokens], num_tokens: int
) -> tuple[dict[Outputs, Fraction], dict[Outputs, Fraction]]:
    """(exact law of the decoder, law it must reproduce)."""
    return exact_law(dec, prompts, num_tokens), reference_law(dec, prompts, num_tokens)


def target_prob(target: TargetModel, context: Tokens, tokens: Tokens) -> Fraction:
    """T(tokens | context): the target's probability of emitting ``tokens`` next."""
    prob = Fraction(1)
    for i, token in enumerate(tokens):
        prob *= target.dist(context + tokens[:i])[token]
    return prob


def round_inconsistency(
    round_law: Mapping[Tokens, Fraction], target: TargetModel, context: Tokens
) -> str | None:
    """Why one round's output law is not a stopped target sample, or None if it is.

    The round emits a sequence O. It composes losslessly with later rounds iff for every n and
    every prefix y_<n with P(|O| >= n, O_<n = y_<n) > 0, the n-th token has the target's law:
    P(O_n = y | O_<n = y_<n, |O| >= n) = p(y | context + y_<n).
    """
    longest = max((len(o) for o in round_law), default=0)
    for n in range(1, longest + 1):
        reach: dict[Tokens, Fraction] = {}
        emit: dict[Tokens, Fraction] = {}
        for out, weight in round_law.items():
            if len(out) >= n:
                reach[out[: n - 1]] = reach.get(out[: n - 1], Fraction(0)) + weight
                emit[out[:n]] = emit.get(out[:n], Fraction(0)) + weight
        for prefix, mass in reach.items():
            p = target.dist(context + prefix)
            for y in range(target.vocab_size):
                got = emit.get((*prefix, y), Fraction(0)) / mass
                if got != p[y]:
                    return f"token {n} after {prefix}: P(y={y}) = {got}, target {p[y]}"
    return None


def test_weight(out: Tokens, ys: Tokens, target: TargetModel, context: Tokens) -> Fraction:
    """W_y(O) = 1{O agrees with y} / T(agreed part); O is cut at len(y)."""
    agreed = out[: len(ys)]
    if agreed != ys[: len(agreed)]:
        return Fraction(0)
    return 1 / target_prob(target, context, agreed)


def verifier_value(
    verify: Callable[[Chooser], Tokens],
    ys: Tokens,
    target: TargetModel,
    context: Tokens,
) -> Fraction:
    """Psi = E[W_y(O)] for a verification program ``verify(chooser) -> emitted tokens``."""
    law = law_of(verify)
    return sum((w * test_weight(out, ys, target, context) for out, w in law.items()), Fraction(0))


def block_of(context: Tokens, drafter: Drafter, tokens: Tokens) -> DraftBlock:
    """The draft block a drafter would have produced for ``tokens`` (proposals, confidences)."""
    proposals = tuple(drafter.proposal(context, tokens[:k]) for k in range(len(tokens)))
    confidences = tuple(drafter.confidence(context, tokens[:k]) for k in range(len(tokens)))
    return DraftBlock(tokens, proposals, confidences)


def sequences(vocab_size: int, length: int) -> Iterator[Tokens]:
    yield from itertools.product(range(vocab_size), repeat=length)


class PrefixStop:
    """One request at a time: admit position k while ``table[x_<k]`` says go on.

    {l >= k} reads x_<k only, so the rule is non-anticipating by construction.
    """

    causal = True
    name = "prefix-stop"

    def __init__(self, table: Mapping[Tokens, bool]) -> None:
        self.table = table

    def initial_state(self) -> Hashable:
        return None

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: object, state: Hashable
    ) -> tuple[list[int], Hashable]:
        lengths = []
        for block in blocks:
            length = 0
            while length < len(block.tokens) and self.table[block.tokens[:length]]:
                length += 1
            lengths.append(length)
        return lengths, state


def random_prefix_table(rng: random.Random, vocab_size: int, gamma: int) -> dict[Tokens, bool]:
    return {
        prefix: rng.random() < 0.65
        for n in range(gamma + 1)
        for prefix in itertools.product(range(vocab_size), repeat=n)
    }


class PairCoupled:
    """Two requests whose lengths read each other's drafts (batch-coupled admission).

    With ``lag = 0`` the draws are ordered x_{1,1}, x_{2,1}, x_{1,2}, x_{2,2}, ...: {l_1 >= k}
    reads (x_{1,<k}, x_{2,<k}) and {l_2 >= k} reads (x_{1,<=k}, x_{2,<k}), both before their own
    x_k in that one order. With ``lag = 1``, {l_1 >= k} also reads x_{2,k}: each request alone is
    still non-anticipating, but no single order of draws makes both so.
    """

    causal = True

    def __init__(self, table: Mapping[tuple[int, Tokens, Tokens], bool], lag: int) -> None:
        self.table = table
        self.lag = lag
        self.name = f"pair-coupled(lag={lag})"

    def initial_state(self) -> Hashable:
        return None

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: object, state: Hashable
    ) -> tuple[list[int], Hashable]:
        if len(blocks) != 2:
            return [len(b.tokens) for b in blocks], state
        first, second = blocks[0].tokens, blocks[1].tokens
        gamma = len(first)
        l1 = 0
        while l1 < gamma and self.table[(1, first[:l1], second[: l1 + self.lag])]:
            l1 += 1
        l2 = 0
        while l2 < gamma and self.table[(2, first[: l2 + 1], second[:l2])]:
            l2 += 1
        return [l1, l2], state


def random_pair_table(
    rng: random.Random, vocab_size: int, gamma: int
) -> dict[tuple[int, Tokens, Tokens], bool]:
    table: dict[tuple[int, Tokens, Tokens], bool] = {}
    for request in (1, 2):
        for n in range(gamma + 1):
            for extra_first, extra_second in ((0, 0), (0, 1), (1, 0)):
                for first in sequences(vocab_size, n + extra_first):
                    for second in sequences(vocab_size, n + extra_second):
                        table[(request, first, second)] = rng.random() < 0.6
    return table


def reachable_prefixes(drafter: Drafter, context: Tokens, longest: int) -> list[Tokens]:
    """Every draft prefix of length <= ``longest`` with positive proposal probability."""
    out: list[Tokens] = [()]
    frontier: list[Tokens] = [()]
    for _ in range(longest):
        frontier = [
            (*prefix, x)
            for prefix in frontier
            for x, mass in enumerate(drafter.proposal(context, prefix))
            if mass > 0
        ]
        out.extend(frontier)
    return out


def tower_identity(
    rule: VerificationRule, target: TargetModel, drafter: Drafter, gamma: int, context: Tokens
) -> int:
    """Psi_m(x_<=m) = sum_x q(x | x_<=m) Psi_{m+1}(x_<=m x) and Psi_0 = 1, for every test y
    of positive target probability.

    Psi_m(x_<=m) = E[W_y(O)] when exactly x_<=m is verified; W_y(O) = 1{O agrees with y} / T(O).
    """
    vocab = target.vocab_size
    checks = 0
    for ys in sequences(vocab, gamma + 1):
        if target_prob(target, context, ys) == 0:
            continue

        def value(tokens: Tokens, ys: Tokens = ys) -> Fraction:
            block = block_of(context, drafter, tokens)

            def program(chooser: Chooser) -> Tokens:
                return rule.verify(context, block, target, drafter, chooser)

            return verifier_value(program, ys, target, context)

        require(value(()) == 1, f"{rule.name}: Psi_0 = {value(())} for y = {ys}")
        for prefix in reachable_prefixes(drafter, context, gamma - 1):
            q = drafter.proposal(context, prefix)
            averaged = sum(
                (q[x] * value((*prefix, x)) for x in range(vocab) if q[x] > 0), Fraction(0)
            )
            require(
                averaged == value(prefix),
                f"{rule.name}: tower identity fails at x_<=m = {prefix}, y = {ys}",
            )
            checks += 1
    return checks
