"""Tree verification, both backends, token for token against an exact replay of the rule."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, as_fractions, backends, dyadic_dist, examples
from specproof.optimized import InvalidInputError, tree_verify
from specproof.reference import Address, inverse_cdf
from specproof.reference.distributions import normalise
from specproof.reference.philox import PhiloxSource


def random_tree(
    rng: random.Random, nodes: int, vocab: int
) -> tuple[list[int], list[int], list[int]]:
    """Parents before children; siblings carry distinct tokens."""
    candidates, first, sibling = [0] * nodes, [-1] * nodes, [-1] * nodes
    last_child: dict[int, int] = {}
    used: dict[int, set[int]] = {}
    for i in range(1, nodes):
        parent = rng.randrange(i)
        free = [v for v in range(vocab) if v not in used.setdefault(parent, set())]
        if not free:
            parent, free = i - 1, list(range(vocab))
            used.setdefault(parent, set())
        token = rng.choice(free)
        used[parent].add(token)
        candidates[i] = token
        if parent in last_child:
            sibling[last_child[parent]] = i
        else:
            first[parent] = i
        last_child[parent] = i
    return candidates, first, sibling


def replay(rows, candidates, first, sibling, seed, request) -> tuple[int, ...]:
    """The rule in exact arithmetic: one coin per depth against cumulative sibling mass."""
    source = PhiloxSource(seed)
    node, path = 0, []
    while True:
        u = source.uniform(Address(0, request, "accept", len(path) + 1))
        child, cumulative, chosen = first[node], Fraction(0), None
        while child >= 0:
            cumulative += rows[node][candidates[child]]
            if u < cumulative:
                chosen = child
                break
            child = sibling[child]
        if chosen is None:
            break
        path.append(candidates[chosen])
        node = chosen
    removed, child = set(), first[node]
    while child >= 0:
        removed.add(candidates[child])
        child = sibling[child]
    rest = normalise([m if v not in removed else Fraction(0) for v, m in enumerate(rows[node])])
    phase = "residual" if removed else "bonus"
    assert rest is not None, "every token is a child: one of them is always accepted"
    return (*path, inverse_cdf(rest, source.uniform(Address(0, request, phase, len(path) + 1))))


@pytest.mark.parametrize("backend", backends())
@examples(20)
@given(
    data_seed=st.integers(0, 2**32 - 1),
    seed=st.integers(0, 2**63),
    nodes=st.integers(1, 7),
    vocab=st.sampled_from([2, 3, 6, 20]),
)
def test_matches_exact_replay(backend, data_seed, seed, nodes, vocab):
    rng = random.Random(data_seed)
    batch = 3
    trees = [random_tree(rng, nodes, vocab) for _ in range(batch)]
    rows = [
        [dyadic_dist(rng, vocab, rng.choice(["random", "sparse"])) for _ in range(nodes)]
        for _ in range(batch)
    ]
    result = tree_verify(
        torch.tensor(rows, dtype=torch.float32, device=DEVICE) / 256,
        *(torch.tensor([t[i] for t in trees], device=DEVICE) for i in range(3)),
        seed=seed,
        backend=backend,
    )
    for r in range(batch):
        exact_rows = [as_fractions(row) for row in rows[r]]
        want = replay(exact_rows, *trees[r], seed, r)
        got = tuple(t for t in result.tokens[r].tolist() if t >= 0)
        assert got == want
        assert int(result.num_accepted[r]) == len(want) - 1


def test_links_must_point_forward():
    target = torch.full((1, 2, 2), 0.5, device=DEVICE)
    links = torch.tensor([[1, -1]], device=DEVICE)
    with pytest.raises(InvalidInputError, match="later nodes"):
        tree_verify(
            target,
            torch.tensor([[0, 1]], device=DEVICE),
            links,
            torch.tensor([[-1, 1]], device=DEVICE),
            seed=0,
        )
