"""vLLM's whole speculative verification step, from raw logits to output tokens.

vLLM's ``RejectionSampler.forward`` takes the target model's raw logits ([T + B, V]: every
drafted position of every request, then one bonus row per request) and the requests' sampling
parameters, and returns [B, max_spec_len + 1] int32 tokens (accepted drafts, then the recovered
or bonus token, then -1). :func:`verify_step` computes the same with
:func:`~specproof.optimized.verify.verify_call` underneath, bonus token included:

- The rows are read as a dense [B, n + 1, V] float32 tensor: request r's drafted rows, then
  its bonus row at position ``num_draft_tokens[r]`` (padding repeats it, never read). For
  float32 logits in vLLM's layout with every request drafting alike this is a view of the
  logits (no copy), and so it is for half-precision logits in that layout when no request
  truncates (chain verification converts the rows it reads); otherwise one float32 copy or
  gather.
- Truncation, in vLLM's order (``reference/filters.py``, order ``vllm``): temperature, min-p,
  top-k, top-p, each as a -inf mask on the logits (:func:`truncate_logits_`). Greedy requests
  (temperature 0) are not cut: every cut keeps the argmax.
- The masked logits go to chain verification at the request's temperature (0: greedy), which
  softmaxes only the rows it reaches.

Streams as in :func:`~specproof.optimized.compat.rejection_sample`: unseeded requests at the
call's key ``seed`` with request word r; a seeded request (``generators[r]``) at the next draw
of its generator with word 0, taken once per call whether or not it drafted (its bonus token is
drawn here too), so its tokens depend only on its seed and how many steps it has served.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from .checks.arguments import SEED_LIMIT, as_integer
from .checks.chain_call import chain_call
from .checks.contract import check_float, check_int, check_same_device, fail
from .checks.streams import call_streams
from .compat import (
    LEGACY_GREEDY_TEMPERATURE,
    _fresh_seed,
    request_generators,
    request_streams,
)
from .torch_backend.rows import workspace
from .verify import verify_call

DRAFT_COUNT_LIMIT = 1 << 20
"""Largest accepted ``num_draft_tokens`` entry, plus one."""

GREEDY_TEMPERATURE = 0.0
"""vLLM marks a greedy request with temperature 0 (older releases: -1, also read as greedy)."""


def truncate_logits_(
    rows: torch.Tensor,
    temperature: torch.Tensor,
    top_k: torch.Tensor | None = None,
    top_p: torch.Tensor | None = None,
    min_p: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mask with -inf, in place, the tokens vLLM's sampler cuts from logits ``rows`` [R, V]
    (read as float32) at per-row ``temperature`` [R] (> 0), in vLLM's order: min-p on
    softmax(l / T) (a token is kept when p >= min_p * p_max, i.e. l >= l_max + T log min_p),
    then top-k (the logits at least the k-th largest), then top-p on the law those left (the
    smallest set of most probable tokens whose mass reaches top_p; the mass strictly before a
    kept token is below top_p). ``top_k`` of 0 or >= V, ``top_p`` of 1 and ``min_p`` of 0 cut
    nothing; None means no row cuts. Ties at a cut are all kept. Returns ``rows``."""
    vocab = rows.shape[1]
    if min_p is not None and bool((min_p > 0).any()):
        index, sub = _rows_to_cut(rows, min_p > 0)
        floor = sub.amax(dim=1) + _at(temperature, index) * torch.log(_at(min_p, index))
        sub.masked_fill_(sub < floor[:, None], -math.inf)
        _write_back(rows, index, sub)
    k_cut = None if top_k is None else (top_k > 0) & (top_k < vocab)
    p_cut = None if top_p is None else top_p < 1
    if p_cut is not None and top_p is not None and bool(p_cut.any()):
        index, sub = _rows_to_cut(rows, p_cut if k_cut is None else (p_cut | k_cut))
        ordered, kth = _sorted_within_top_k(
            sub,
            None if k_cut is None else _at(k_cut, index),
            None if top_k is None else _at(top_k, index),
        )
        mass = torch.softmax(ordered / _at(temperature, index)[:, None], dim=1)
        before = torch.cumsum(mass, dim=1).sub_(mass)
        kept = (before < _at(top_p, index)[:, None]).sum(dim=1).clamp_(min=1)
        floor = ordered.gather(1, (kept - 1)[:, None])
        if kth is not None:  # rounding can carry the nucleus into the tokens top-k cut
            floor = torch.maximum(floor, kth)
        sub.masked_fill_(sub < floor, -math.inf)
        _write_back(rows, index, sub)
    elif k_cut is not None and top_k is not None and bool(k_cut.any()):
        index, sub = _rows_to_cut(rows, k_cut)
        k = _at(top_k, index).to(torch.int64)
        largest = sub.topk(int(k.max()), dim=1).values
        floor = largest.gather(1, (k - 1)[:, None])
        sub.masked_fill_(sub < floor, -math.inf)
        _write_back(rows, index, sub)
    return rows


