"""Certificate of T5: admission that reads x_k biases the law; what the conditional proposal does.

Checks, exactly: (a) Appendix A: global search gives (17/20, 3/20), Algorithm 1 (7/10, 3/10);
(b) for every admission set S (l = 1 iff x_1 in S) and every (p, q) on grids (V = 2, 3), the
first token's law equals the formula of T5(b); with p == q it is exact iff S does not split the
support of q; a one-hot p is never biased; (c) chain verification against the exact
conditional proposal (the law of x_k given x_<k and {l >= k}) is exact for the global search on
seeded instances, while q restricted to the admitted set, holding the other drafts fixed, is
not (exact counterexample: first token P(A) = 92/125 instead of 4/5).
"""

from __future__ import annotations

import itertools
import random
import sys
from fractions import Fraction

from certificate_tools import (
    Outcome,
    RoundLaw,
    block_of,
    constant_drafter,
    constant_target,
    grid_dists,
    laws,
    random_models,
    require,
    round_inconsistency,
)
from specproof.reference import (
    SPS,
    Algorithm1,
    ChainRule,
    Chooser,
    DraftBlock,
    Drafter,
    GlobalSearch,
    ScheduleFn,
    SpeculativeDecoder,
    TargetModel,
    Tokens,
    appendix_a,
    law_of,
    overlap,
    residual,
    table_sps,
)
from specproof.reference.distributions import normalise


def appendix_a_laws() -> None:
    case = appendix_a()
    for scheduler, expected in (
        (GlobalSearch(), (Fraction(17, 20), Fraction(3, 20))),
        (Algorithm1(), (Fraction(7, 10), Fraction(3, 10))),
    ):
        law, _ = laws(case.decoder(scheduler), case.prompts, case.num_tokens)
        got = (law.get(((0,),), Fraction(0)), law.get(((1,),), Fraction(0)))
        require(got == expected, f"T5 Appendix A, {scheduler.name}: law {got}, expected {expected}")


class SetGate:
    """l = 1 iff x_1 is in ``admitted`` (one request, gamma = 1): reads x_1 to admit x_1."""

    causal = False

    def __init__(self, admitted: frozenset[int]) -> None:
        self.admitted = admitted
        self.name = f"gate{sorted(admitted)}"

    def initial_state(self) -> None:
        return None

    def schedule_blocks(
        self, blocks: tuple[DraftBlock, ...], sps: SPS | None, state: None
    ) -> tuple[list[int], None]:
        return [int(b.tokens[0] in self.admitted) for b in blocks], state


def first_token_formula(p: Tokens, q: Tokens, admitted: frozenset[int]) -> list[Fraction]:
    """alpha(y) min(p, q)(y) + r(y) sum_x alpha(x)(q(x) - min(p, q)(x)) + (1 - q(S)) p(y)."""
    vocab = len(p)
    alpha = [Fraction(int(x in admitted)) for x in range(vocab)]
    low = [min(a, b) for a, b in zip(p, q, strict=True)]
    leftover = sum((alpha[x] * (q[x] - low[x]) for x in range(vocab)), Fraction(0))
    r = residual(p, q) or tuple(Fraction(0) for _ in range(vocab))
    mass = sum((alpha[x] * q[x] for x in range(vocab)), Fraction(0))
    return [alpha[y] * low[y] + leftover * r[y] + (1 - mass) * p[y] for y in range(vocab)]


def gate_grid(vocab: int, denominator: int) -> int:
    checked = 0
    dists = grid_dists(vocab, denominator)
    subsets = [
        frozenset(s) for n in range(vocab + 1) for s in itertools.combinations(range(vocab), n)
    ]
    for p, q, admitted in itertools.product(dists, dists, subsets):
        dec = SpeculativeDecoder(
            constant_target(p), constant_drafter(q), ChainRule(), SetGate(admitted), 1
        )
        law, _ = laws(dec, [()], 1)
        got = [law.get(((y,),), Fraction(0)) for y in range(vocab)]
        require(got == first_token_formula(p, q, admitted), f"T5 formula: p={p} q={q} S={admitted}")
        support = {x for x in range(vocab) if q[x] > 0}
        splits = bool(support & admitted) and bool(support - admitted)
        if p == q:
            require((got == list(p)) == (not splits), f"T5 p == q: S={admitted} q={q}: {got}")
        if max(p) == 1:
            require(got == list(p), f"T5 one-hot p={p}: gate {admitted} biased the law")
        checked += 1
    return checked


