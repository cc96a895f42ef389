"""The batched decoder against ``specproof.reference.sample`` with the same Philox seed."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, backends, examples
from specproof.optimized import schedulers as batched
from specproof.optimized.decoder import BatchedDecoder
from specproof.optimized.sampling import sample_draft_tokens
from specproof.reference.generators import random_drafter, random_target
from specproof.reference.philox import PhiloxSource

from specproof import reference

DENOMINATOR = 16  # dyadic tables: float32 holds every probability and partial sum exactly


def context_index(tokens: torch.Tensor, ends: torch.Tensor, order: int, vocab: int) -> torch.Tensor:
    """The n-gram table row of the last ``order`` tokens before ``ends`` (mixed radix)."""
    index = torch.zeros_like(ends)
    for i in range(order):
        index = index * vocab + tokens.gather(1, (ends - order + i)[:, None])[:, 0]
    return index


def tensor_models(target: reference.TargetModel, drafter: reference.Drafter, gamma: int):
    """Tensor adapters of the reference's tabular models (order-1 target and drafter)."""
    vocab, order = target.vocab_size, target.order
    contexts = list(itertools.product(range(vocab), repeat=order))
    p_table = torch.tensor([[float(m) for m in target.dist(c)] for c in contexts], device=DEVICE)
    # drafter rows keyed by (context, k, previous draft token; index vocab for "none")
    q_table = torch.zeros(len(contexts), gamma + 1, vocab + 1, vocab, device=DEVICE)
    c_table = torch.zeros(len(contexts), gamma + 1, vocab + 1, dtype=torch.float64, device=DEVICE)
    for ci, context in enumerate(contexts):
        for k in range(1, gamma + 1):
            previous = [None] if k == 1 else list(range(vocab))
            for prev in previous:
                drafted = () if prev is None else (0,) * (k - 2) + (prev,)
                slot = vocab if prev is None else prev
                q_table[ci, k, slot] = torch.tensor(
                    [float(m) for m in drafter.proposal(context, drafted)]
                )
                c_table[ci, k, slot] = float(drafter.confidence(context, drafted))

    def target_fn(tokens: torch.Tensor, lengths: torch.Tensor, positions: int) -> torch.Tensor:
        rows = [
            p_table[context_index(tokens, lengths - positions + 1 + j, order, vocab)]
            for j in range(positions)
        ]
        return torch.stack(rows, dim=1)

    def drafter_fn(tokens: torch.Tensor, context_lengths: torch.Tensor, drafted: int):
        ci = context_index(tokens, context_lengths, order, vocab)
        k = drafted + 1
        if drafted == 0:
            slot = torch.full_like(ci, vocab)
        else:
            slot = tokens.gather(1, (context_lengths + drafted - 1)[:, None])[:, 0]
        return q_table[ci, k, slot], c_table[ci, k, slot]

    return target_fn, drafter_fn


SCHEDULERS = {
    "algorithm1": (reference.Algorithm1, batched.Algorithm1),
    "fixed-gamma": (reference.FixedGamma, batched.FixedGamma),
    "top-2": (lambda: reference.FixedTopK(2), lambda: batched.FixedTopK(2)),
    "stale": (lambda: reference.StaleCapacity(1), lambda: batched.StaleCapacity(1)),
    "threshold": (
        lambda: reference.StaticThreshold(Fraction(1, 4)),
        lambda: batched.StaticThreshold(0.25),
    ),
    "global-search": (reference.GlobalSearch, batched.GlobalSearch),
}


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("scheduler", list(SCHEDULERS))
@examples(4)
@given(
    model_seed=st.integers(0, 2**31),
    seed=st.integers(0, 2**63),
    vocab=st.integers(2, 4),
    gamma=st.integers(0, 3),
    requests=st.integers(1, 3),
    offset=st.sampled_from([3, 2**32 + 3, 2**64 - 2]),  # 64-bit: past 2^32, and a wrap
)
def test_decoder_emits_the_reference_tokens(
    backend, scheduler, model_seed, seed, vocab, gamma, requests, offset
):
    rng = random.Random(model_seed)
    target = random_target(rng, vocab, 1, denominator=DENOMINATOR)
    drafter = random_drafter(rng, vocab, 1, max(gamma, 1), denominator=DENOMINATOR)
    sps = reference.table_sps({b: Fraction(1, b) + Fraction(1, 2) for b in range(1, 64)})
    prompts = [(rng.randrange(vocab),) for _ in range(requests)]
    make_reference, make_batched = SCHEDULERS[scheduler]
    exact = reference.SpeculativeDecoder(
        target, drafter, reference.ChainRule(), make_reference(), gamma, sps
    )
    want = reference.sample(exact, prompts, 5, source=PhiloxSource(seed, offset))
    target_fn, drafter_fn = tensor_models(target, drafter, max(gamma, 1))
    fast = BatchedDecoder(
        target_fn,
        drafter_fn,
        make_batched(),
        gamma,
        sps=batched.sps_table(sps, 63, DEVICE),
        backend=backend,
    )
    got = fast.generate(prompts, 5, seed=seed, offset=offset, device=DEVICE)
    assert [tuple(row) for row in got.tolist()] == list(want)


