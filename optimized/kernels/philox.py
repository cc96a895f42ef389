# mypy: disable-error-code="no-untyped-def"
"""The Triton side of the address -> Philox counter layout, and a kernel that exposes it.

Layout (documented in :mod:`specproof.reference.philox`): key = seed, counter =
(4 * index + phase, request, high and low words of round * 2^32 + offset); uniform =
(first word >> 8) * 2^-24. ``offset`` is 64-bit.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import philox as _host

# Compiled kernels read globals only as constexpr values.
UNIFORM_SCALE = tl.constexpr(1.0 / 16777216.0)
DRAFT = tl.constexpr(_host.DRAFT)
ACCEPT = tl.constexpr(_host.ACCEPT)
RESIDUAL = tl.constexpr(_host.RESIDUAL)
BONUS = tl.constexpr(_host.BONUS)


@triton.jit
def address_uniform(seed, phase, index, request, round, offset):
    """The float32 uniform of one address (or a block of them)."""
    slot = (index * 4 + phase).to(tl.uint32)
    wide = offset.to(tl.uint64)  # 64 bits, zero-extended from a 32-bit word; int64 bits kept
    high = round.to(tl.uint32) + (wide >> 32).to(tl.uint32)  # round * 2^32 + offset, high word
    word, _, _, _ = tl.philox(seed, slot, request.to(tl.uint32), high, wide.to(tl.uint32))
    return (word >> 8).to(tl.float32) * UNIFORM_SCALE


# Philox words are never compile-time constants (a word equal to 1 would be one).
@triton.jit(do_not_specialize=["seed", "phase", "round", "offset"])
def _uniforms_kernel(
    out_ptr, index_ptr, request_ptr, n, seed, phase, round, offset, BLOCK: tl.constexpr
):
    lanes = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = lanes < n
    index = tl.load(index_ptr + lanes, mask=live, other=0)
    request = tl.load(request_ptr + lanes, mask=live, other=0)
    u = address_uniform(seed, phase, index, request, round + index * 0, offset + index * 0)
    tl.store(out_ptr + lanes, u, mask=live)


def address_uniforms_triton(
    seed: int, phase: int, index: torch.Tensor, request: torch.Tensor, round: int, offset: int
) -> torch.Tensor:
    """float32 uniforms of the addresses (round, request[i], phase, index[i]) from the kernel."""
    index, request = torch.broadcast_tensors(index.to(torch.int64), request.to(torch.int64))
    index, request = index.contiguous().view(-1), request.contiguous().view(-1)
    out = torch.empty(index.shape, dtype=torch.float32, device=index.device)
    if index.numel():
        block = 1024
        grid = (triton.cdiv(index.numel(), block),)
        _uniforms_kernel[grid](
            out, index, request, index.numel(), seed, phase, round, offset, BLOCK=block
        )
    return out
