# mypy: disable-error-code="no-untyped-def"
"""Draft-token sampling (Triton): one inverse-CDF draw per row from probabilities, or from
logits at a temperature through the row's log-sum-exp; temperature 0 takes the argmax.

The uniform of row b is the Philox uniform of (round, request_ids[b], "draft", index), so the
draw is the reference's ``sample_block`` choice for that address.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .chain_verify import launch_config
from .philox import DRAFT, address_uniform
from .rows import residual_search, residual_total, row_argmax, row_lse


# Philox words are never compile-time constants (a word equal to 1 would be one).
@triton.jit(do_not_specialize=["seed", "round", "offset", "index"])
def _draft_sample_kernel(
    scores_ptr,
    requests_ptr,
    temperature_ptr,
    out_ptr,
    V,
    stride_b,
    seed,
    round,
    offset,
    index,
    IS_LOGITS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    row = scores_ptr + b * stride_b
    request = tl.load(requests_ptr + b).to(tl.int64)
    temperature = tl.load(temperature_ptr + b).to(tl.float32)
    greedy = temperature == 0.0
    temperature = tl.where(greedy, 1.0, temperature)  # greedy rows never scale logits
    if greedy:
        token, _row_bad = row_argmax(row, V, BLOCK)  # rows are checked before the launch
    else:
        row_max = tl.full((), 0.0, tl.float32)
        lse = tl.full((), 0.0, tl.float32)
        if IS_LOGITS:
            row_max, lse = row_lse(row, V, temperature, BLOCK)
        u = address_uniform(seed, DRAFT, index, request, round, offset)
        no_q = tl.full((), 0, tl.int32)
        total, _sum_p, _min_p, _sum_q, _min_q = residual_total(
            row, row, V, 0, IS_LOGITS, 0, no_q, temperature, row_max, lse, row_max, lse, BLOCK
        )
        token = residual_search(
            row,
            row,
            V,
            0,
            IS_LOGITS,
            0,
            no_q,
            temperature,
            row_max,
            lse,
            row_max,
            lse,
            u,
            total,
            BLOCK,
        )
    tl.store(out_ptr + b, token)


def draft_sample_triton(
    scores: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    is_logits: bool,
    seed: int,
    round: int,
    offset: int,
    index: int,
) -> torch.Tensor:
    """Tokens [B] int64 drawn from the rows of ``scores`` [B, V] (checked inputs)."""
    batch, vocab = scores.shape
    out = torch.empty(batch, dtype=torch.int64, device=scores.device)
    if batch:
        scores = scores if scores.stride(-1) == 1 else scores.contiguous()
        tile, warps = launch_config(vocab, scores.device)
        _draft_sample_kernel[(batch,)](
            scores,
            requests,
            temperature,
            out,
            vocab,
            scores.stride(0),
            seed,
            round,
            offset,
            index,
            IS_LOGITS=is_logits,
            BLOCK=tile,
            num_warps=warps,
        )
    return out
