"""Batched schedulers against the reference schedulers on the same confidences."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, examples
from specproof.optimized import schedulers as batched
from specproof.reference.blocks import DraftBlock

from specproof import reference

# Multiples of 1/16 (and SPS values in 1/64): every product, sum and Theta is exact in float64,
# so the batched walk and the exact one take the same decisions, ties included.
confidence = st.integers(0, 16).map(lambda m: Fraction(m, 16))
sps_values = st.lists(st.integers(1, 64).map(lambda m: Fraction(m, 64)), min_size=40, max_size=40)


def confidences_strategy() -> st.SearchStrategy:
    return st.integers(1, 4).flatmap(
        lambda gamma: st.lists(
            st.lists(confidence, min_size=gamma, max_size=gamma), min_size=1, max_size=5
        )
    )


def as_tensor(rows: list[list[Fraction]]) -> torch.Tensor:
    return torch.tensor(
        [[float(c) for c in row] for row in rows], dtype=torch.float64, device=DEVICE
    )


PAIRS = [
    (lambda: reference.Algorithm1(), lambda: batched.Algorithm1()),
    (lambda: reference.GlobalSearch(), lambda: batched.GlobalSearch()),
    (lambda: reference.FixedTopK(3), lambda: batched.FixedTopK(3)),
    (lambda: reference.FixedTopK(0), lambda: batched.FixedTopK(0)),
    (lambda: reference.FixedGamma(), lambda: batched.FixedGamma()),
    (lambda: reference.FixedGamma(2), lambda: batched.FixedGamma(2)),
    (lambda: reference.StaticThreshold(Fraction(1, 2)), lambda: batched.StaticThreshold(0.5)),
]


@pytest.mark.parametrize("pair", range(len(PAIRS)))
@examples(60)
@given(rows=confidences_strategy(), table=sps_values)
def test_matches_reference_scheduler(pair, rows, table):
    make_reference, make_batched = PAIRS[pair]
    sps = reference.table_sps({b + 1: v for b, v in enumerate(table)})
    want = make_reference()(rows, sps)
    scheduler = make_batched()
    table_t = batched.sps_table(sps, len(table), DEVICE)
    got, _ = scheduler(as_tensor(rows), table_t, scheduler.initial_state(torch.device(DEVICE)))
    assert got.tolist() == want


@examples(40)
@given(
    rounds=st.lists(confidences_strategy(), min_size=1, max_size=4),
    table=sps_values,
    initial=st.integers(0, 4),
)
def test_stale_capacity_matches_reference_across_rounds(rounds, table, initial):
    requests = len(rounds[0])
    rounds = [(r * requests)[:requests] for r in rounds]
    gamma = len(rounds[0][0])
    rounds = [[(row * gamma)[:gamma] for row in r] for r in rounds]
    sps = reference.table_sps({b + 1: v for b, v in enumerate(table)})
    exact = reference.StaleCapacity(initial)
    fast = batched.StaleCapacity(initial)
    exact_state = exact.initial_state()
    fast_state = fast.initial_state(torch.device(DEVICE))
    table_t = batched.sps_table(sps, len(table), DEVICE)
    for rows in rounds:
        blocks = [DraftBlock((0,) * gamma, ((Fraction(1),),) * gamma, tuple(row)) for row in rows]
        want, exact_state = exact.schedule_blocks(blocks, sps, exact_state)
        got, fast_state = fast(as_tensor(rows), table_t, fast_state)
        assert got.tolist() == want


def test_appendix_a_global_search_looks_ahead_and_algorithm1_does_not():
    sps = batched.sps_table(reference.appendix_a().sps, 3)
    after_a = torch.tensor([[0.8, 0.9]], dtype=torch.float64)
    after_b = torch.tensor([[0.8, 0.0]], dtype=torch.float64)
    assert batched.GlobalSearch()(after_a, sps, None)[0].tolist() == [2]
    assert batched.GlobalSearch()(after_b, sps, None)[0].tolist() == [0]
    assert batched.Algorithm1()(after_a, sps, None)[0].tolist() == [0]


def test_position_ties_keep_prefixes():
    """Saturated confidences (c = 1) tie; ties go by position, so prefixes are kept."""
    ones = torch.ones(2, 4, dtype=torch.float64)
    lengths, _ = batched.FixedTopK(3)(ones, None, None)
    assert lengths.tolist() == [2, 1]