TOP_K_FIRST_LIMIT = 1024
"""Largest top-k for which top-p sorts only the k largest logits of each row (torch.topk)
instead of the whole row: on this CPU a full sort of a 32k row costs several times more."""


def _sorted_within_top_k(
    sub: torch.Tensor, k_cut: torch.Tensor | None, top_k: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(ordered, kth): the rows ``sub`` sorted in descending order with every entry below the
    row's k-th largest (``kth`` [R, 1], None without top-k) set to -inf.

    When every row has a top-k cut of at most :data:`TOP_K_FIRST_LIMIT`, only the entries at
    least the k-th largest are sorted (torch.topk of the largest count kept, ties at the k-th
    included), the rest of each row is -inf: the same tensor as the full sort then masked,
    since a sort's values do not depend on how ties are ordered."""
    vocab = sub.shape[1]
    if k_cut is None or top_k is None:
        return sub.sort(dim=1, descending=True).values, None
    k = torch.where(k_cut, top_k, vocab).to(torch.int64)
    largest_k = int(k.max()) if k.numel() else 0
    if 0 < largest_k <= TOP_K_FIRST_LIMIT and bool(k_cut.all()):
        largest = sub.topk(largest_k, dim=1).values
        kth = largest.gather(1, (k - 1)[:, None])
        # Ties at the k-th are kept too; -inf entries (a row cut before) are the fill already.
        kept = int(torch.count_nonzero((sub >= kth) & (sub > -math.inf), dim=1).max())
        if kept > largest_k:
            largest = sub.topk(kept, dim=1).values
        ordered = torch.full_like(sub, -math.inf)
        ordered[:, : largest.shape[1]] = largest
        return ordered.masked_fill_(ordered < kth, -math.inf), kth
    ordered = sub.sort(dim=1, descending=True).values
    kth = ordered.gather(1, (k - 1)[:, None])
    return ordered.masked_fill_(ordered < kth, -math.inf), kth


def _rows_to_cut(rows: torch.Tensor, cut: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
    """(index, float32 rows) of the rows ``cut`` marks: the rows themselves (index None) when
    every row is cut and they are float32, else a copy of those rows."""
    if rows.dtype == torch.float32 and bool(cut.all()):
        return None, rows
    index = cut.nonzero().squeeze(1)
    return index, rows.index_select(0, index).to(torch.float32)


def _at(values: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    return values if index is None else values[index]


def _write_back(rows: torch.Tensor, index: torch.Tensor | None, sub: torch.Tensor) -> None:
    if index is not None:
        rows.index_copy_(0, index, sub.to(rows.dtype))


def dense_rows(
    lengths: torch.Tensor,
    cu_num_draft_tokens: torch.Tensor,
    target_indices: torch.Tensor,
    bonus_indices: torch.Tensor,
    width: int,
) -> torch.Tensor:
    """[B, width] int64 logits-row index of each request's position: its drafted rows, then its
    bonus row (repeated as padding)."""
    device = lengths.device
    positions = torch.arange(width, device=device)
    bonus = bonus_indices.to(device=device, dtype=torch.int64)[:, None]
    total = target_indices.shape[0]
    if total == 0:
        return bonus.expand(-1, width).contiguous()
    starts = cu_num_draft_tokens.to(device=device, dtype=torch.int64) - lengths
    flat = (starts[:, None] + positions[None, :]).clamp_(0, total - 1)
    drafted = target_indices.to(device=device, dtype=torch.int64)[flat]
    return torch.where(positions[None, :] < lengths[:, None], drafted, bonus)


def verify_step(
    logits: torch.Tensor,
    target_indices: torch.Tensor,
    bonus_indices: torch.Tensor,
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    temperature: torch.Tensor | None,
    *,
    top_k: torch.Tensor | None = None,
    top_p: torch.Tensor | None = None,
    min_p: torch.Tensor | None = None,
    generators: dict[int, torch.Generator] | None = None,
    all_greedy: bool = False,
    seed: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    """Output tokens int32 [B, max(num_draft_tokens) + 1] of one vLLM verification step (see
    the module docstring). ``logits`` [T + B, V] raw (float32, float16 or bfloat16; read as
    float32), ``target_indices`` [T] and ``bonus_indices`` [B] its rows, ``draft_token_ids``
    [T], ``cu_num_draft_tokens`` [B] their inclusive cumsum, ``draft_probs`` [T, V] or None
    (drafts taken deterministically: q one-hot), ``temperature`` [B] (0: greedy; None with
    ``all_greedy``), ``top_k`` / ``top_p`` / ``min_p`` [B] or None, ``generators`` the seeded
    requests' ``torch.Generator`` by row. Inputs are validated unless ``validate=False``."""
    check_float("logits", logits, 2)
    for name, tensor in (
        ("target_indices", target_indices),
        ("bonus_indices", bonus_indices),
        ("draft_token_ids", draft_token_ids),
        ("cu_num_draft_tokens", cu_num_draft_tokens),
    ):
        check_int(name, tensor, 1)
    check_same_device(
        logits=logits, draft_probs=draft_probs, draft_token_ids=draft_token_ids,
        cu_num_draft_tokens=cu_num_draft_tokens, target_indices=target_indices,
        bonus_indices=bonus_indices,
    )  # fmt: skip
    counts = list(num_draft_tokens)
    if not all(type(n) is int and 0 <= n < DRAFT_COUNT_LIMIT for n in counts):  # the usual case
        counts = [
            as_integer(f"num_draft_tokens[{r}]", n, DRAFT_COUNT_LIMIT)
            for r, n in enumerate(num_draft_tokens)
        ]
    batch, total, vocab = len(counts), sum(counts), logits.shape[1]
    device = logits.device
    if bonus_indices.shape[0] != batch or cu_num_draft_tokens.shape[0] != batch:
        fail(
            f"{batch} requests, but bonus_indices has {bonus_indices.shape[0]} and "
            f"cu_num_draft_tokens {cu_num_draft_tokens.shape[0]} entries"
        )
    if target_indices.shape[0] != total or draft_token_ids.shape[0] != total:
        fail(
            f"num_draft_tokens sums to {total}, but target_indices has "
            f"{target_indices.shape[0]} and draft_token_ids {draft_token_ids.shape[0]} entries"
        )
    if draft_probs is not None:
        check_float("draft_probs", draft_probs, 2)
        if tuple(draft_probs.shape) != (total, vocab):
            fail(f"draft_probs must have shape ({total}, {vocab}), got {tuple(draft_probs.shape)}")
    if temperature is None and not all_greedy:
        fail("temperature is None, but the batch is not all greedy")
    lengths = torch.tensor(counts, dtype=torch.int64, device=device)
    if validate and batch:
        rows_seen = torch.cat([target_indices, bonus_indices]).to(torch.int64)
        bad = (lengths.cumsum(0) != cu_num_draft_tokens.to(torch.int64)).any() | (
            (rows_seen < 0) | (rows_seen >= logits.shape[0])
        ).any()
        if bool(bad):  # one host synchronisation
            fail(
                "cu_num_draft_tokens is not the cumsum of num_draft_tokens, or a logits index "
                f"lies outside 0..{logits.shape[0] - 1}"
            )
    width = max(counts, default=0) + 1
    rows = dense_rows(lengths, cu_num_draft_tokens, target_indices, bonus_indices, width)
    in_order = torch.arange(batch * width, device=device)
    in_layout = (
        logits.is_contiguous()
        and logits.shape[0] >= batch * width
        and torch.equal(rows.view(-1), in_order)
    )
    cuts = any(v is not None for v in (top_k, top_p, min_p))
    if in_layout and (logits.dtype == torch.float32 or not cuts):
        # vLLM's own layout when every request drafts alike (its rows, then its bonus row):
        # the logits are the dense rows already. Cuts are then written into them (vLLM's
        # forward contract allows it: "logits can be updated in place"). Half-precision rows
        # with no cut to write are read as they are: chain verification converts only the
        # rows it reads, to the same float32 values.
        dense = logits[: batch * width]
    else:  # one float32 copy (vLLM's step converts its rows to float32 too)
        dense = workspace("vllm-step-target", batch * width, vocab, device)
        if in_layout:
            dense.copy_(logits[: batch * width])
        elif logits.dtype == torch.float32:
            torch.index_select(logits, 0, rows.view(-1), out=dense)
        else:
            dense.copy_(logits.index_select(0, rows.view(-1)))
    if all_greedy or temperature is None:
        temperatures = torch.zeros(batch, dtype=torch.float32, device=device)
    else:
        temperatures = temperature.to(device=device, dtype=torch.float32)
        greedy = (temperatures == GREEDY_TEMPERATURE) | (temperatures == LEGACY_GREEDY_TEMPERATURE)
        temperatures = torch.where(greedy, 0.0, temperatures)
        random = ~greedy
        if cuts:
            per_row = [
                None
                if v is None
                else torch.where(random, v.to(device), off).repeat_interleave(width)
                for v, off in ((top_k, 0), (top_p, 1.0), (min_p, 0.0))
            ]
            scale = torch.where(greedy, 1.0, temperatures).repeat_interleave(width)
            truncate_logits_(dense, scale, *per_row)
    live = torch.arange(width - 1, device=device)[None, :] < lengths[:, None]
    if total:
        starts = cu_num_draft_tokens.to(device=device, dtype=torch.int64) - lengths
        flat = (starts[:, None] + torch.arange(width - 1, device=device)[None, :]).clamp_(
            0, total - 1
        )
        tokens = torch.where(live, draft_token_ids.to(torch.int64)[flat], 0)
        draft = None
        if draft_probs is not None:
            uniform = total == batch * (width - 1)
            draft = (
                draft_probs.view(batch, width - 1, vocab)
                if uniform
                else draft_probs.index_select(0, flat.view(-1)).view(batch, width - 1, vocab)
            )
    else:
        tokens = torch.zeros(batch, 0, dtype=torch.int64, device=device)
        draft = None if draft_probs is None else draft_probs.new_zeros(batch, 0, vocab)
    call_seed = _fresh_seed(None) if seed is None else as_integer("seed", seed, SEED_LIMIT)
    seeded = request_generators(SimpleNamespace(generators=generators), batch)
    if seeded and not all_greedy:
        # Every seeded request draws (its bonus token at least): its generator advances once.
        streams = request_streams(seeded, [1] * batch, call_seed, 0, device)
    else:
        streams = call_streams(batch, device, seed=call_seed, round=0)
    call = chain_call(
        dense.view(batch, width, vocab),
        draft,
        tokens,
        streams,
        num_draft_tokens=lengths,
        temperature=temperatures,
        target_is_logits=True,
        placeholder_drafts=True,
    )
    return verify_call(call, validate=validate).tokens.to(torch.int32)
