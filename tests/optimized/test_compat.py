"""The FlashInfer and vLLM drop-ins: documented examples, structure, and agreement with the
reference chain rule."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch
from optimized_support import DEVICE, as_fractions, draw_from, dyadic_dist, reference_chain
from specproof.optimized import InvalidInputError
from specproof.optimized.compat import chain_speculative_sampling, rejection_sample


def test_flashinfer_docstring_example() -> None:
    draft = torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.1]]], device=DEVICE)
    ids = torch.tensor([[2, 1]], dtype=torch.int32, device=DEVICE)
    target = torch.tensor([[[0, 0.1, 0.6, 0.3], [1, 0, 0, 0], [0.7, 0.1, 0.1, 0.1]]], device=DEVICE)
    out, accepted, emitted = chain_speculative_sampling(draft, ids, target, seed=42)
    assert out.tolist() == [[2, 0, -1]]
    assert out.dtype == torch.int32
    assert accepted.tolist() == [1]
    assert emitted.tolist() == [1]


def test_flashinfer_counters_are_added_in_place() -> None:
    draft = torch.tensor([[[0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.1]]], device=DEVICE)
    ids = torch.tensor([[2, 1]], dtype=torch.int32, device=DEVICE)
    target = torch.tensor([[[0, 0.1, 0.6, 0.3], [1, 0, 0, 0], [0.7, 0.1, 0.1, 0.1]]], device=DEVICE)
    accepted = torch.tensor([5], dtype=torch.int32, device=DEVICE)
    emitted = torch.tensor([7], dtype=torch.int32, device=DEVICE)
    _, a, e = chain_speculative_sampling(draft, ids, target, accepted, emitted, seed=1)
    assert a is accepted and e is emitted
    assert accepted.tolist() == [6] and emitted.tolist() == [8]


def test_flashinfer_is_reproducible_and_generator_driven() -> None:
    rng = random.Random(5)
    vocab, n = 8, 3
    draft = torch.full((4, n, vocab), 1 / vocab)
    target = torch.tensor([[[m / 256 for m in dyadic_dist(rng, vocab)] for _ in range(n + 1)]] * 4)
    ids = torch.tensor([[1, 2, 3]] * 4, dtype=torch.int32)
    first = chain_speculative_sampling(draft, ids, target, seed=9, offset=3)
    again = chain_speculative_sampling(draft, ids, target, seed=9, offset=3)
    assert all(torch.equal(x, y) for x, y in zip(first, again, strict=True))
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    from_gen = chain_speculative_sampling(draft, ids, target, generator=g1)
    from_gen_again = chain_speculative_sampling(draft, ids, target, generator=g2)
    assert torch.equal(from_gen[0], from_gen_again[0])


def vllm_case(rng: random.Random, lengths: list[int], vocab: int, with_draft: bool) -> dict:
    target = [dyadic_dist(rng, vocab) for _ in range(sum(lengths))]
    draft = [dyadic_dist(rng, vocab) for _ in range(sum(lengths))]
    tokens = [draw_from(rng, q) if with_draft else rng.randrange(vocab) for q in draft]
    return {"target": target, "draft": draft, "tokens": tokens}


@pytest.mark.parametrize("with_draft", [True, False])
@pytest.mark.parametrize("data_seed", range(4))
def test_vllm_ragged_matches_reference(with_draft: bool, data_seed: int) -> None:
    rng = random.Random(data_seed)
    lengths = [3, 0, 1, 2]
    vocab, max_spec_len, seed = 5, 3, 1000 + data_seed
    case = vllm_case(rng, lengths, vocab, with_draft)
    bonus = torch.tensor([[1 + r] for r in range(len(lengths))], device=DEVICE)  # never 0
    out = rejection_sample(
        torch.tensor(case["tokens"], dtype=torch.int32, device=DEVICE),
        lengths,
        max_spec_len,
        torch.tensor(lengths, device=DEVICE).cumsum(0).to(torch.int32),
        torch.tensor(case["draft"], device=DEVICE) / 256 if with_draft else None,
        torch.tensor(case["target"], device=DEVICE) / 256,
        bonus,
        SimpleNamespace(all_greedy=False, all_random=True, temperature=None),
        seed=seed,
    )
    assert out.dtype == torch.int32 and out.shape == (4, max_spec_len + 1)
    start = 0
    for r, length in enumerate(lengths):
        rows = slice(start, start + length)
        start += length
        p_rows = [as_fractions(p) for p in case["target"][rows]]
        if with_draft:
            q_rows = [as_fractions(q) for q in case["draft"][rows]]
        else:
            q_rows = [
                tuple(as_fractions([256 * (v == x) for v in range(vocab)]))
                for x in case["tokens"][rows]
            ]
        bonus_row = as_fractions([256] + [0] * (vocab - 1))
        want = list(
            reference_chain(
                [*p_rows, bonus_row], q_rows, case["tokens"][rows], seed=seed, round=0, request=r
            )
        )
        if len(want) == length + 1:
            want[-1] = 1 + r
        got = [t for t in out[r].tolist() if t != -1]
        assert got == want
        assert out[r, len(want) :].eq(-1).all()


def test_vllm_greedy_rows() -> None:
    target = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], device=DEVICE)
    tokens = torch.tensor([1, 1, 1], dtype=torch.int32, device=DEVICE)
    out = rejection_sample(
        tokens,
        [2, 1],
        2,
        torch.tensor([2, 3], dtype=torch.int32, device=DEVICE),
        None,
        target,
        torch.tensor([[0], [1]], device=DEVICE),
        SimpleNamespace(
            all_greedy=False, all_random=False, temperature=torch.tensor([-1.0, 0.0], device=DEVICE)
        ),
        seed=0,
    )
    assert out.tolist() == [[1, 0, -1], [1, 1, -1]]  # row 1 ends with its bonus token


def test_vllm_rejects_inconsistent_cumsum() -> None:
    with pytest.raises(InvalidInputError, match="cumsum"):
        rejection_sample(
            torch.tensor([0, 1], dtype=torch.int32),
            [1, 1],
            1,
            torch.tensor([1, 3], dtype=torch.int32),
            None,
            torch.full((2, 2), 0.5),
            torch.tensor([[0], [1]]),
            SimpleNamespace(all_greedy=True),
            seed=0,
        )
