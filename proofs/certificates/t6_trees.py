"""Certificate of T6: trees and multiple drafts.

Checks, exactly: (a) node lemma of target-only verification: for every p on grids and every
ordered list of distinct candidates, the emitted token has law p; (b) node lemma of SpecInfer:
for every (p, q) on grids and w <= 3 i.i.d. drafts, the emitted token has law p; (c) whole
decoders (tree widths 1..3, SpecInfer 2..3 chains) with fixed and Algorithm 1 schedules are
exact, and SpecInfer satisfies the tower identity of T2; (d) deterministic top-k candidates
verified with q in the ratio are biased on the grid, e.g. p = (1/2, 1/2), q = (7/10, 3/10)
gives (5/7, 2/7).
"""

from __future__ import annotations

import itertools
import random
import sys
from fractions import Fraction

from certificate_tools import (
    Outcome,
    assert_lossless,
    constant_drafter,
    constant_target,
    grid_dists,
    laws,
    random_models,
    require,
    tower_identity,
)
from specproof.reference import (
    Algorithm1,
    Chooser,
    DraftBlock,
    Drafter,
    FixedGamma,
    SpecInferRule,
    SpeculativeDecoder,
    TargetModel,
    Tokens,
    TreeRule,
    law_of,
    residual,
    table_sps,
)
from specproof.reference.distributions import Dist, normalise, top_tokens


def target_only_node(p: Dist, candidates: Tokens, chooser: Chooser) -> int:
    """One node of target-only verification (the TreeRule step)."""
    row: Dist | None = p
    for child in candidates:
        assert row is not None
        if chooser.bernoulli(row[child], "accept", child):
            return child
        row = normalise([m if v != child else Fraction(0) for v, m in enumerate(row)])
    assert row is not None
    return chooser.categorical(row, "residual", 0)


def specinfer_node(p: Dist, q: Dist, width: int, chooser: Chooser) -> int:
    """One node of SpecInfer: ``width`` i.i.d. drafts from q, residual update after a rejection."""
    drafts = [chooser.categorical(q, "draft", i) for i in range(width)]
    current: Dist | None = p
    for x in drafts:
        assert current is not None
        if chooser.bernoulli(min(Fraction(1), current[x] / q[x]), "accept", x):
            return x
        current = residual(current, q)
    assert current is not None
    return chooser.categorical(current, "residual", 0)


class TopKDraftRatioRule:
    """Deterministic top-``width`` candidates verified with min(1, p/q) and the residual update:
    the ratio assumes the candidates were drawn from q, which they were not."""

    lossless = False

    def __init__(self, width: int) -> None:
        self.width = width
        self.name = f"top-{width} with q in the ratio"

    def draft(self, context: Tokens, drafter: Drafter, gamma: int, chooser: Chooser) -> DraftBlock:
        return TreeRule(self.width).draft(context, drafter, gamma, chooser)

    def verify(
        self,
        context: Tokens,
        block: DraftBlock,
        target: TargetModel,
        drafter: Drafter,
        chooser: Chooser,
    ) -> Tokens:
        path: Tokens = ()
        for depth in range(1, len(block.tokens) + 1):
            q = drafter.proposal(context, path)
            p: Dist | None = target.dist(context + path)
            for child in top_tokens(q, self.width):
                assert p is not None
                if chooser.bernoulli(min(Fraction(1), p[child] / q[child]), "accept", depth):
                    path = (*path, child)
                    break
                p = residual(p, q)
            else:
                assert p is not None
                return (*path, chooser.categorical(p, "residual", depth))
        return (*path, chooser.categorical(target.dist(context + path), "bonus", 0))

    def law_target(self, target: TargetModel) -> TargetModel:
        return target


def node_lemmas(vocab: int, denominator: int) -> int:
    checked = 0
    dists = grid_dists(vocab, denominator)
    for p in dists:
        for n in range(1, vocab + 1):
            for candidates in itertools.permutations(range(vocab), n):
                law = law_of(lambda c, p=p, cs=candidates: target_only_node(p, cs, c))
                got = tuple(law.get(y, Fraction(0)) for y in range(vocab))
                require(got == p, f"T6 target-only node: p={p}, candidates {candidates}: {got}")
                checked += 1
        for q in dists:
            for width in (1, 2, 3):
                law = law_of(lambda c, p=p, q=q, w=width: specinfer_node(p, q, w, c))
                got = tuple(law.get(y, Fraction(0)) for y in range(vocab))
                require(got == p, f"T6 SpecInfer node: p={p}, q={q}, w={width}: {got}")
                checked += 1
    return checked


def main(thorough: bool = False) -> Outcome:
    nodes = node_lemmas(2, 8 if thorough else 4) + node_lemmas(3, 4 if thorough else 2)
    decoders = 0
    for seed in range(8 if thorough else 5):
        rng = random.Random(seed)
        target, drafter = random_models(seed, 3, 1, 2, denominator=5)
        sps = table_sps({b: Fraction(rng.randint(1, 8), 8) for b in range(1, 7)})
        for rule in (TreeRule(1), TreeRule(2), TreeRule(3), SpecInferRule(2), SpecInferRule(3)):
            for scheduler in (FixedGamma(), Algorithm1()):
                dec = SpeculativeDecoder(target, drafter, rule, scheduler, 2, sps)
                assert_lossless(dec, [(seed % 3,)], 2, f"T6 {rule.name}, {scheduler.name}")
                decoders += 1
    towers = 0
    for seed in range(4 if thorough else 2):
        target, drafter = random_models(seed, 2, 1, 2, denominator=4)
        towers += tower_identity(SpecInferRule(2), target, drafter, 2, (seed % 2,))
    biased = 0
    dists = grid_dists(2, 10)
    for p, q in itertools.product(dists, dists):
        dec = SpeculativeDecoder(
            constant_target(p), constant_drafter(q), TopKDraftRatioRule(1), FixedGamma(), 1
        )
        law, _ = laws(dec, [()], 1)
        got = tuple(law.get(((y,),), Fraction(0)) for y in range(2))
        biased += got != p
    half, draft = (Fraction(1, 2),) * 2, (Fraction(7, 10), Fraction(3, 10))
    dec = SpeculativeDecoder(
        constant_target(half), constant_drafter(draft), TopKDraftRatioRule(1), FixedGamma(), 1
    )
    law, _ = laws(dec, [()], 1)
    require(
        law == {((0,),): Fraction(5, 7), ((1,),): Fraction(2, 7)},
        f"T6 top-1 with q in the ratio: law {law}, expected (5/7, 2/7)",
    )
    require(biased > 0, "T6: top-k with q in the ratio was never biased")
    return Outcome(
        "T6",
        "proved (target-only, SpecInfer); top-k with q in the ratio refuted as lossless",
        f"{nodes} node laws exact; {decoders} tree/SpecInfer decoders exact; {towers} SpecInfer "
        f"tower identities; top-1 with q in the ratio biased on {biased}/121 grid pairs, "
        "(1/2, 1/2) -> (5/7, 2/7)",
    )


if __name__ == "__main__":
    print(main("--thorough" in sys.argv[1:]))
