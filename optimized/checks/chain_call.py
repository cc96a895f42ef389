"""The checked arguments of one chain verification, as both backends take them."""

from __future__ import annotations

from typing import NamedTuple

import torch

from .arguments import request_values
from .contract import InvalidInputError, check_chain_shapes
from .streams import Streams


class ChainCall(NamedTuple):
    """One chain verification after the argument checks (:func:`chain_call`): the tensors, the
    per-request values as contiguous [B] tensors, the Philox streams, and the input forms."""

    target: torch.Tensor
    draft: torch.Tensor | None
    draft_tokens: torch.Tensor
    lengths: torch.Tensor
    temperatures: torch.Tensor
    streams: Streams
    target_logits: bool
    draft_logits: bool
    placeholder_drafts: bool
    given: tuple[bool, bool, bool]
    """Which of (num_draft_tokens, request_ids, temperature) the caller passed: the contents
    of values the entry point made itself are not re-checked."""

    @property
    def requests(self) -> torch.Tensor:
        """The request counter words ([B] int64)."""
        return self.streams.words


def chain_batch(target: object) -> tuple[int, torch.device]:
    """(B, device) of a chain verification's ``target`` [B, n + 1, V]."""
    if not isinstance(target, torch.Tensor):
        raise InvalidInputError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if target.dim() != 3:
        raise InvalidInputError(f"target must be [B, n + 1, V], got shape {tuple(target.shape)}")
    return target.shape[0], target.device


def chain_call(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    streams: Streams,
    *,
    num_draft_tokens: object = None,
    temperature: object = None,
    target_is_logits: bool = False,
    draft_is_logits: bool = False,
    placeholder_drafts: bool = False,
) -> ChainCall:
    """The arguments of :func:`specproof.optimized.chain_verify` checked (types, shapes,
    devices; no device work) into a :class:`ChainCall` on ``streams``."""
    batch, positions, _ = target.shape
    lengths, temperatures = request_values(
        batch,
        target.device,
        temperature=temperature,
        num_draft_tokens=num_draft_tokens,
        max_draft_tokens=positions - 1,
    )
    check_chain_shapes(target, draft, draft_tokens, lengths, streams.words, temperatures)
    given = (num_draft_tokens is not None, streams.words_given, temperature is not None)
    return ChainCall(
        target,
        draft,
        draft_tokens,
        lengths.contiguous(),
        temperatures.contiguous(),
        streams,
        target_is_logits,
        draft_is_logits,
        placeholder_drafts,
        given,
    )