def conditional_round(
    target: TargetModel,
    drafter: Drafter,
    scheduler: ScheduleFn,
    sps: SPS,
    gamma: int,
    exact_conditional: bool,
) -> RoundLaw:
    """One round, one request: draft gamma tokens, l from ``scheduler``, chain-verify x_k
    against a conditional proposal instead of q_k; returns the law of the emitted tokens."""

    def length(tokens: Tokens) -> int:
        return scheduler([list(block_of((), drafter, tokens).confidences)], sps)[0]

    def admitted_given(prefix: Tokens, x: int, k: int, later: Tokens) -> Fraction:
        if not exact_conditional:  # the other drafts held at their drawn values
            return Fraction(int(length((*prefix, x, *later)) >= k))

        def completions(chooser: Chooser) -> bool:
            tokens = (*prefix, x)
            while len(tokens) < gamma:
                q = drafter.proposal((), tokens)
                tokens = (*tokens, chooser.categorical(q, "draft", len(tokens)))
            return length(tokens) >= k

        return law_of(completions).get(True, Fraction(0))

    def program(chooser: Chooser) -> Tokens:
        tokens: Tokens = ()
        for k in range(gamma):
            tokens = (*tokens, chooser.categorical(drafter.proposal((), tokens), "draft", k))
        emitted: Tokens = ()
        for k in range(1, length(tokens) + 1):
            x, q, p = tokens[k - 1], drafter.proposal((), emitted), target.dist(emitted)
            weights = [q[v] * admitted_given(emitted, v, k, tokens[k:]) for v in range(len(q))]
            conditional = normalise(weights)
            assert conditional is not None and conditional[x] > 0
            if chooser.bernoulli(min(Fraction(1), p[x] / conditional[x]), "accept", k):
                emitted = (*emitted, x)
                continue
            correction = residual(p, conditional)
            assert correction is not None
            return (*emitted, chooser.categorical(correction, "residual", k))
        return (*emitted, chooser.categorical(target.dist(emitted), "bonus", 0))

    return law_of(program)


def restricted_counterexample() -> tuple[TargetModel, Drafter, SPS]:
    """p = (4/5, 1/5); q_1 = (2/5, 3/5), q_2(.|A) = (1/5, 4/5), q_2(.|B) = (1, 0), q_3 = (2/5, 3/5);
    c_1 = 2/5, c_2 = 3/5 after A and 2/5 after B, c_3 = 4/5 after A and 0 after B;
    SPS(1..4) = (9/10, 3/5, 3/10, 3/5). The global search gives l = 3 iff x_2 = A, else 0."""
    f = Fraction
    proposals = {
        ((), 1, None): (f(2, 5), f(3, 5)),
        ((), 2, 0): (f(1, 5), f(4, 5)),
        ((), 2, 1): (f(1), f(0)),
        ((), 3, 0): (f(2, 5), f(3, 5)),
        ((), 3, 1): (f(2, 5), f(3, 5)),
    }
    confidences = {
        ((), 1, None): f(2, 5),
        ((), 2, 0): f(3, 5),
        ((), 2, 1): f(2, 5),
        ((), 3, 0): f(4, 5),
        ((), 3, 1): f(0),
    }
    drafter = Drafter.from_tables(2, 0, 3, proposals, confidences)
    sps = table_sps({1: f(9, 10), 2: f(3, 5), 3: f(3, 10), 4: f(3, 5)})
    return constant_target((f(4, 5), f(1, 5))), drafter, sps


def main(thorough: bool = False) -> Outcome:
    appendix_a_laws()
    gates = gate_grid(2, 10 if thorough else 5) + gate_grid(3, 4 if thorough else 3)
    case = appendix_a()
    for exact_conditional in (True, False):
        law = conditional_round(
            case.target, case.drafter, GlobalSearch(), case.sps, 2, exact_conditional
        )
        require(round_inconsistency(law, case.target, ()) is None, "T5: Appendix A conditional")
    rounds = 0
    for seed in range(60 if thorough else 40):
        rng = random.Random(seed)
        target, drafter = random_models(seed, 2, 0, 3, denominator=5)
        sps = table_sps({b: Fraction(rng.randint(1, 10), 10) for b in range(1, 5)})
        law = conditional_round(target, drafter, GlobalSearch(), sps, 3, True)
        why = round_inconsistency(law, target, ())
        require(why is None, f"T5 exact conditional proposal, seed {seed}: {why}")
        plain = conditional_round(target, drafter, lambda c, s: [3], sps, 3, True)
        require(round_inconsistency(plain, target, ()) is None, f"T5: fixed length, seed {seed}")
        rounds += 1
    target, drafter, sps = restricted_counterexample()
    restricted = conditional_round(target, drafter, GlobalSearch(), sps, 3, False)
    first_a = sum((w for out, w in restricted.items() if out[0] == 0), Fraction(0))
    require(first_a == Fraction(92, 125), f"T5 restricted proposal: P(A) = {first_a}, not 92/125")
    exact = conditional_round(target, drafter, GlobalSearch(), sps, 3, True)
    require(round_inconsistency(exact, target, ()) is None, "T5: exact conditional on the example")
    require(overlap(target.dist(()), drafter.proposal((), ())) == Fraction(3, 5), "T5: example")
    return Outcome(
        "T5",
        "Appendix A reproduced; bias proved (first position, p == q iff); exact conditional "
        "proposal proved; 'q restricted to the admitted set' refuted",
        f"Appendix A (17/20, 3/20) and (7/10, 3/10); {gates} (p, q, S) gate laws match the "
        f"formula; {rounds} global-search rounds exact with the conditional proposal; "
        "restricted proposal gives P(A) = 92/125 != 4/5",
    )


if __name__ == "__main__":
    print(main("--thorough" in sys.argv[1:]))