@pytest.mark.parametrize("scheduler", ["algorithm1", "global-search"])
def test_sps_table_on_the_cpu_while_decoding_on_another_device(scheduler: str) -> None:
    """Regression (seen on an H200): an SPS table built on the CPU, as ``sps_table`` does by
    default, was indexed with the decoding device's tensors inside Algorithm 1's walk. The
    decoder now keeps one copy of the table per decoding device."""
    rng = random.Random(5)
    target = random_target(rng, 3, 1, denominator=DENOMINATOR)
    drafter = random_drafter(rng, 3, 1, 2, denominator=DENOMINATOR)
    sps = reference.table_sps({b: Fraction(1, b) + Fraction(1, 2) for b in range(1, 64)})
    make_reference, make_batched = SCHEDULERS[scheduler]
    exact = reference.SpeculativeDecoder(
        target, drafter, reference.ChainRule(), make_reference(), 2, sps
    )
    prompts = [(0,), (2,)]
    want = reference.sample(exact, prompts, 4, source=PhiloxSource(11, 0))
    target_fn, drafter_fn = tensor_models(target, drafter, 2)
    table = batched.sps_table(sps, 63, torch.device("cpu"))
    fast = BatchedDecoder(target_fn, drafter_fn, make_batched(), 2, sps=table)
    got = fast.generate(prompts, 4, seed=11, device=DEVICE)
    assert [tuple(row) for row in got.tolist()] == list(want)
    assert fast.sps is table  # the caller's table is left where it was
    # The copy itself, observable without a GPU: one per device, made once.
    elsewhere = fast.sps_on(torch.device("meta"))
    assert elsewhere is not None and elsewhere.device.type == "meta"
    assert fast.sps_on(torch.device("meta")) is elsewhere
    assert fast.sps_on(torch.device("cpu")) is table


@pytest.mark.parametrize("backend", backends())
@examples(8)
@given(seed=st.integers(0, 2**32 - 1), vocab=st.sampled_from([1, 3, 50]), index=st.integers(1, 5))
def test_draft_sampling_is_the_reference_inverse_cdf(backend, seed, vocab, index):
    rng = random.Random(seed)
    rows = []
    for _ in range(4):
        cuts = sorted(rng.randint(0, 256) for _ in range(vocab - 1))
        edges = [0, *cuts, 256]
        rows.append([edges[i + 1] - edges[i] for i in range(vocab)])
    scores = torch.tensor(rows, dtype=torch.float32, device=DEVICE) / 256
    requests = torch.tensor([0, 5, 9, 2], device=DEVICE)
    got = sample_draft_tokens(
        scores, seed=seed, index=index, round=2, request_ids=requests, backend=backend
    )
    source = PhiloxSource(seed)
    want = [
        reference.inverse_cdf(
            [Fraction(m, 256) for m in row],
            source.uniform(reference.Address(2, int(r), "draft", index)),
        )
        for row, r in zip(rows, requests.tolist(), strict=True)
    ]
    assert got.tolist() == want
