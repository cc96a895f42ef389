"""Drop-in replacements for the verification calls of FlashInfer and vLLM.

Both run :func:`specproof.optimized.chain_verify` underneath, so their output law is the
target's exactly, and their random stream is the Philox stream the reference replays.

Divergences, everywhere:

- Randomness. Uniforms come from Philox at the addresses of
  :mod:`specproof.reference.philox` (key = ``seed``, counter = (slot, request, and the two words
  of round * 2^32 + offset)),
  not from the peers' generators; per-request seeds (vLLM's generators, FlashInfer's seed and
  offset tensors) select per-request keys and words, documented at each function. A uniform
  lies in [0, 1) on a 2^-24 grid; a draft is accepted when u * q < p (exact in float64), the
  residual and bonus tokens are inverse-CDF draws (not FlashInfer's two-pass sampler with its
  own stream, nor vLLM's exponential race). The laws are the same; the tokens for a given seed
  differ from the peers'.
- Inputs are validated (:mod:`specproof.optimized.checks.contract`) unless ``validate=False``.
"""

from __future__ import annotations

from typing import Any

import torch

from .backend import resolve_backend
from .call_shapes import FlashInferChainSpeculativeSampling, VllmRejectionSample
from .checks.arguments import SEED_LIMIT, as_integer
from .checks.chain_call import ChainCall, chain_batch, chain_call
from .checks.contract import (
    PLACEHOLDER_DRAFT,
    InvalidInputError,
    check_float,
    check_int,
    check_same_device,
)
from .checks.streams import OWN_STREAM_WORD, Streams, call_streams, row_words, seeded_streams
from .torch_backend.rows import workspace
from .verify import verify_call

PLACEHOLDER_TOKEN_ID = PLACEHOLDER_DRAFT
"""vLLM's id for a draft slot with no token (the checks' ``PLACEHOLDER_DRAFT``)."""
GREEDY_TEMPERATURE = 0.0
"""vLLM marks greedy requests with temperature 0 (older releases used -1: both are read as greedy
here, see ``LEGACY_GREEDY_TEMPERATURE``)."""
LEGACY_GREEDY_TEMPERATURE = -1.0
"""The greedy marker of older vLLM releases."""


def _fresh_seed(generator: torch.Generator | None) -> int:
    device = None if generator is None else generator.device  # a CUDA generator draws there
    return int(torch.randint(0, 2**62, (1,), generator=generator, device=device).item())


GENERATOR_KEY_LIMIT = 2**62


def generator_key(generator: torch.Generator) -> torch.Tensor:
    """A seeded vLLM request's Philox key for this call: the next draw of its generator in
    [0, 2^62), a [1] int64 tensor on the generator's device (no host synchronisation). The
    generator advances one draw per call, as vLLM's does per verification step."""
    return torch.randint(0, GENERATOR_KEY_LIMIT, (1,), generator=generator, device=generator.device)


def request_generators(metadata: Any, batch: int) -> dict[int, torch.Generator]:
    """``sampling_metadata.generators`` (absent or None: no seeded request), checked to map
    request rows in [0, B) to ``torch.Generator`` objects."""
    generators = getattr(metadata, "generators", None) or {}
    if not isinstance(generators, dict):
        raise InvalidInputError(
            "sampling_metadata.generators must be a dict {request row: torch.Generator}, "
            f"got {type(generators).__name__}"
        )
    for row, generator in generators.items():
        if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < batch:
            raise InvalidInputError(
                f"sampling_metadata.generators has key {row!r}: rows are integers in [0, {batch})"
            )
        if not isinstance(generator, torch.Generator):
            raise InvalidInputError(
                f"sampling_metadata.generators[{row}] must be a torch.Generator, "
                f"got {type(generator).__name__}"
            )
    return generators


