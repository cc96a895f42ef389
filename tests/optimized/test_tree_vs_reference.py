"""Tree verification, both backends, token for token against the reference ``TreeRule``.

The reference rule is run on tabular models with probabilities in multiples of 1/256 and its
choices are drawn through ``PhiloxSource``; the optimized ``tree_verify`` is given the same
tree (every node expands the drafter's ``width`` most likely tokens, in the reference's order,
down to the scheduled depth) and the target row of every node, as float32. Every probability
and every partial sum is then a float32 value, so the walk (u < cumulative sibling mass, in
float64) and the residual / bonus inverse CDF are exact on both sides and must agree exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DENOMINATOR, DEVICE, backends, dyadic_dist, examples
from specproof.optimized import Backend, tree_verify
from specproof.reference import Drafter, TargetModel, Tokens, TreeRule
from specproof.reference.choices import SamplingChooser
from specproof.reference.distributions import top_tokens
from specproof.reference.philox import PhiloxSource

STYLES = ("random", "sparse", "one-hot")


def table_model(
    seed: int, vocab: int, styles: tuple[str, ...]
) -> Callable[[Tokens], tuple[Fraction, ...]]:
    """A dyadic distribution for every context, drawn from a per-context seeded generator."""
    cache: dict[Tokens, tuple[Fraction, ...]] = {}

    def dist(context: Tokens) -> tuple[Fraction, ...]:
        if context not in cache:
            rng = random.Random(f"{seed}/{context}")
            numerators = dyadic_dist(rng, vocab, rng.choice(styles))
            cache[context] = tuple(Fraction(m, DENOMINATOR) for m in numerators)
        return cache[context]

    return dist


def flatten_tree(
    context: Tokens, drafter: Drafter, target: TargetModel, width: int, depth: int
) -> tuple[list[int], list[int], list[int], list[tuple[Fraction, ...]]]:
    """The reference rule's tree in the kernels' layout: (candidates, first_child,
    next_sibling, target row per node), nodes in breadth-first (topological) order."""
    candidates, first, sibling = [0], [-1], [-1]
    paths: list[Tokens] = [()]
    frontier = [0]
    for _ in range(depth):
        next_frontier = []
        for node in frontier:
            previous = -1
            for token in top_tokens(drafter.proposal(context, paths[node]), width):
                child = len(candidates)
                candidates.append(token)
                first.append(-1)
                sibling.append(-1)
                paths.append((*paths[node], token))
                if previous < 0:
                    first[node] = child
                else:
                    sibling[previous] = child
                previous = child
                next_frontier.append(child)
        frontier = next_frontier
    rows = [target.dist(context + path) for path in paths]
    return candidates, first, sibling, rows


def padded(values: list[list[int]], fill: int) -> list[list[int]]:
    size = max(len(v) for v in values)
    return [v + [fill] * (size - len(v)) for v in values]


@pytest.mark.parametrize("backend", backends())
@examples(20)
@given(
    model_seed=st.integers(0, 2**32 - 1),
    seed=st.integers(0, 2**64 - 1),
    vocab=st.sampled_from([2, 3, 5, 12]),
    width=st.integers(1, 3),
    depths=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    round=st.integers(0, 2**32 - 1),
    offset=st.integers(0, 2**32 - 1),
    styles=st.sampled_from([STYLES, ("one-hot",), ("sparse",)]),
)
def test_tree_verify_is_the_reference_tree_rule(
    backend: Backend,
    model_seed: int,
    seed: int,
    vocab: int,
    width: int,
    depths: list[int],
    round: int,
    offset: int,
    styles: tuple[str, ...],
) -> None:
    """Request b (with a scattered request id) verifies a tree of its scheduled depth; the
    optimized tokens, accepted nodes' tokens and accepted count equal the reference's."""
    target = TargetModel(vocab, table_model(model_seed, vocab, styles), name="table target")
    proposal = table_model(model_seed + 1, vocab, styles)
    drafter = Drafter(
        vocab, lambda ctx, drafted: proposal(ctx + drafted), lambda ctx, drafted: Fraction(1, 2)
    )
    rule = TreeRule(width)
    source = PhiloxSource(seed, offset)
    request_ids = [7 * b + 3 for b in range(len(depths))]
    contexts = [(b % vocab,) for b in range(len(depths))]
    wanted, trees = [], []
    for b, (context, depth) in enumerate(zip(contexts, depths, strict=True)):
        chooser = SamplingChooser(source, round, request_ids[b])
        block = rule.draft(context, drafter, depth, chooser).truncated(depth)
        wanted.append(rule.verify(context, block, target, drafter, chooser))
        trees.append(flatten_tree(context, drafter, target, width, depth))
    nodes = max(len(tree[0]) for tree in trees)
    rows = [
        [[float(m) for m in row] for row in tree[3]]
        + [[1.0 / vocab] * vocab] * (nodes - len(tree[3]))
        for tree in trees
    ]
    links = [
        padded([tree[0] for tree in trees], 0),
        padded([tree[1] for tree in trees], -1),
        padded([tree[2] for tree in trees], -1),
    ]
    result = tree_verify(
        torch.tensor(rows, dtype=torch.float32, device=DEVICE),
        *(torch.tensor(link, dtype=torch.int64, device=DEVICE) for link in links),
        seed=seed,
        round=round,
        offset=offset,
        request_ids=torch.tensor(request_ids, dtype=torch.int64, device=DEVICE),
        backend=backend,
    )
    for b, want in enumerate(wanted):
        got = tuple(int(t) for t in result.tokens[b].tolist() if t >= 0)
        assert got == want, (b, depths[b], trees[b][:3])
        assert int(result.num_accepted[b]) == len(want) - 1
        candidates = trees[b][0]
        accepted_nodes = [int(i) for i in result.path_nodes[b].tolist() if i >= 0]
        assert tuple(candidates[i] for i in accepted_nodes) == want[:-1]
