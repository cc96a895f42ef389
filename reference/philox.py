"""Philox4x32-10 in pure Python: the random stream of the optimized kernels, replayed exactly.

The generator is bit-identical to Triton's ``tl.philox`` (and so to ``tl.randint`` /
``tl.rand``, which are ``tl.philox`` with counter words 1..3 set to zero). The optimized
package (Triton kernels and torch backend) draws every uniform through the same layout, so
``sample(decoder, prompts, n, source=PhiloxSource(seed))`` emits the tokens the optimized
decoder emits for that seed.

Address -> counter layout (stable; changing it changes every replayed stream)::

    key      = (seed mod 2^32, seed >> 32 mod 2^32)       the 64-bit seed
    counter  = (slot, request, position >> 32, position mod 2^32)     four 32-bit words
    position = (round * 2^32 + offset) mod 2^64           the last two words, one 64-bit word
    slot     = 4 * index + phase code                    draft 0, accept 1, residual 2, bonus 3

and the uniform of an address is the top 24 bits of the first output word scaled by 2^-24:
an exact float32 value in [0, 1 - 2^-24], exactly 0 with probability 2^-24. ``offset`` is
the caller's 64-bit stream offset in [0, 2^64) (it separates independent calls that reuse a
seed and round; FlashInfer's offsets are uint64). Below 2^32 the counter is (slot, request,
round, offset); above, its high word is added to the round word, as if each round held 2^32
offsets: round r at offset o + 2^32 is round r + 1 at offset o.

Per-request streams (a seed and offset per request, as FlashInfer's seed / offset tensors of
length B > 1 and vLLM's seeded requests give) keep this layout with request word 0: request
b's key and offset are its own and its row does not enter the counter, so it is replayed by
``PhiloxSource(seed_b, offset_b)`` at request 0, whatever its row in the batch. A call-wide
seed (an integer, or a length-1 tensor) keeps request word = row.
"""

from __future__ import annotations

import struct
from fractions import Fraction

from .choices import Address

MASK32 = 0xFFFFFFFF
PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57
N_ROUNDS = 10

PHASE_CODES: dict[str, int] = {"draft": 0, "accept": 1, "residual": 2, "bonus": 3}
"""The phase part of a counter slot; the tree rule uses the same phase names."""

UNIFORM_BITS = 24


def philox4x32(
    seed: int, c0: int, c1: int = 0, c2: int = 0, c3: int = 0, n_rounds: int = N_ROUNDS
) -> tuple[int, int, int, int]:
    """Philox4x32 with key = the 64-bit ``seed`` and counter (c0, c1, c2, c3), as ``tl.philox``."""
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    c0, c1, c2, c3 = c0 & MASK32, c1 & MASK32, c2 & MASK32, c3 & MASK32
    for _ in range(n_rounds):
        product_b = PHILOX_ROUND_B * c2
        product_a = PHILOX_ROUND_A * c0
        c0, c1, c2, c3 = (
            (product_b >> 32) ^ c1 ^ k0,
            product_b & MASK32,
            (product_a >> 32) ^ c3 ^ k1,
            product_a & MASK32,
        )
        k0 = (k0 + PHILOX_KEY_A) & MASK32
        k1 = (k1 + PHILOX_KEY_B) & MASK32
    return c0, c1, c2, c3


def randint(seed: int, offset: int) -> int:
    """``tl.randint(seed, offset)`` for a 32-bit offset, as an unsigned 32-bit integer."""
    return philox4x32(seed, offset)[0]


def _float32(value: float) -> float:
    """Round a double to the nearest float32 (ties to even)."""
    rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return rounded


TRITON_RAND_SCALE = _float32(4.6566127342e-10)


def triton_rand(seed: int, offset: int) -> float:
    """``tl.rand(seed, offset)`` exactly: the word as int32, folded (x < 0 -> ~x), times a
    float32 scale, every step rounded to float32."""
    word = randint(seed, offset)
    signed = word - (1 << 32) if word >= 1 << 31 else word
    folded = ~signed if signed < 0 else signed
    return _float32(_float32(float(folded)) * TRITON_RAND_SCALE)


def word_to_uniform(word: int) -> Fraction:
    """The kernels' uniform: the top 24 bits of a 32-bit word, times 2^-24 (exact in float32)."""
    return Fraction(word >> (32 - UNIFORM_BITS), 1 << UNIFORM_BITS)


def counter_of(address: Address, offset: int = 0) -> tuple[int, int, int, int]:
    """The Philox counter words of ``address`` (see the module docstring for the layout)."""
    if address.phase not in PHASE_CODES:
        raise ValueError(
            f"phase {address.phase!r} has no Philox slot; known phases: {sorted(PHASE_CODES)}"
        )
    slot = 4 * address.index + PHASE_CODES[address.phase]
    words = (slot, address.request, address.round)
    if any(not 0 <= w <= MASK32 for w in words) or not 0 <= offset < 1 << 64:
        raise ValueError(
            f"address {address} with offset {offset} does not fit the 32-bit counter words "
            "and the 64-bit offset"
        )
    position = ((address.round << 32) + offset) & ((1 << 64) - 1)
    return slot, address.request, position >> 32, position & MASK32


class PhiloxSource:
    """A :class:`~specproof.reference.choices.UniformSource` that replays the kernels' stream.

    ``uniform(address)`` is the exact value of the float32 uniform the optimized package draws
    for that address with this seed and offset.
    """

    def __init__(self, seed: int, offset: int = 0) -> None:
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be in [0, 2^64), got {seed}")
        if not 0 <= offset < 1 << 64:
            raise ValueError(f"offset must be in [0, 2^64), got {offset}")
        self.seed = seed
        self.offset = offset

    def uniform(self, address: Address) -> Fraction:
        return word_to_uniform(philox4x32(self.seed, *counter_of(address, self.offset))[0])
