"""The Philox stream: the reference's pure-Python generator, the torch one and Triton's agree
bit for bit, and all three match the published Philox4x32-10 answers."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, examples
from specproof.optimized import philox as torch_philox
from specproof.optimized.kernels.philox import address_uniforms_triton
from specproof.reference import Address
from specproof.reference.philox import (
    PHASE_CODES,
    PhiloxSource,
    counter_of,
    philox4x32,
    randint,
    triton_rand,
    word_to_uniform,
)

# Random123's known-answer vectors for Philox4x32-10: (counter, key) -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


# Both torch-side implementations, each run on the CPU here: philox4x32 picks numpy's on the
# CPU and the torch one elsewhere, so a GPU-less run still checks the GPU path's arithmetic.
IMPLEMENTATIONS = {
    "numpy": torch_philox.philox4x32_numpy,
    "torch": torch_philox.philox4x32_torch,
}


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
@pytest.mark.parametrize(("counter", "key", "expected"), KNOWN_ANSWERS)
def test_known_answers(counter, key, expected, implementation):
    seed = key[0] | key[1] << 32
    assert philox4x32(seed, *counter) == expected
    words = IMPLEMENTATIONS[implementation](seed, *(torch.tensor([c]) for c in counter))
    assert tuple(int(w) for w in words) == expected
    words = torch_philox.philox4x32(seed, *(torch.tensor([c], device=DEVICE) for c in counter))
    assert tuple(int(w) for w in words) == expected


@triton.jit
def _triton_stream(ints_ptr, floats_ptr, seed, base, N: tl.constexpr):
    lanes = tl.arange(0, N)
    offsets = base + lanes
    tl.store(ints_ptr + lanes, tl.randint(seed, offsets).to(tl.int64))
    tl.store(floats_ptr + lanes, tl.rand(seed, offsets))


@examples(10)
@given(seed=st.integers(0, 2**64 - 1), base=st.integers(0, 2**31 - 64))
def test_reference_replays_triton_randint_and_rand(seed, base):
    ints = torch.empty(64, dtype=torch.int64, device=DEVICE)
    floats = torch.empty(64, dtype=torch.float32, device=DEVICE)
    _triton_stream[(1,)](ints, floats, seed, base, N=64)
    assert [int(w) & 0xFFFFFFFF for w in ints.tolist()] == [
        randint(seed, base + i) for i in range(64)
    ]
    assert floats.tolist() == [triton_rand(seed, base + i) for i in range(64)]


words = st.integers(0, 2**32 - 1)


@examples(30)
@given(
    seed=st.integers(0, 2**64 - 1),
    counters=st.lists(st.tuples(words, words, words, words), min_size=1, max_size=16),
)
def test_torch_philox_is_bit_identical(seed, counters):
    want = [philox4x32(seed, *c) for c in counters]
    columns = [torch.tensor([c[i] for c in counters]) for i in range(4)]
    for implementation in IMPLEMENTATIONS.values():
        got = implementation(seed, *columns)
        assert [tuple(int(w[i]) for w in got) for i in range(len(counters))] == want
    columns = [column.to(DEVICE) for column in columns]
    got = torch_philox.philox4x32(seed, *columns)
    assert [tuple(int(w[i]) for w in got) for i in range(len(counters))] == want


@examples(20)
@given(
    keys=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6),
    counters=st.lists(st.tuples(words, words, words, words), min_size=1, max_size=5),
)
def test_per_request_keys_broadcast_alike(keys, counters):
    """A column of int64 keys (their bits: negative ones too) broadcast against a row of
    counters, as round_uniforms passes per-request streams: both implementations agree with
    the reference at every (key, counter)."""
    seed = torch.tensor(keys)[:, None]
    columns = [torch.tensor([c[i] for c in counters])[None, :] for i in range(4)]
    want = [[philox4x32(key % 2**64, *c) for c in counters] for key in keys]
    for implementation in IMPLEMENTATIONS.values():
        got = implementation(seed, *columns)
        assert got[0].shape == (len(keys), len(counters))
        assert [
            [tuple(int(w[r, i]) for w in got) for i in range(len(counters))]
            for r in range(len(keys))
        ] == want


@pytest.mark.parametrize("phase", sorted(PHASE_CODES))
@examples(8)
@given(
    seed=st.integers(0, 2**64 - 1),
    round=words,
    offset=words,
    requests=st.lists(words, min_size=1, max_size=8),
    index=st.integers(0, 2**30 - 1),
)
def test_address_uniforms_agree_everywhere(phase, seed, round, offset, requests, index):
    """PhiloxSource, the torch backend and the Triton kernels draw the same float32 uniform."""
    source = PhiloxSource(seed, offset)
    want = [source.uniform(Address(round, r, phase, index)) for r in requests]
    request_t = torch.tensor(requests, device=DEVICE)
    index_t = torch.full_like(request_t, index)
    code = PHASE_CODES[phase]
    from_torch = torch_philox.address_uniforms(seed, code, index_t, request_t, round, offset)
    from_triton = address_uniforms_triton(seed, code, index_t, request_t, round, offset)
    assert [float(u) for u in want] == from_torch.tolist() == from_triton.tolist()


def test_uniforms_are_exact_float32_values_in_the_unit_interval():
    assert word_to_uniform(0) == 0
    assert word_to_uniform(0xFFFFFFFF) == 1 - torch.finfo(torch.float32).eps / 2
    assert float(word_to_uniform(0xFFFFFFFF)) == torch.tensor(1 - 2**-24).item()


def test_counter_layout_is_stable():
    assert counter_of(Address(5, 7, "residual", 3), offset=9) == (4 * 3 + 2, 7, 5, 9)
    with pytest.raises(ValueError, match="no Philox slot"):
        counter_of(Address(0, 0, "draft-chain1", 1))
    with pytest.raises(ValueError, match="32-bit"):
        counter_of(Address(2**32, 0, "accept", 1))
