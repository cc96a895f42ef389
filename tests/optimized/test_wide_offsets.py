"""64-bit Philox offsets, as FlashInfer takes them (uint64 per row; its test
``test_repeated_request_rng_replays_same_draw`` passes offset = 2^32): the counter's last two
words hold the 64-bit position round * 2^32 + offset, on both backends, in the Triton kernel and
in the reference's replay. Offsets below 2^32 keep the counter they had."""

from __future__ import annotations

import random

import pytest
import torch
from optimized_support import DEVICE, as_tensor, backends, emitted
from specproof.optimized import philox as torch_philox
from specproof.optimized.compat import chain_speculative_sampling
from specproof.optimized.kernels.philox import address_uniforms_triton
from specproof.reference import Address
from specproof.reference.philox import PhiloxSource, counter_of
from test_row_streams import chain_case, replay, run

WIDE = [2**32, 2**32 + 5, 2**63 + 7, 2**64 - 1]
"""Offsets at and past 2^32, past 2^63 (a uint64 whose int64 bits are negative) and the last."""


def bits(value: int) -> int:
    """The int64 holding the 64 bits of ``value``."""
    return value - (1 << 64) if value >= 1 << 63 else value


def test_counter_words_by_hand() -> None:
    """Address (round 3, request 5, accept, index 2): slot 4 * 2 + 1 = 9. Below 2^32 the words
    are (9, 5, 3, offset); at 2^32 + 9 the position 3 * 2^32 + 2^32 + 9 has words (4, 9); at
    2^64 - 1 and round 1 it wraps to 2^32 - 1: words (0, 2^32 - 1)."""
    address = Address(3, 5, "accept", 2)
    assert counter_of(address, 7) == (9, 5, 3, 7)
    assert counter_of(address, 2**32 + 9) == (9, 5, 4, 9)
    assert counter_of(Address(1, 5, "accept", 2), 2**64 - 1) == (9, 5, 0, 2**32 - 1)
    assert counter_of(Address(0, 5, "accept", 2), 2**64 - 1) == (9, 5, 2**32 - 1, 2**32 - 1)
    with pytest.raises(ValueError, match=r"\[0, 2\^64\)"):
        PhiloxSource(1, 2**64)
    with pytest.raises(ValueError, match=r"\[0, 2\^64\)"):
        PhiloxSource(1, -1)
    assert PhiloxSource(1, 2**32).offset == 2**32  # refused before: "[0, 2^32)"


@pytest.mark.parametrize("offset", WIDE)
@pytest.mark.parametrize("round", [0, 3])
def test_torch_and_triton_uniforms_replay_the_reference(offset: int, round: int) -> None:
    """Both as an integer and as an int64 tensor of its bits; Triton (under TRITON_INTERPRET=1
    on a CPU) with the integer, typed uint64 by the launcher past 2^63."""
    seed = 2**63 + 12345
    index = torch.arange(1, 6, device=DEVICE)
    request = torch.tensor([0, 1, 2, 7, 2**31], device=DEVICE)
    source = PhiloxSource(seed, offset)
    want = [
        float(source.uniform(Address(round, int(r), "accept", int(i))))
        for i, r in zip(index.tolist(), request.tolist(), strict=True)
    ]
    from_int = torch_philox.address_uniforms(seed, 1, index, request, round, offset)
    wide = torch.tensor(bits(offset), dtype=torch.int64, device=DEVICE)
    from_tensor = torch_philox.address_uniforms(bits(seed), 1, index, request, round, wide)
    from_triton = address_uniforms_triton(seed, 1, index, request, round, offset)
    assert from_int.tolist() == want
    assert from_tensor.tolist() == want
    assert from_triton.tolist() == want


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_per_request_wide_offsets_replay_the_reference(backend: str, dtype: torch.dtype) -> None:
    """Regression: offsets >= 2^32 per request were refused ("offset must lie in [0, 2^32)")."""
    case = chain_case(random.Random(11), batch=5, n=3, vocab=5)
    offsets = [*WIDE, 9]
    keys = [2**63 + 3, 17, 2**64 - 2, 5, 99]
    seed = torch.tensor([bits(k) for k in keys], device=DEVICE).view(dtype)
    offset = torch.tensor([bits(o) for o in offsets], device=DEVICE).view(dtype)
    out = run(case, backend, seed=seed, offset=offset, round=2)
    for b in range(5):
        assert emitted(out)[b] == replay(case, b, keys[b], offsets[b], round=2)


@pytest.mark.parametrize("backend", backends())
def test_a_wide_integer_offset_is_the_call_wide_stream(backend: str) -> None:
    case = chain_case(random.Random(12), batch=3, n=2, vocab=4)
    for offset in (2**32 + 1, 2**63 + 7):
        out = run(case, backend, seed=41, offset=offset, round=1)
        for b in range(3):
            assert emitted(out)[b] == replay(case, b, 41, offset, round=1, request=b)


def test_repeated_request_at_offset_two_to_the_32_replays_its_draw() -> None:
    """FlashInfer's drop-in, as FlashInfer's own test calls it: one request twice in a batch
    with uint64 seed and offset = 2^32 per row, and again in a second call: the same draw each
    time, the reference's at (seed, 2^32), request word 0."""
    case = chain_case(random.Random(13), batch=1, n=3, vocab=8)
    target = as_tensor(case["target"] * 2, 8)
    draft = as_tensor(case["draft"] * 2, 8)
    tokens = torch.tensor(case["tokens"] * 2, device=DEVICE)
    seed = torch.tensor([1234, 1234], dtype=torch.uint64, device=DEVICE)
    offset = torch.tensor([2**32, 2**32], dtype=torch.uint64, device=DEVICE)

    def call() -> list[tuple[int, ...]]:
        out, _, _ = chain_speculative_sampling(draft, tokens, target, seed=seed, offset=offset)
        return emitted(out)

    first = call()
    assert first[0] == first[1] == call()[0]
    assert first[0] == replay(case, 0, 1234, 2**32)


@pytest.mark.parametrize("backend", backends())
def test_the_decoder_replays_the_reference_at_a_wrapping_offset(backend: str) -> None:
    """offset = 2^64 - 2: round 0 draws at high word 2^32 - 1, round 1 wraps to high word 0
    (position mod 2^64); the decoder and the reference agree over 5 tokens, several rounds."""
    from fractions import Fraction

    from specproof.optimized import schedulers as batched
    from specproof.optimized.decoder import BatchedDecoder
    from specproof.reference.generators import random_drafter, random_target
    from test_decoder import SCHEDULERS, tensor_models

    from specproof import reference

    rng = random.Random(21)
    target = random_target(rng, 3, 1, denominator=256)
    drafter = random_drafter(rng, 3, 1, 2, denominator=256)
    sps = reference.table_sps({b: Fraction(1, b) + Fraction(1, 2) for b in range(1, 64)})
    prompts = [(0,), (2,)]
    make_reference, make_batched = SCHEDULERS["algorithm1"]
    exact = reference.SpeculativeDecoder(
        target, drafter, reference.ChainRule(), make_reference(), 2, sps
    )
    offset = 2**64 - 2
    want = reference.sample(exact, prompts, 5, source=PhiloxSource(77, offset))
    target_fn, drafter_fn = tensor_models(target, drafter, 2)
    fast = BatchedDecoder(
        target_fn, drafter_fn, make_batched(), 2, sps=batched.sps_table(sps, 63, DEVICE),
        backend=backend,
    )  # fmt: skip
    got = fast.generate(prompts, 5, seed=77, offset=offset, device=DEVICE)
    assert [tuple(row) for row in got.tolist()] == list(want)
