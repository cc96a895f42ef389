"""Philox4x32-10 in torch integer ops, bit-identical to ``tl.philox`` and to
:mod:`specproof.reference.philox` (the layout of counters is documented there).

Every 32-bit word is held in an int64 tensor; products with the 32-bit round constants are
split into 16-bit halves so that no intermediate leaves the int64 range on any device.
"""

from __future__ import annotations

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


def philox4x32(
    seed: int | torch.Tensor,
    c0: torch.Tensor,
    c1: torch.Tensor,
    c2: torch.Tensor,
    c3: torch.Tensor,
    n_rounds: int = N_ROUNDS,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Philox4x32 on broadcastable int64 counter tensors; returns four int64 tensors of words.
    ``seed`` is one 64-bit key, or an int64 tensor of keys (their bits) broadcast with the
    counters."""
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
