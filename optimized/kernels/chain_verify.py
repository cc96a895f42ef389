# mypy: disable-error-code="no-untyped-def"
"""Fused chain verification (Triton): acceptance tests up to the first rejection, then one
token from the residual of the rejected position, or the bonus token. One program per request.

Per request the kernel reads, for each position up to the first rejection, one target and one
draft probability (plus one log-sum-exp pass per row for logits); the rejected row is read
again for the residual (a total pass and an inverse-CDF pass that stops at the drawn token).
Rows after the first rejection are never read.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .philox import ACCEPT, BONUS, RESIDUAL, address_uniform
from .rows import load_prob, residual_search, residual_total, row_argmax, row_lse


# Philox words are never compile-time constants (a word equal to 1 would be one).
@triton.jit(do_not_specialize=["seed", "round", "offset"])
def _chain_verify_kernel(
    target_ptr,
    draft_ptr,
    tokens_ptr,
    lengths_ptr,
    requests_ptr,
    temperature_ptr,
    out_ptr,
    accepted_ptr,
    V,
    target_stride_b,
    target_stride_k,
    draft_stride_b,
    draft_stride_k,
    tokens_stride_b,
    tokens_stride_k,
    out_stride_b,
    seed,
    round,
    offset,
    TARGET_LOGITS: tl.constexpr,
    Q_MODE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    length = tl.load(lengths_ptr + b).to(tl.int32)
    request = tl.load(requests_ptr + b).to(tl.int64)
    temperature = tl.load(temperature_ptr + b).to(tl.float32)
    greedy = temperature == 0.0
    temperature = tl.where(greedy, 1.0, temperature)  # greedy rows never scale logits
    target_row0 = target_ptr + b * target_stride_b
    draft_row0 = draft_ptr + b * draft_stride_b

    k = tl.full((), 0, tl.int32)
    rejected = tl.full((), 0, tl.int32)
    max_p = tl.full((), 0.0, tl.float32)
    lse_p = tl.full((), 0.0, tl.float32)
    max_q = tl.full((), 0.0, tl.float32)
    lse_q = tl.full((), 0.0, tl.float32)
    while (k < length) & (rejected == 0):
        token_at = tokens_ptr + b * tokens_stride_b + k.to(tl.int64) * tokens_stride_k
        token = tl.load(token_at).to(tl.int64)
        p_row = target_row0 + k.to(tl.int64) * target_stride_k
        q_row = draft_row0 + k.to(tl.int64) * draft_stride_k
        if greedy:
            keep = token == row_argmax(p_row, V, BLOCK)
        else:
            if TARGET_LOGITS:
                max_p, lse_p = row_lse(p_row, V, temperature, BLOCK)
            if Q_MODE == 1:
                max_q, lse_q = row_lse(q_row, V, temperature, BLOCK)
            p_x = load_prob(p_row, token, TARGET_LOGITS, temperature, max_p, lse_p)
            if Q_MODE == 2:
                q_x = tl.full((), 1.0, tl.float32)
            else:
                q_x = load_prob(q_row, token, Q_MODE == 1, temperature, max_q, lse_q)
            u = address_uniform(seed, ACCEPT, k + 1, request, round, offset)
            # u * q < p in float64 is exact for float32 operands: the test is u < p / q.
            keep = u.to(tl.float64) * q_x.to(tl.float64) < p_x.to(tl.float64)
        if keep:
            tl.store(out_ptr + b * out_stride_b + k, token)
            k += 1
        else:
            rejected = 1

    p_row = target_row0 + k.to(tl.int64) * target_stride_k
    last = tl.minimum(k, tl.maximum(length - 1, 0)).to(tl.int64)
    q_row = draft_row0 + last * draft_stride_k
    if greedy:
        final = row_argmax(p_row, V, BLOCK)
    else:
        token = tl.load(tokens_ptr + b * tokens_stride_b + last * tokens_stride_k).to(tl.int64)
        # Separate ifs: a compile-time test, then a runtime one (Triton has no tensor `and`).
        if TARGET_LOGITS:  # noqa: SIM102
            if rejected == 0:  # the bonus row has not been read yet
                max_p, lse_p = row_lse(p_row, V, temperature, BLOCK)
        phase = tl.where(rejected != 0, RESIDUAL, BONUS)
        u = address_uniform(seed, phase, k + 1, request, round, offset)
        use_q = rejected
        total = residual_total(
            p_row,
            q_row,
            V,
            token,
            TARGET_LOGITS,
            Q_MODE,
            use_q,
            temperature,
            max_p,
            lse_p,
            max_q,
            lse_q,
            BLOCK,
        )
        if total <= 0.0:
            # p == q up to rounding: the residual has no mass, so draw from p itself.
            use_q = 0
            total = residual_total(
                p_row,
                q_row,
                V,
                token,
                TARGET_LOGITS,
                Q_MODE,
                use_q,
                temperature,
                max_p,
                lse_p,
                max_q,
                lse_q,
                BLOCK,
            )
        final = residual_search(
            p_row,
            q_row,
            V,
            token,
            TARGET_LOGITS,
            Q_MODE,
            use_q,
            temperature,
            max_p,
            lse_p,
            max_q,
            lse_q,
            u,
            total,
            BLOCK,
        )
    tl.store(out_ptr + b * out_stride_b + k, final)
    tl.store(accepted_ptr + b, k.to(tl.int64))


INTERPRETER_TILE = 1 << 16
"""The largest vocabulary tile on CPU tensors (the interpreter's cost is per loop step); tests
lower it to run rows over several tiles."""


def block_size(V: int, device: torch.device) -> int:
    """Vocabulary tile: large under the interpreter, 4096 on CUDA."""
    cap = INTERPRETER_TILE if device.type == "cpu" else 4096
    return min(triton.next_power_of_2(max(V, 16)), cap)


def chain_verify_triton(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    target_logits: bool,
    draft_logits: bool,
    seed: int,
    round: int,
    offset: int,
    block: int | None = None,
    num_warps: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the kernel on checked inputs (see :func:`specproof.optimized.chain_verify`).

    ``block`` (vocabulary tile) and ``num_warps`` override the defaults, for tuning runs.

    Returns (tokens [B, n + 1] int64 with -1 after the last emitted token, accepted [B] int64).
    """
    batch, positions, vocab = target.shape
    out = torch.full((batch, positions), -1, dtype=torch.int64, device=target.device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=target.device)
    if batch == 0:
        return out, accepted
    target = target if target.stride(-1) == 1 else target.contiguous()
    q_mode = 2 if draft is None else (1 if draft_logits else 0)
    draft_arg = (
        target if draft is None else (draft if draft.stride(-1) == 1 else draft.contiguous())
    )
    tokens = draft_tokens
    if tokens.shape[1] == 0:
        tokens = torch.zeros((batch, 1), dtype=torch.int64, device=target.device)
    _chain_verify_kernel[(batch,)](
        target,
        draft_arg,
        tokens,
        lengths,
        requests,
        temperature,
        out,
        accepted,
        vocab,
        target.stride(0),
        target.stride(1),
        draft_arg.stride(0),
        draft_arg.stride(1),
        tokens.stride(0),
        tokens.stride(1),
        out.stride(0),
        seed,
        round,
        offset,
        TARGET_LOGITS=target_logits,
        Q_MODE=q_mode,
        BLOCK=block or block_size(vocab, target.device),
        **({"num_warps": num_warps} if num_warps else {}),
    )
    return out, accepted
