"""The per-request argument contract shared by every entry point.

``seed`` is the Philox key and ``offset`` the 64-bit stream offset, integers in [0, 2^64)
(the counter's last two words hold round * 2^32 + offset, :mod:`specproof.reference.philox`);
``round`` and each request id are Philox counter words, integers in [0, 2^32). Python ints and
numpy integers are accepted; bools, floats and tensors are refused with
:class:`InvalidInputError` naming the argument, except where an entry point takes per-request
streams (chain verification): there ``seed`` and ``offset`` may also be int64 or uint64
tensors of length 1 or B (:func:`row_words`).
Per-request values (temperature, request ids, draft lengths) may be a scalar, a sequence or a
0-d / [B] tensor on the call's device; they become contiguous [B] tensors (O(B) work).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import NamedTuple

import torch

from .contract import INT_DTYPES, WORD_LIMIT, fail

SEED_LIMIT = 1 << 64


def as_integer(name: str, value: object, limit: int) -> int:
    """A Python int in [0, limit) from an int or numpy integer; bools and floats refused."""
    if isinstance(value, (bool, torch.Tensor)):
        fail(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        fail(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if not 0 <= number < limit:
        bound = "2^64" if limit == SEED_LIMIT else "2^32" if limit == WORD_LIMIT else str(limit)
        fail(f"{name} must be an integer in [0, {bound}), got {number}")
    return number


def check_seed_words(seed: object, round: object, offset: object) -> tuple[int, int, int]:
    """The Philox key (``seed`` in [0, 2^64)), counter word ``round`` (in [0, 2^32)) and
    64-bit ``offset`` (in [0, 2^64)), as Python ints."""
    return (
        as_integer("seed", seed, SEED_LIMIT),
        as_integer("round", round, WORD_LIMIT),
        as_integer("offset", offset, SEED_LIMIT),
    )


def row_words(
    seed: object, offset: object, batch: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-request Philox words from ``seed`` and ``offset``, each an integer (the same for
    every request) or an int64 / uint64 tensor of length 1 or B on ``device``; returned as [B]
    int64 tensors. Both keep their 64 bits (an int64 s < 0 is s + 2^64, as FlashInfer reads
    its uint64 seeds and offsets; a uint64 one is read as the same bits); the values are not
    read here (no host synchronisation), and every value is valid."""
    words = []
    for name, value, limit in (("seed", seed, SEED_LIMIT), ("offset", offset, SEED_LIMIT)):
        if not isinstance(value, torch.Tensor):
            number = as_integer(name, value, limit)
            if number >= 1 << 63:  # the same 64 bits as a signed int64
                number -= 1 << 64
            words.append(torch.full((batch,), number, dtype=torch.int64, device=device))
            continue
        if value.dtype not in (torch.int64, torch.uint64):
            fail(f"{name} must be an int64 or uint64 tensor, got {value.dtype}")
        if value.dim() != 1 or value.shape[0] not in (1, batch):
            fail(f"{name} must have shape (1,) or ({batch},), got {tuple(value.shape)}")
        if value.device != device:
            fail(f"{name} is on {value.device}, the other tensors on {device}")
        words.append(value.view(torch.int64).expand(batch))
    return words[0], words[1]


OWN_STREAM_WORD = 0
"""The request counter word of a request that draws on a stream of its own (a key, or a key and
offset, of its own): its uniforms then depend on that stream only, not on its row, so it draws
the same alone, in any batch and at any row."""


def own_streams(seed: object, offset: object, batch: int) -> bool:
    """True when ``seed`` or ``offset`` is a tensor with one entry per request (length B > 1,
    FlashInfer's per-row convention): every request then draws at :data:`OWN_STREAM_WORD`.
    Integers and length-1 tensors keep the row's position as its word (a call-wide stream)."""
    return batch > 1 and any(
        isinstance(value, torch.Tensor) and value.dim() == 1 and value.shape[0] == batch
        for value in (seed, offset)
    )


