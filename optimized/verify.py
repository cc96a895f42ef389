"""Chain verification: the public entry point, backend selection and input checks."""

from __future__ import annotations

from typing import NamedTuple

import torch

from .backend import Backend, resolve_backend
from .checks.chain_call import ChainCall, chain_batch, chain_call
from .checks.content import check_chain_inputs
from .checks.contract import InvalidInputError, duplicate_ids
from .checks.recorded import DeferredChecks
from .checks.row_contents import check_rows_read
from .checks.streams import call_streams


class ChainResult(NamedTuple):
    """``tokens[b]``: accepted drafts, then the residual or bonus token, then -1 padding
    (shape [B, n + 1]); ``num_accepted[b]``: how many drafts were accepted."""

    tokens: torch.Tensor
    num_accepted: torch.Tensor


def chain_verify(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    *,
    seed: int | torch.Tensor,
    num_draft_tokens: torch.Tensor | None = None,
    round: int = 0,
    offset: int | torch.Tensor = 0,
    request_ids: torch.Tensor | None = None,
    target_is_logits: bool = False,
    draft_is_logits: bool = False,
    temperature: torch.Tensor | float | None = None,
    backend: Backend = "auto",
    validate: bool = True,
    placeholder_drafts: bool = False,
) -> ChainResult:
    """Verify a batch of drafted chains (chain speculative sampling).

    ``target`` [B, n + 1, V] and ``draft`` [B, n, V] hold probabilities, or logits when
    ``*_is_logits`` (read at ``temperature`` through a per-row log-sum-exp). ``draft=None`` means
    deterministic drafts (n-gram): q is one-hot at the drafted token. Request b verifies its
    first ``num_draft_tokens[b]`` drafts (all n by default). Rows with temperature 0 are greedy.
    A draft id outside 0..V-1 is never read and never accepted: the request is rejected at that
    position (the final token drawn as at any rejection there, from norm(max(0, p_k - q_k)),
    with n-gram drafts from p_k). ``validate=True`` refuses such ids, except -1 with
    ``placeholder_drafts=True`` (vLLM pads drafts with -1).

    Streams: ``seed`` (the Philox key) and ``offset`` (64-bit: the counter's last two words
    hold round * 2^32 + offset, :mod:`specproof.reference.philox`) are integers
    shared by the batch, or int64 / uint64 tensors of length 1 or B (FlashInfer's convention,
    read on the device, so no host synchronisation): request b then draws at key
    ``seed[b]`` (its 64 bits) and offset ``offset[b]`` (its 64 bits). When either tensor has
    length B > 1 and ``request_ids`` is None, every request draws at request word 0
    (:data:`~specproof.optimized.checks.streams.OWN_STREAM_WORD`), so its tokens depend on
    its own seed and offset, not on its row: alone, in any order or subset of the batch, it
    draws the same; the reference replays it with ``PhiloxSource(seed[b], offset[b])`` at
    request word 0. Integers and length-1 tensors keep request word b (a length-1 tensor gives
    the stream of the same integer). With per-request keys, requests that share a key, id and
    offset share their uniforms, as two generators with one seed do: ids are not required to
    be distinct then.

    Position k (1-based) is accepted when u < p_k(x_k) / q_k(x_k), u the Philox uniform of
    (round, request_ids[b], "accept", k); at the first rejection the token is the inverse CDF of
    norm(max(0, p_k - q_k)) at (.., "residual", k); if all are accepted, of p_{l+1} at
    (.., "bonus", l + 1). This is the reference ``ChainRule`` replayed through ``PhiloxSource``.

    Exactness: the acceptance test is u * q < p in float64, exact for float32 operands; the
    inverse CDF compares float32 cumulative sums with the largest float32 below u * total, also
    exact. So when the probabilities and their partial sums are float32 values (e.g. multiples
    of 2^-20), both backends emit exactly the reference's tokens. With logits, or rows whose
    partial sums round, a token can differ only when a uniform lies within rounding (about
    1e-6 relative) of its exact threshold: the margin rule of the test suite (1e-4) covers it.
    """
    batch, device = chain_batch(target)
    streams = call_streams(
        batch, device, seed=seed, round=round, offset=offset, request_ids=request_ids
    )
    call = chain_call(
        target,
        draft,
        draft_tokens,
        streams,
        num_draft_tokens=num_draft_tokens,
        temperature=temperature,
        target_is_logits=target_is_logits,
        draft_is_logits=draft_is_logits,
        placeholder_drafts=placeholder_drafts,
    )
    return verify_call(call, backend=backend, validate=validate)


def verify_call(
    call: ChainCall, *, backend: Backend = "auto", validate: bool = True
) -> ChainResult:
    """Run a checked call on the chosen backend (:func:`chain_verify` after its argument
    checks; the drop-ins of :mod:`specproof.optimized.compat` come here with streams they
    made)."""
    if resolve_backend(backend, call.target.device) == "triton":
        from .kernels.chain_verify import chain_verify_triton

        tokens, accepted, flags = chain_verify_triton(call, validate=validate)
        if flags is not None:
            # The kernel checked what it read; duplicate ids span requests. One host sync.
            distinct = call.streams.distinct_words
            duplicates = duplicate_ids(call.requests) if distinct else flags.new_zeros(())
            if bool(torch.cat([flags.bool(), duplicates.view(1)]).any()):
                explain_refusal(call, accepted, flags)
        return ChainResult(tokens, accepted)
    if validate:  # the values the caller gave, before the pass that relies on them
        check_call_inputs(call, tokens=False)
    from .torch_backend.chain_verify import chain_verify_torch

    # The drafted tokens and the row contents are checked on values the torch pass computes
    # (it reads an id outside the vocabulary nowhere): one host sync, at the end.
    checks = DeferredChecks() if validate else None
    tokens, accepted = chain_verify_torch(call, checks=checks)
    if checks is not None:
        checks.raise_if_any()
    return ChainResult(tokens, accepted)


def check_call_inputs(call: ChainCall, *, tokens: bool = True) -> None:
    """Every precondition of the call but the row contents
    (:func:`~specproof.optimized.checks.content.check_chain_inputs`); ``tokens`` False leaves
    out the drafted tokens (the torch backend checks them in its pass)."""
    check_chain_inputs(
        call.target,
        call.draft,
        call.draft_tokens,
        call.lengths,
        call.requests,
        call.temperatures,
        target_logits=call.target_logits,
        draft_logits=call.draft_logits,
        given=call.given,
        placeholder_drafts=call.placeholder_drafts,
        distinct_ids=call.streams.distinct_words,
        tokens=tokens,
    )


def explain_refusal(call: ChainCall, accepted: torch.Tensor, flags: torch.Tensor) -> None:
    """The kernel flagged a contract violation: run the detailed checks, which raise with the
    argument and the place; raise a general error if they find nothing."""
    check_call_inputs(call._replace(given=(True, True, True)))
    check_rows_read(
        call.target, call.draft, call.draft_tokens, call.lengths, call.temperatures, accepted,
        target_logits=call.target_logits, draft_logits=call.draft_logits,
    )  # fmt: skip
    flagged = flags.nonzero()[:, 0].tolist()[:8]
    raise InvalidInputError(
        f"chain verification refused the rows of request(s) {flagged}: an entry or row it read "
        "breaks the input contract (NaN, inf, negative mass, a sum off 1, a drafted token of "
        "draft probability 0)"
    )
