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

from ..checks.chain_call import ChainCall
from ..checks.contract import sum_tolerance
from .philox import ACCEPT, BONUS, RESIDUAL, address_uniform
from .rows import load_prob, residual_search, residual_total, row_argmax, row_lse


@triton.jit
def _entry_bad(value, tolerance, IS_LOGITS: tl.constexpr, sampled):
    """A row's entry at a drafted token violates the input contract (checks/row_contents.py):
    logits NaN or +inf (-inf where the request samples a draft); probabilities NaN, infinite,
    negative or above 1 + tolerance (0 where the request samples a draft)."""
    nan = value != value
    if IS_LOGITS:
        bad = nan | (value == float("inf")) | (sampled & (value == float("-inf")))
    else:
        infinite = (value == float("inf")) | (value == float("-inf"))
        outside = (value < 0.0) | (value > 1.0 + tolerance)
        bad = nan | infinite | outside | (sampled & (value == 0.0))
    return bad


@triton.jit
def _sums_bad(total, minimum, tolerance):
    """A probability row read in full violates the contract: NaN or inf sum, a negative entry, or a
    sum more than ``tolerance`` from 1."""
    return (total != total) | (tl.abs(total - 1.0) > tolerance) | (minimum < 0.0)


@triton.jit
def _lse_bad(row_max, lse):
    """A logits row reached by verification has a NaN, a +inf or no finite entry."""
    return (lse != lse) | (tl.abs(lse) == float("inf")) | (tl.abs(row_max) == float("inf"))


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
    flags_ptr,
    V,
    n_max,
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
    seeds_ptr,
    offsets_ptr,
    seeds_stride,
    offsets_stride,
    tolerance_p,
    tolerance_q,
    TARGET_LOGITS: tl.constexpr,
    Q_MODE: tl.constexpr,
    BLOCK: tl.constexpr,
    VALIDATE: tl.constexpr,
    PROBABILITIES_ONLY: tl.constexpr,
    PLACEHOLDER_OK: tl.constexpr,
    ROW_STREAMS: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    wide_length = tl.load(lengths_ptr + b).to(tl.int64)
    length = wide_length.to(tl.int32)
    request = tl.load(requests_ptr + b).to(tl.int64)
    temperature = tl.load(temperature_ptr + b).to(tl.float32)
    if ROW_STREAMS:  # one Philox key and offset per request
        seed = tl.load(seeds_ptr + b * seeds_stride).to(tl.int64)
        offset = tl.load(offsets_ptr + b * offsets_stride).to(tl.int64)
    target_row0 = target_ptr + b * target_stride_b
    draft_row0 = draft_ptr + b * draft_stride_b
    bad = tl.full((), 0, tl.int1)
    if VALIDATE:
        # Arguments first; a request that breaks them reads nothing at its drafted tokens.
        bad = (wide_length < 0) | (wide_length > n_max) | (request < 0) | (request >= 1 << 32)
        bad = bad | (temperature != temperature) | (temperature < 0.0)
        bad = bad | (temperature == float("inf"))
        if PROBABILITIES_ONLY:  # a temperature of 0 or 1 only
            bad = bad | ((temperature != 0.0) & (temperature != 1.0))
        length = tl.minimum(tl.maximum(wide_length, 0), n_max).to(tl.int32)
        sampled = temperature != 0.0
        never = tl.full((), 0, tl.int1)
        j = tl.full((), 0, tl.int32)
        while j < length:
            token = tl.load(tokens_ptr + b * tokens_stride_b + j.to(tl.int64) * tokens_stride_k)
            token = token.to(tl.int64)
            outside = (token < 0) | (token >= V)
            refused = outside
            if PLACEHOLDER_OK:  # vLLM's -1 is a rejection at its position, not an error
                refused = outside & (token != -1)
            bad = bad | refused
            safe = tl.where(outside, 0, token)
            p_x = tl.load(target_row0 + j.to(tl.int64) * target_stride_k + safe).to(tl.float32)
            bad = bad | (_entry_bad(p_x, tolerance_p, TARGET_LOGITS, never) & ~outside)
            if Q_MODE != 2:
                q_x = tl.load(draft_row0 + j.to(tl.int64) * draft_stride_k + safe)
                q_bad = _entry_bad(q_x.to(tl.float32), tolerance_q, Q_MODE == 1, sampled)
                bad = bad | (q_bad & ~outside)
            j += 1
        length = tl.where(bad, 0, length)
    greedy = temperature == 0.0
    temperature = tl.where(greedy, 1.0, temperature)  # greedy rows never scale logits

    k = tl.full((), 0, tl.int32)
    rejected = tl.full((), 0, tl.int32)
    max_p = tl.full((), 0.0, tl.float32)
    lse_p = tl.full((), 0.0, tl.float32)
    max_q = tl.full((), 0.0, tl.float32)
    lse_q = tl.full((), 0.0, tl.float32)
    while (k < length) & (rejected == 0):
        token_at = tokens_ptr + b * tokens_stride_b + k.to(tl.int64) * tokens_stride_k
        token = tl.load(token_at).to(tl.int64)
        # A draft outside the vocabulary (vLLM's -1 placeholder) is rejected, read at token 0.
        outside = (token < 0) | (token >= V)
        safe = tl.where(outside, 0, token)
        p_row = target_row0 + k.to(tl.int64) * target_stride_k
        q_row = draft_row0 + k.to(tl.int64) * draft_stride_k
        if greedy:
            best, row_bad = row_argmax(p_row, V, BLOCK)
            bad = bad | row_bad
            keep = token == best
        else:
            if TARGET_LOGITS:
                max_p, lse_p = row_lse(p_row, V, temperature, BLOCK)
                bad = bad | _lse_bad(max_p, lse_p)
            if Q_MODE == 1:
                max_q, lse_q = row_lse(q_row, V, temperature, BLOCK)
                bad = bad | _lse_bad(max_q, lse_q)
            p_x = load_prob(p_row, safe, TARGET_LOGITS, temperature, max_p, lse_p)
            if Q_MODE == 2:
                q_x = tl.full((), 1.0, tl.float32)
            else:
                q_x = load_prob(q_row, safe, Q_MODE == 1, temperature, max_q, lse_q)
            u = address_uniform(seed, ACCEPT, k + 1, request, round, offset)
            # u * q < p in float64 is exact for float32 operands: the test is u < p / q.
            keep = (u.to(tl.float64) * q_x.to(tl.float64) < p_x.to(tl.float64)) & ~outside
        if keep:
            tl.store(out_ptr + b * out_stride_b + k, token)
            k += 1
        else:
            rejected = 1

    p_row = target_row0 + k.to(tl.int64) * target_stride_k
    last = tl.minimum(k, tl.maximum(length - 1, 0)).to(tl.int64)
    q_row = draft_row0 + last * draft_stride_k
    if greedy:
        final, row_bad = row_argmax(p_row, V, BLOCK)
        bad = bad | row_bad
    else:
        token = tl.load(tokens_ptr + b * tokens_stride_b + last * tokens_stride_k).to(tl.int64)
        # Separate ifs: a compile-time test, then a runtime one (Triton has no tensor `and`).
        if TARGET_LOGITS:  # noqa: SIM102
            if rejected == 0:  # the bonus row has not been read yet
                max_p, lse_p = row_lse(p_row, V, temperature, BLOCK)
                bad = bad | _lse_bad(max_p, lse_p)
        phase = tl.where(rejected != 0, RESIDUAL, BONUS)
        u = address_uniform(seed, phase, k + 1, request, round, offset)
        use_q = rejected
        total, sum_p, min_p, sum_q, min_q = residual_total(
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
        if not TARGET_LOGITS:
            bad = bad | _sums_bad(sum_p, min_p, tolerance_p)
        if Q_MODE == 0:
            bad = bad | ((rejected != 0) & _sums_bad(sum_q, min_q, tolerance_q))
        if total <= 0.0:
            # p == q up to rounding: the residual has no mass, so draw from p itself.
            use_q = 0
            total, _, _, _, _ = residual_total(
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
    if VALIDATE:
        tl.store(flags_ptr + b, bad.to(tl.int8))


INTERPRETER_TILE = 1 << 16
"""The largest vocabulary tile on CPU tensors (the interpreter's cost is per loop step); tests
lower it to run rows over several tiles."""


def launch_config(V: int, device: torch.device) -> tuple[int, int]:
    """(vocabulary tile, warps per program). On CUDA a tile of up to 8192 with 16 warps: the
    fastest of tiles 2048-8192 x warps 4-16 for chain verification on an H200 at B = 64,
    k = 8, V = 128,256, with probabilities and with logits (BENCHMARKS.md, GPU section)."""
    if device.type == "cpu":
        return min(triton.next_power_of_2(max(V, 16)), INTERPRETER_TILE), 4
    tile = min(triton.next_power_of_2(max(V, 16)), 8192)
    return tile, max(4, min(16, tile // 512))


def chain_verify_triton(
    call: ChainCall,
    *,
    validate: bool = False,
    block: int | None = None,
    num_warps: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Launch the kernel (see :func:`specproof.optimized.chain_verify`).

    With ``validate`` the kernel also checks the input contract on what it reads (argument
    ranges, drafted tokens, the entries and rows of
    :mod:`specproof.optimized.checks.row_contents`) and returns one int8 flag per request, 1
    where a check failed; a flagged request reads nothing at its drafted tokens and its tokens
    are meaningless. A draft id outside 0..V-1 is never read and never accepted (a rejection at
    its position), validated or not; ``call.placeholder_drafts`` keeps -1 from being flagged.
    The streams' keys and offsets are call-wide integers, or [B] int64 tensors (one key and one
    offset per request, read by the kernel; any strides).
    ``block`` (vocabulary tile) and ``num_warps`` override the defaults, for tuning runs.

    Returns (tokens [B, n + 1] int64 with -1 after the last emitted token, accepted [B] int64,
    flags [B] int8 or None).
    """
    target, draft, lengths, streams = call.target, call.draft, call.lengths, call.streams
    batch, positions, vocab = target.shape
    device = target.device
    out = torch.full((batch, positions), -1, dtype=torch.int64, device=device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    flags = torch.zeros(batch, dtype=torch.int8, device=device) if validate else None
    if batch == 0:
        return out, accepted, flags
    target = target if target.stride(-1) == 1 else target.contiguous()
    q_mode = 2 if draft is None else (1 if call.draft_logits else 0)
    draft_arg = (
        target if draft is None else (draft if draft.stride(-1) == 1 else draft.contiguous())
    )
    tokens = call.draft_tokens
    if tokens.shape[1] == 0:
        tokens = torch.zeros((batch, 1), dtype=torch.int64, device=device)
    tile, warps = launch_config(vocab, device)
    if streams.per_request:  # [B] int64 tensors, read by the kernel
        seeds, offsets = torch.as_tensor(streams.keys), torch.as_tensor(streams.offsets)
        seed_word, offset_word = 0, 0
    else:
        seeds = offsets = lengths  # unread
        seed_word, offset_word = int(streams.keys), int(streams.offsets)
    _chain_verify_kernel[(batch,)](
        target,
        draft_arg,
        tokens,
        lengths,
        streams.words,
        call.temperatures,
        out,
        accepted,
        flags if flags is not None else accepted,
        vocab,
        positions - 1,
        target.stride(0),
        target.stride(1),
        draft_arg.stride(0),
        draft_arg.stride(1),
        tokens.stride(0),
        tokens.stride(1),
        out.stride(0),
        seed_word,
        streams.round,
        offset_word,
        seeds,
        offsets,
        seeds.stride(0),
        offsets.stride(0),
        sum_tolerance(target.dtype),
        sum_tolerance(draft_arg.dtype),
        TARGET_LOGITS=call.target_logits,
        Q_MODE=q_mode,
        BLOCK=block or tile,
        VALIDATE=validate,
        PROBABILITIES_ONLY=not (call.target_logits or call.draft_logits),
        PLACEHOLDER_OK=call.placeholder_drafts,
        ROW_STREAMS=streams.per_request,
        num_warps=num_warps or warps,
    )
    return out, accepted, flags