def request_streams(
    generators: dict[int, torch.Generator],
    counts: list[int],
    seed: int,
    round: int,
    device: torch.device,
) -> Streams:
    """Per-request streams for a vLLM batch with seeded requests.

    Unseeded request r: key ``seed`` and word r (the stream of a call without generators).
    Seeded request r with drafts: key :func:`generator_key` of its generator and word 0, so its
    tokens depend only on its seed and on how many calls its generator has served, not on its
    row or on the other requests. A seeded request without drafts draws no uniform, so its
    generator is not advanced (as in vLLM); an all-greedy batch draws none, so the caller skips
    this then."""
    batch = len(counts)
    keys, _ = row_words(seed, 0, batch, device)  # a fresh [B] tensor
    words = torch.arange(batch, dtype=torch.int64, device=device)
    seeded = sorted(r for r in generators if counts[r] > 0)
    if seeded:
        rows = torch.tensor(seeded, dtype=torch.int64, device=device)
        if all(generators[r].device == keys.device for r in seeded):
            # generator_key's draw written in place (randint is empty().random_()): the same
            # keys without a tensor, a copy and a concatenation per request.
            entries = keys.unbind(0)
            for r in seeded:
                entries[r].random_(0, GENERATOR_KEY_LIMIT, generator=generators[r])
        else:
            keys[rows] = torch.cat([generator_key(generators[r]).to(device) for r in seeded])
        words[rows] = OWN_STREAM_WORD  # FlashInfer's per-row tensors use it too
    return seeded_streams(keys, round, words, device)


