"""Fuzzed tree verification and draft sampling on both backends: any layout, dtype, ids and
Philox words give either InvalidInputError or exactly the reference's tokens (dyadic rows)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch
from fuzz_layouts import laid_out, layouts, request_ids, row_dtypes, seeds, words
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, as_fractions, backends, dyadic_dist, examples
from specproof.optimized import InvalidInputError, sample_draft_tokens, tree_verify
from specproof.reference import Address, inverse_cdf
from specproof.reference.philox import PhiloxSource
from test_tree_verify import random_tree, replay


@examples(25)
@given(data=st.data())
def test_tree_on_dyadic_rows(data: st.DataObject) -> None:
    batch = data.draw(st.integers(1, 3), "batch")
    nodes = data.draw(st.integers(1, 6), "nodes")
    vocab = data.draw(st.sampled_from([2, 3, 5]), "vocab")
    target_layout, links_layout = data.draw(layouts), data.draw(layouts)
    id_layout = data.draw(layouts.filter(lambda x: x != "expanded"), "ids layout")
    dtype = data.draw(row_dtypes, "dtype")
    seed = data.draw(seeds, "seed")
    ids = data.draw(request_ids(batch), "request_ids")
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), "data seed"))
    same = "expanded" in (target_layout, links_layout)
    count = 1 if same else batch
    trees = [random_tree(rng, nodes, vocab) for _ in range(count)]
    rows = [[dyadic_dist(rng, vocab, "random") for _ in range(nodes)] for _ in range(count)]
    if same:
        trees, rows = trees * batch, rows * batch
    # Break the tree of request 0 now and then: a repeated sibling token must be refused.
    broken = False
    siblings = [(a, b) for a, b in enumerate(trees[0][2]) if b >= 0]
    if siblings and data.draw(st.integers(0, 4), "break") == 0:
        a, b = siblings[0]
        for tree in trees if same else trees[:1]:
            tree[0][b] = tree[0][a]
        broken = True
    target = laid_out(
        torch.tensor(rows, dtype=torch.float64, device=DEVICE).div(256).to(dtype), target_layout
    )
    links = [
        laid_out(torch.tensor([t[i] for t in trees], device=DEVICE), links_layout) for i in range(3)
    ]
    requests = laid_out(torch.tensor(ids, device=DEVICE), id_layout)
    for backend in backends():
        if broken:
            with pytest.raises(InvalidInputError, match="distinct tokens"):
                tree_verify(target, *links, seed=seed, request_ids=requests, backend=backend)
            continue
        result = tree_verify(target, *links, seed=seed, request_ids=requests, backend=backend)
        for r in range(batch):
            exact_rows = [as_fractions(row) for row in rows[r]]
            want = replay(exact_rows, *trees[r], seed, ids[r])
            assert tuple(t for t in result.tokens[r].tolist() if t >= 0) == want, backend
            assert int(result.num_accepted[r]) == len(want) - 1


@examples(20)
@given(data=st.data())
def test_draft_sampling_on_dyadic_rows(data: st.DataObject) -> None:
    batch = data.draw(st.integers(1, 4), "batch")
    vocab = data.draw(st.sampled_from([1, 2, 5, 9]), "vocab")
    scores_layout = data.draw(layouts, "scores layout")
    id_layout = data.draw(layouts.filter(lambda x: x != "expanded"), "ids layout")
    dtype = data.draw(row_dtypes, "dtype")
    seed, round, offset = data.draw(seeds, "seed"), data.draw(words), data.draw(words)
    index = data.draw(st.integers(0, 2**30 - 1) | st.sampled_from([0, 1, 2**30 - 1]), "index")
    ids = data.draw(request_ids(batch), "request_ids")
    greedy = data.draw(st.lists(st.booleans(), min_size=batch, max_size=batch), "greedy")
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), "data seed"))
    count = 1 if scores_layout == "expanded" else batch
    rows = [dyadic_dist(rng, vocab, rng.choice(["random", "sparse"])) for _ in range(count)]
    rows = rows * (batch // count)
    scores = laid_out(
        torch.tensor(rows, dtype=torch.float64, device=DEVICE).div(256).to(dtype), scores_layout
    )
    source = PhiloxSource(seed, offset)
    want = [
        max(range(vocab), key=lambda v: (row[v], -v))
        if greedy[r]
        else inverse_cdf(
            [Fraction(m, 256) for m in row],
            source.uniform(Address(round, ids[r], "draft", index)),
        )
        for r, row in enumerate(rows)
    ]
    temperature = laid_out(
        torch.tensor([0.0 if g else 1.0 for g in greedy], device=DEVICE), id_layout
    )
    for backend in backends():
        got = sample_draft_tokens(
            scores,
            seed=seed,
            index=index,
            round=round,
            offset=offset,
            request_ids=laid_out(torch.tensor(ids, device=DEVICE), id_layout),
            temperature=temperature,
            backend=backend,
        )
        assert got.tolist() == want, backend
