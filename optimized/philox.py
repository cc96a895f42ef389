"""Philox4x32-10 in torch integer ops, bit-identical to ``tl.philox`` and to
:mod:`specproof.reference.philox` (the layout of counters is documented there).

Every 32-bit word is held in an int64 tensor; products with the 32-bit round constants are
split into 16-bit halves so that no intermediate leaves the int64 range on any device. On the
CPU the same rounds run in numpy's uint64 instead, where a 32 x 32-bit product is exact: about
a tenth of the operations, each without torch's per-operation overhead (a verification step of
one request spends most of its Philox time in that overhead).
"""

from __future__ import annotations

import numpy as np
import torch
from specproof.reference.philox import (
    N_ROUNDS,
    PHASE_CODES,
    PHILOX_KEY_A,
    PHILOX_KEY_B,
    PHILOX_ROUND_A,
    PHILOX_ROUND_B,
    UNIFORM_BITS,
)

MASK32 = 0xFFFFFFFF
MASK16 = 0xFFFF

DRAFT, ACCEPT, RESIDUAL, BONUS = (
    PHASE_CODES["draft"],
    PHASE_CODES["accept"],
    PHASE_CODES["residual"],
    PHASE_CODES["bonus"],
)


def _mul_hi_lo(constant: int, word: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit halves of constant * word, for 32-bit values in int64 tensors."""
    low_part = word * (constant & MASK16)  # < 2^48
    high_part = word * (constant >> 16)  # < 2^48
    low = ((high_part & MASK16) << 16) + low_part
    high = (high_part >> 16) + (low >> 32)
    return high & MASK32, low & MASK32


Words = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def philox4x32(
    seed: int | torch.Tensor,
    c0: torch.Tensor,
    c1: torch.Tensor,
    c2: torch.Tensor,
    c3: torch.Tensor,
    n_rounds: int = N_ROUNDS,
) -> Words:
    """Philox4x32 on broadcastable int64 counter tensors; returns four int64 tensors of words.
    ``seed`` is one 64-bit key, or an int64 tensor of keys (their bits) broadcast with the
    counters. CPU tensors go through :func:`philox4x32_numpy`, others through
    :func:`philox4x32_torch` (the same words)."""
    tensors = [c0, c1, c2, c3] + ([seed] if isinstance(seed, torch.Tensor) else [])
    if all(t.device.type == "cpu" for t in tensors):
        return philox4x32_numpy(seed, c0, c1, c2, c3, n_rounds=n_rounds)
    return philox4x32_torch(seed, c0, c1, c2, c3, n_rounds=n_rounds)


def philox4x32_numpy(
    seed: int | torch.Tensor, *counters: torch.Tensor, n_rounds: int = N_ROUNDS
) -> Words:
    """:func:`philox4x32` for CPU tensors (four counters), in numpy uint64 (an int64's bits
    read unsigned)."""
    x0, x1, x2, x3 = (uint64_words(c) for c in counters)
    words = philox_rounds_numpy(uint64_words(seed), x0, x1, x2, x3, n_rounds)
    out = [torch.from_numpy(w.astype(np.int64)) for w in words]
    return out[0], out[1], out[2], out[3]


def uint64_words(value: int | torch.Tensor) -> np.ndarray:
    """A 64-bit word, or a CPU tensor of them, as numpy uint64 (an int64's bits unsigned)."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.int64).numpy().view(np.uint64)
    return np.asarray(value & ((1 << 64) - 1), dtype=np.uint64)


def philox_rounds_numpy(
    key: np.ndarray,
    x0: np.ndarray,
    x1: np.ndarray,
    x2: np.ndarray,
    x3: np.ndarray,
    n_rounds: int = N_ROUNDS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Philox4x32 on broadcastable uint64 arrays: the 64-bit ``key`` and the four counter
    words (their low 32 bits); returns the four output words, contiguous, in uint64."""
    mask, shift = np.uint64(MASK32), np.uint64(32)
    k0, k1 = key & mask, key >> shift
    # Full-shape contiguous words (the key's shape included): numpy is several times slower
    # on broadcast (zero-stride) operands, and the in-place updates need the full shape.
    shape = np.broadcast_shapes(key.shape, x0.shape, x1.shape, x2.shape, x3.shape)
    x0, x1, x2, x3 = (np.broadcast_to(x, shape) & mask for x in (x0, x1, x2, x3))
    round_a, round_b = np.uint64(PHILOX_ROUND_A), np.uint64(PHILOX_ROUND_B)
    key_a, key_b = np.uint64(PHILOX_KEY_A), np.uint64(PHILOX_KEY_B)
    for _ in range(n_rounds):
        product_b, product_a = x2 * round_b, x0 * round_a  # < 2^64: exact
        x0 = product_b >> shift
        x0 ^= x1
        x0 ^= k0
        x2 = product_a >> shift
        x2 ^= x3
        x2 ^= k1
        x1, x3 = product_b, product_a
        x1 &= mask
        x3 &= mask
        k0, k1 = (k0 + key_a) & mask, (k1 + key_b) & mask
    return x0, x1, x2, x3


def philox4x32_torch(
    seed: int | torch.Tensor, *counters: torch.Tensor, n_rounds: int = N_ROUNDS
) -> Words:
    """:func:`philox4x32` (four counters) in torch int64 operations, on any device."""
    c0, c1, c2, c3 = counters
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    c0, c1, c2, c3 = torch.broadcast_tensors(
        *(c.to(torch.int64) & MASK32 for c in (c0, c1, c2, c3))
    )
    for _ in range(n_rounds):
        high_b, low_b = _mul_hi_lo(PHILOX_ROUND_B, c2)
        high_a, low_a = _mul_hi_lo(PHILOX_ROUND_A, c0)
        c0, c1, c2, c3 = high_b ^ c1 ^ k0, low_b, high_a ^ c3 ^ k1, low_a
        k0 = (k0 + PHILOX_KEY_A) & MASK32
        k1 = (k1 + PHILOX_KEY_B) & MASK32
    return c0, c1, c2, c3


def int64_bits(value: int | torch.Tensor) -> int | torch.Tensor:
    """A 64-bit word as int64 holds it: integers >= 2^63 become value - 2^64 (same bits)."""
    if isinstance(value, torch.Tensor):
        return value
    return value - (1 << 64) if value >= 1 << 63 else value


def position_words(round: torch.Tensor, offset: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Counter words 2 and 3: the 64-bit position round * 2^32 + offset (mod 2^64), from int64
    tensors (``offset`` holding a uint64's bits). The high word is round + offset's high word
    (an arithmetic shift of a negative int64 is that word minus 2^32: equal mod 2^32)."""
    return round + (offset >> 32), offset


def address_uniforms(
    seed: int | torch.Tensor,
    phase: int,
    index: torch.Tensor,
    request: torch.Tensor,
    round: int | torch.Tensor,
    offset: int | torch.Tensor,
) -> torch.Tensor:
    """float32 uniforms of the addresses (round, request, phase, index), broadcast together
    (with ``seed`` and ``offset`` when they are tensors); ``offset`` is 64-bit."""
    slot = index.to(torch.int64) * 4 + phase
    device = slot.device
    round_t = torch.as_tensor(round, dtype=torch.int64, device=device)
    offset_t = torch.as_tensor(int64_bits(offset), dtype=torch.int64, device=device)
    high, low = position_words(round_t, offset_t)
    word, _, _, _ = philox4x32(seed, slot, request.to(torch.int64), high, low)
    return (word >> (32 - UNIFORM_BITS)).to(torch.float32) * (2.0**-UNIFORM_BITS)