def stream_request_words(
    seed: object, offset: object, batch: int, device: torch.device
) -> torch.Tensor:
    """The request words of a call given no request ids, as a [B] int64 tensor: all
    :data:`OWN_STREAM_WORD` under :func:`own_streams`, else the row positions 0..B-1. (For
    B = 1 the two agree: a request alone draws at word 0 either way.)"""
    if own_streams(seed, offset, batch):
        return torch.full((batch,), OWN_STREAM_WORD, dtype=torch.int64, device=device)
    return torch.arange(batch, dtype=torch.int64, device=device)


def per_request(
    name: str,
    value: object,
    batch: int,
    device: torch.device,
    *,
    integral: bool,
) -> torch.Tensor | None:
    """A [B] tensor on ``device`` from a scalar, a sequence or a [B] / 0-d tensor (None stays
    None). Integer values become int64, real values float32. Only metadata is read here."""
    if value is None:
        return None
    kind = "integer" if integral else "real"
    if isinstance(value, torch.Tensor):
        tensor = value
    elif isinstance(value, bool):
        fail(f"{name} must be {kind} per request, got the bool {value!r}")
    elif isinstance(value, Sequence) and not isinstance(value, str):
        items = list(value)
        if any(isinstance(v, bool) for v in items):
            fail(f"{name} must hold {kind} values, got a bool in {items!r}")
        try:
            numbers = [operator.index(v) if integral else float(v) for v in items]
        except (TypeError, ValueError):
            fail(f"{name} must hold {kind} values, got {items!r}")
        dtype = torch.int64 if integral else torch.float32
        tensor = torch.tensor(numbers, dtype=dtype, device=device)
    else:
        try:
            scalar: float = operator.index(value) if integral else float(value)  # type: ignore
        except (TypeError, ValueError):
            fail(f"{name} must be {kind} (a scalar, a sequence or a tensor), got {value!r}")
        dtype = torch.int64 if integral else torch.float32
        return torch.full((batch,), scalar, dtype=dtype, device=device)
    if integral and tensor.dtype not in INT_DTYPES:
        fail(f"{name} must be an int32 or int64 tensor, got {tensor.dtype}")
    if not integral and (tensor.dtype == torch.bool or tensor.is_complex()):
        fail(f"{name} must be a real tensor, got {tensor.dtype}")
    if tensor.dim() == 0:
        tensor = tensor.expand(batch)
    if tuple(tensor.shape) != (batch,):
        fail(f"{name} must have shape ({batch},) (one per request), got {tuple(tensor.shape)}")
    if tensor.device != device:
        fail(f"{name} is on {tensor.device}, the other tensors on {device}")
    dtype = torch.int64 if integral else torch.float32
    return tensor.to(dtype).contiguous()


class RequestArguments(NamedTuple):
    """Per-call arguments after :func:`request_arguments`: Python ints and [B] tensors."""

    seed: int
    round: int
    offset: int
    lengths: torch.Tensor
    requests: torch.Tensor
    temperatures: torch.Tensor


def request_arguments(
    batch: int,
    device: torch.device,
    *,
    seed: object,
    round: object,
    offset: object,
    request_ids: object,
    temperature: object,
    num_draft_tokens: object = None,
    max_draft_tokens: int = 0,
) -> RequestArguments:
    """The seed / round / offset / request-id / temperature / length contract shared by every
    entry point: types, shapes, devices and Python scalars, checked even with
    ``validate=False`` (no device work). Tensor contents (ranges, distinct ids) are checked by
    the entry points (:mod:`specproof.optimized.checks.content`)."""
    seed, round, offset = check_seed_words(seed, round, offset)
    scalar = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
    if scalar and not (math.isfinite(temperature) and temperature >= 0):  # type: ignore[arg-type,operator]
        fail(f"temperature must be finite and >= 0, got {temperature}")
    temperatures = per_request("temperature", temperature, batch, device, integral=False)
    if temperatures is None:
        temperatures = torch.ones(batch, dtype=torch.float32, device=device)
    requests = per_request("request_ids", request_ids, batch, device, integral=True)
    lengths = per_request("num_draft_tokens", num_draft_tokens, batch, device, integral=True)
    if lengths is None:
        lengths = torch.full((batch,), max_draft_tokens, dtype=torch.int64, device=device)
    if requests is None:
        requests = torch.arange(batch, dtype=torch.int64, device=device)
    return RequestArguments(seed, round, offset, lengths, requests, temperatures)
