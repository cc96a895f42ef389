"""The per-request argument contract shared by every entry point.

``seed`` is the Philox key and ``offset`` the 64-bit stream offset, integers in [0, 2^64)
(the counter's last two words hold round * 2^32 + offset, :mod:`specproof.reference.philox`);
``round`` and each request id are Philox counter words, integers in [0, 2^32). Python ints and
numpy integers are accepted; bools, floats and tensors are refused with
:class:`InvalidInputError` naming the argument, except where an entry point takes per-request
streams (chain verification): there ``seed`` and ``offset`` may also be int64 or uint64
tensors of length 1 or B (:mod:`.streams`).
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
    lengths, temperatures = request_values(
        batch,
        device,
        temperature=temperature,
        num_draft_tokens=num_draft_tokens,
        max_draft_tokens=max_draft_tokens,
    )
    requests = per_request("request_ids", request_ids, batch, device, integral=True)
    if requests is None:
        requests = torch.arange(batch, dtype=torch.int64, device=device)
    return RequestArguments(seed, round, offset, lengths, requests, temperatures)


def request_values(
    batch: int,
    device: torch.device,
    *,
    temperature: object,
    num_draft_tokens: object = None,
    max_draft_tokens: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """([B] int64 draft lengths, [B] float32 temperatures): ``num_draft_tokens`` (None: every
    request drafts ``max_draft_tokens``) and ``temperature`` (None: 1), types and shapes
    checked; a scalar temperature must be finite and >= 0."""
    scalar = isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
    if scalar and not (math.isfinite(temperature) and temperature >= 0):  # type: ignore[arg-type,operator]
        fail(f"temperature must be finite and >= 0, got {temperature}")
    temperatures = per_request("temperature", temperature, batch, device, integral=False)
    if temperatures is None:
        temperatures = torch.ones(batch, dtype=torch.float32, device=device)
    lengths = per_request("num_draft_tokens", num_draft_tokens, batch, device, integral=True)
    if lengths is None:
        lengths = torch.full((batch,), max_draft_tokens, dtype=torch.int64, device=device)
    return lengths, temperatures