def chain_speculative_sampling(
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    maybe_output_accepted_token_num: torch.Tensor | None = None,
    maybe_output_emitted_draft_token_num: torch.Tensor | None = None,
    deterministic: bool = True,
    generator: torch.Generator | None = None,
    seed: int | torch.Tensor | None = None,
    offset: int | torch.Tensor | None = None,
    *,
    validate: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashInfer's ``flashinfer.sampling.chain_speculative_sampling``.

    ``draft_probs`` [B, n, V], ``draft_token_ids`` [B, n], ``target_probs`` [B, n + 1, V].
    Returns (output_token_ids [B, n + 1] int32 with -1 after the emitted tokens,
    accepted_num [B] int32, emitted_num [B] int32). ``accepted_num`` counts the positions that
    pass their acceptance test when each is judged on its own uniform (an alignment metric);
    ``emitted_num`` counts the accepted drafts (the residual or bonus token excluded). When the
    counter tensors are given, the counts are added to them in place and they are returned.

    ``seed`` and ``offset`` are integers or, as in FlashInfer, int64 / uint64 tensors of length
    1 or B (read on the device: no host synchronisation, so the call can be captured in a CUDA
    graph). When either is a tensor of length B > 1, row b draws at Philox key ``seed[b]``
    (all 64 bits) with counter words (4 * index + phase, 0, and the high and low words of
    ``offset[b]``, all 64 bits as FlashInfer's uint64 offsets): request word 0,
    not b, so a request draws the same alone (a batch of one with ``seed[b:b+1]``,
    ``offset[b:b+1]``), at any row, in any order or subset of the batch, and again when
    repeated with the same seed and offset. An integer or length-1 tensor is the call-wide
    stream (key ``seed``, counter words (4 * index + phase, b, and the words of ``offset``)), as
    FlashInfer
    keeps the row-position stream for a scalar seed. The reference replays row b with
    ``PhiloxSource(seed[b], offset[b])`` at request word 0, or b for the call-wide stream.

    Divergences from FlashInfer: ``deterministic`` is accepted and ignored (the call is always
    deterministic for a seed); with ``seed=None`` a fresh 62-bit seed is drawn from
    ``generator`` (or torch's default generator) instead of advancing a Philox offset;
    ``offset`` is the last two Philox counter words (default 0), not a position in a curand
    sequence. A draft id outside 0..V-1 is refused when validating; with ``validate=False`` it
    is rejected unread (FlashInfer reads it). Rows are validated (sums within
    :func:`~specproof.optimized.checks.contract.sum_tolerance`) unless ``validate=False``.
    """
    del deterministic
    seed = _fresh_seed(generator) if seed is None else seed
    offset = 0 if offset is None else offset
    if isinstance(draft_token_ids, torch.Tensor) and draft_token_ids.dim() >= 1:
        for name, counter in (
            ("maybe_output_accepted_token_num", maybe_output_accepted_token_num),
            ("maybe_output_emitted_draft_token_num", maybe_output_emitted_draft_token_num),
        ):
            check_counter(name, counter, draft_token_ids.shape[0], draft_token_ids.device)
    batch, device = chain_batch(target_probs)
    streams = call_streams(batch, device, seed=seed, round=0, offset=offset)
    call = chain_call(target_probs, draft_probs, draft_token_ids, streams)
    result = verify_call(call, validate=validate)
    emitted = result.num_accepted
    accepted = _independent_acceptances(call)
    if maybe_output_accepted_token_num is not None:
        maybe_output_accepted_token_num.add_(accepted.to(maybe_output_accepted_token_num.dtype))
        accepted_out = maybe_output_accepted_token_num
    else:
        accepted_out = accepted.to(torch.int32)
    if maybe_output_emitted_draft_token_num is not None:
        maybe_output_emitted_draft_token_num.add_(
            emitted.to(maybe_output_emitted_draft_token_num.dtype)
        )
        emitted_out = maybe_output_emitted_draft_token_num
    else:
        emitted_out = emitted.to(torch.int32)
    return result.tokens.to(torch.int32), accepted_out, emitted_out


def check_counter(
    name: str, counter: torch.Tensor | None, batch: int, device: torch.device
) -> None:
    """FlashInfer's in-place counters: None, or an integer [B] tensor on the inputs' device."""
    if counter is None:
        return
    check_int(name, counter, 1)
    if tuple(counter.shape) != (batch,) or counter.device != device:
        raise InvalidInputError(
            f"{name} must be an integer [{batch}] tensor on {device}, "
            f"got shape {tuple(counter.shape)} on {counter.device}"
        )


def _independent_acceptances(call: ChainCall) -> torch.Tensor:
    """Per request, how many positions pass u_k * q_k(x_k) < p_k(x_k) (scalar gathers only),
    u_k the acceptance uniform the verification drew on the call's streams."""
    from .philox import ACCEPT, address_uniforms

    target, draft, tokens, streams = call.target, call.draft, call.draft_tokens, call.streams
    batch, n = tokens.shape
    if n == 0:
        return torch.zeros(batch, dtype=torch.int64, device=target.device)
    inside = (tokens >= 0) & (tokens < target.shape[-1])  # outside: never read nor accepted
    index = torch.where(inside, tokens, 0).to(torch.int64)[..., None]
    p = target[:, :n].gather(2, index)[..., 0].to(torch.float64)
    q = torch.ones_like(p) if draft is None else draft.gather(2, index)[..., 0].to(torch.float64)
    positions = torch.arange(1, n + 1, device=target.device)[None, :]
    requests = streams.words[:, None]
    if streams.per_request:  # one key and offset per request: a column each
        keys, offsets = torch.as_tensor(streams.keys), torch.as_tensor(streams.offsets)
        u = address_uniforms(
            keys[:, None], ACCEPT, positions, requests, streams.round, offsets[:, None]
        )
    elif resolve_backend("auto", target.device) == "triton":  # one launch, not dozens of ops
        from .kernels.philox import address_uniforms_triton

        u = address_uniforms_triton(
            int(streams.keys), ACCEPT, positions, requests, streams.round, int(streams.offsets)
        ).view(batch, n)
    else:
        u = address_uniforms(
            streams.keys, ACCEPT, positions, requests, streams.round, streams.offsets
        )
    return ((u.to(torch.float64) * q < p) & inside).sum(dim=1)


def rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
    *,
    seed: int | None = None,
    round: int = 0,
    validate: bool = True,
) -> torch.Tensor:
    """vLLM's module-level ``vllm.v1.sample.rejection_sampler.rejection_sample``.

    Ragged: request r owns rows cu[r-1]..cu[r] of ``draft_token_ids`` [T], ``draft_probs``
    [T, V] (None for n-gram drafts: q one-hot at the drafted token, so the recovered token is
    drawn from p with the draft token zeroed) and ``target_probs`` [T, V]. Returns int32
    [B, max_spec_len + 1] filled with -1: accepted drafts, then the recovered token at the first
    rejection, or ``bonus_token_ids[r]`` when every draft was accepted. Greedy requests
    (``sampling_metadata.all_greedy``, or temperature -1 or 0) keep drafts equal to the target
    argmax and end with the argmax at the first mismatch. A draft id of -1 (vLLM's
    PLACEHOLDER_TOKEN_ID) is a rejection at its position, never read: the recovered token is
    drawn there as at any rejection (from norm(max(0, p - q)); with ``draft_probs=None`` from p,
    nothing removed). Other ids outside 0..V-1 are refused when validating.

    ``sampling_metadata`` is read duck-typed: ``all_greedy``, ``all_random``, ``temperature``,
    ``generators``. Seeded requests (``generators[r]``, a ``torch.Generator``) draw at their
    own Philox key, :func:`generator_key` (the generator's next draw in [0, 2^62), taken once
    per call for a request with drafts), with request word 0: a seeded request's tokens are a
    function of its seed and of how many calls its generator has served, whatever its row and
    its neighbours. Unseeded requests draw at key ``seed`` (None: one drawn from torch's
    default generator) with request word r, the stream of a call without generators. The
    reference replays request r with ``PhiloxSource(key)`` at request word 0 or r.

    Divergences from vLLM: the acceptance test is u < p / q with u in [0, 1) (vLLM: p / q >= u
    with a float64 u), recovered tokens are inverse-CDF draws (so the tokens for a seed differ
    from vLLM's), the target rows are gathered into a dense [B, n + 1, V] copy (the draft rows
    too, unless every request drafts max_spec_len tokens), and the inputs are validated unless
    ``validate=False``.
    """
    lengths, counts, vocab = check_ragged_inputs(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_probs,
        bonus_token_ids,
        validate=validate,
    )
    batch = lengths.shape[0]
    device = target_probs.device
    starts = cu_num_draft_tokens.to(device=device, dtype=torch.int64) - lengths
    total = target_probs.shape[0]
    if total == 0:
        source = torch.zeros(1, vocab, dtype=target_probs.dtype, device=device)
        source[:, 0] = 1
        draft_source, token_source = (
            (None if draft_probs is None else source),
            torch.zeros(1, dtype=torch.int64, device=device),
        )
    else:
        source, draft_source, token_source = target_probs, draft_probs, draft_token_ids
    # Position k of request r reads row starts[r] + k (clamped: padding positions are never
    # verified). The extra last position stands in for the bonus row, whose token is given:
    # any valid row serves, so it repeats the request's last row.
    positions = torch.arange(max_spec_len + 1, device=device)
    rows = (starts[:, None] + positions[None, :].clamp(max=max(max_spec_len - 1, 0))).clamp(
        0, max(total - 1, 0)
    )
    flat_rows = rows.reshape(-1)
    if source.dtype == torch.float32:  # a kept buffer: fresh ones cost more in page faults
        gathered = workspace("compat-target", flat_rows.numel(), vocab, device)
        torch.index_select(source, 0, flat_rows, out=gathered)
    else:
        gathered = source.index_select(0, flat_rows)
    target = gathered.view(batch, max_spec_len + 1, vocab)
    draft_rows = rows[:, :max_spec_len]
    # The lengths sum to total and none exceeds max_spec_len: this means all equal it.
    uniform = total > 0 and total == batch * max_spec_len
    if draft_source is None:
        draft = None
    elif uniform:
        draft = draft_source.view(batch, max_spec_len, vocab)  # the ragged rows are dense already
    else:
        draft = draft_source.index_select(0, draft_rows.reshape(-1)).view(
            batch, max_spec_len, vocab
        )
    live = positions[None, :max_spec_len] < lengths[:, None]
    tokens = torch.where(live, token_source[draft_rows], 0)
    temperature = _greedy_as_zero_temperature(sampling_metadata, batch, device)
    generators = request_generators(sampling_metadata, batch)
    call_seed = _fresh_seed(None) if seed is None else as_integer("seed", seed, SEED_LIMIT)
    if generators and not getattr(sampling_metadata, "all_greedy", False):
        streams = request_streams(generators, counts, call_seed, round, device)
    else:
        streams = call_streams(batch, device, seed=call_seed, round=round)
    call = chain_call(
        target,
        draft,
        tokens,
        streams,
        num_draft_tokens=lengths,
        temperature=temperature,
        placeholder_drafts=True,
    )
    result = verify_call(call, validate=validate)
    out = result.tokens
    finished = result.num_accepted == lengths
    at_length = out.gather(1, lengths[:, None])
    bonus = torch.where(finished[:, None], bonus_token_ids.to(torch.int64), at_length)
    return out.scatter_(1, lengths[:, None], bonus).to(torch.int32)  # no host sync


def check_ragged_inputs(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    *,
    validate: bool,
) -> tuple[torch.Tensor, list[int], int]:
    """vLLM's ragged layout: ([B] int64 lengths, the same lengths as a host list, V). Types,
    shapes and the lengths list are checked always (host work only); with ``validate`` also
    cu_num_draft_tokens against the lengths and the bonus token range (one device pass over
    [B] values)."""
    check_float("target_probs", target_probs, 2)
    check_int("draft_token_ids", draft_token_ids, 1)
    check_int("cu_num_draft_tokens", cu_num_draft_tokens, 1)
    check_int("bonus_token_ids", bonus_token_ids, 2)
    total, vocab = target_probs.shape
    batch = cu_num_draft_tokens.shape[0]
    device = target_probs.device
    spec = as_integer("max_spec_len", max_spec_len, 1 << 31)
    if isinstance(num_draft_tokens, torch.Tensor):
        num_draft_tokens = num_draft_tokens.tolist()
    counts = [
        as_integer(f"num_draft_tokens[{r}]", n, spec + 1) for r, n in enumerate(num_draft_tokens)
    ]
    if len(counts) != batch:
        raise InvalidInputError(
            f"num_draft_tokens has {len(counts)} entries, cu_num_draft_tokens {batch}"
        )
    if sum(counts) != total or draft_token_ids.shape[0] != total:
        raise InvalidInputError(
            f"num_draft_tokens sums to {sum(counts)} (cu_num_draft_tokens[-1] must equal it), "
            f"but draft_token_ids has {draft_token_ids.shape[0]} and target_probs {total} rows"
        )
    if draft_probs is not None:
        check_float("draft_probs", draft_probs, 2)
        if draft_probs.shape != target_probs.shape:
            raise InvalidInputError(
                f"draft_probs must have the shape of target_probs {tuple(target_probs.shape)}, "
                f"got {tuple(draft_probs.shape)}"
            )
    if tuple(bonus_token_ids.shape) != (batch, 1):
        raise InvalidInputError(
            f"bonus_token_ids must have shape ({batch}, 1), got {tuple(bonus_token_ids.shape)}"
        )
    check_same_device(
        target_probs=target_probs,
        draft_probs=draft_probs,
        draft_token_ids=draft_token_ids,
        cu_num_draft_tokens=cu_num_draft_tokens,
        bonus_token_ids=bonus_token_ids,
    )
    lengths = torch.tensor(counts, dtype=torch.int64, device=device)
    if validate:
        mismatch = (lengths.cumsum(0) != cu_num_draft_tokens.to(torch.int64)).any()
        outside = (bonus_token_ids < 0) | (bonus_token_ids >= vocab)
        if not bool(mismatch | outside.any()):  # one host synchronisation
            return lengths, counts, vocab
        if mismatch:
            raise InvalidInputError(
                f"cu_num_draft_tokens {cu_num_draft_tokens.tolist()[:8]} is not the inclusive "
                f"cumsum of num_draft_tokens {counts[:8]}"
            )
        if outside.any():
            r = int(outside.nonzero()[0, 0])
            raise InvalidInputError(
                f"bonus_token_ids[{r}] = {int(bonus_token_ids[r, 0])} is outside 0..{vocab - 1}"
            )
    return lengths, counts, vocab


def _greedy_as_zero_temperature(metadata: Any, batch: int, device: torch.device) -> torch.Tensor:
    """0 for greedy requests, 1 for random ones (probabilities are used as given)."""
    if getattr(metadata, "all_greedy", False):
        return torch.zeros(batch, device=device)
    temperature = getattr(metadata, "temperature", None)
    if getattr(metadata, "all_random", False) or temperature is None:
        return torch.ones(batch, device=device)
    greedy = (temperature == GREEDY_TEMPERATURE) | (temperature == LEGACY_GREEDY_TEMPERATURE)
    return torch.where(greedy.to(device), 0.0, 1.0)


# The drop-ins have the engines' call shapes (mypy checks these two lines).
_flashinfer_shape: FlashInferChainSpeculativeSampling = chain_speculative_sampling
_vllm_shape: VllmRejectionSample = rejection_sample
