"""Input checks for the optimized entry points: a clear error, never silently wrong output.

Argument checks (types, dtypes, shapes, devices, the Philox words: see :mod:`.arguments`) run
on every call. With ``validate=True`` the checks read tensor contents at O(B * n) cost (lengths,
token ids at verified positions, distinct request ids, temperatures: :mod:`.content`); the row
contents of chain verification are checked by :mod:`.row_contents`, those of trees and draft
sampling by :func:`~.content.defer_rows`.
With ``validate=False`` the caller guarantees what these checks prove: lengths in 0..n; request
ids distinct and in [0, 2^32); temperatures finite and >= 0; logits never NaN or +inf (-inf
allowed) with a finite entry per row; probability rows non-negative and summing to 1 within
:func:`sum_tolerance`; every drafted token has positive draft probability. Violations then give
unspecified tokens (never out-of-bounds memory access for in-range lengths). A draft or tree
candidate id outside 0..V-1 is refused when validating; without validation every kernel treats
it as a draft it never reads and never accepts (a rejection at its position).
docs/reference/optimized.md's "Bad input" section lists every check.
"""

from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INT_DTYPES = (torch.int32, torch.int64)
WORD_LIMIT = 1 << 32
"""Philox counter words (round, request ids) lie in [0, 2^32); offsets are 64-bit."""
PLACEHOLDER_DRAFT = -1
"""vLLM's padding draft id: with ``placeholder_drafts=True`` it is a rejection at its position
(never read), not a refused input. Every other id outside 0..V-1 is refused when validating."""


class InvalidInputError(ValueError):
    """An input violates the documented contract of a verification or sampling call."""


def sum_tolerance(dtype: torch.dtype) -> float:
    """How far a probability row's sum may be from 1: 1e-3 in float32, 1e-2 in 16-bit floats."""
    return 1e-3 if dtype == torch.float32 else 1e-2


def outside(values: torch.Tensor, low: float | None, high: float | None) -> torch.Tensor:
    """Where ``values`` lie outside [low, high] or are NaN: ``~((values >= low) & (values <=
    high))`` in two operations (None: no bound on that side). The bounds are rounded to the
    dtype of ``values`` as a comparison rounds them, and NaN stays NaN through the clamp. A
    comparison with a Python number first wraps it in a tensor, which on small tensors costs
    about as much as the operation; the clamp takes its bounds as they are."""
    return torch.clamp(values, low, high) != values


def fail(message: str) -> None:
    raise InvalidInputError(message)


def check_float(name: str, tensor: torch.Tensor, ndim: int) -> None:
    if not isinstance(tensor, torch.Tensor):
        fail(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in FLOAT_DTYPES:
        fail(f"{name} must be float32, float16 or bfloat16, got {tensor.dtype}")
    if tensor.dim() != ndim:
        fail(f"{name} must have {ndim} dimensions, got shape {tuple(tensor.shape)}")


def check_int(name: str, tensor: torch.Tensor, ndim: int) -> None:
    if not isinstance(tensor, torch.Tensor):
        fail(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in INT_DTYPES:
        fail(f"{name} must be int32 or int64, got {tensor.dtype}")
    if tensor.dim() != ndim:
        fail(f"{name} must have {ndim} dimensions, got shape {tuple(tensor.shape)}")


def check_same_device(**tensors: torch.Tensor | None) -> None:
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if len(set(devices.values())) > 1:
        fail(f"all tensors must be on one device, got {devices}")


def check_chain_shapes(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
) -> None:
    """Types, dtypes, shapes and devices of chain verification's tensors (metadata only)."""
    check_float("target", target, 3)
    batch, positions, vocab = target.shape
    n = positions - 1
    if positions < 1:
        fail("target needs n + 1 >= 1 positions (the last one is the bonus row)")
    if vocab < 1:
        fail("the vocabulary must hold at least one token")
    check_int("draft_tokens", draft_tokens, 2)
    if tuple(draft_tokens.shape) != (batch, n):
        fail(f"draft_tokens must have shape ({batch}, {n}), got {tuple(draft_tokens.shape)}")
    if draft is not None:
        check_float("draft", draft, 3)
        if tuple(draft.shape) != (batch, n, vocab):
            fail(f"draft must have shape ({batch}, {n}, {vocab}), got {tuple(draft.shape)}")
    check_int("num_draft_tokens", lengths, 1)
    if tuple(lengths.shape) != (batch,):
        fail(f"num_draft_tokens must have shape ({batch},), got {tuple(lengths.shape)}")
    check_int("request_ids", requests, 1)
    if tuple(requests.shape) != (batch,):
        fail(f"request_ids must have shape ({batch},), got {tuple(requests.shape)}")
    if temperature.shape != (batch,):
        fail(f"temperature must have shape ({batch},), got {tuple(temperature.shape)}")
    check_same_device(
        target=target,
        draft=draft,
        draft_tokens=draft_tokens,
        num_draft_tokens=lengths,
        request_ids=requests,
        temperature=temperature,
    )


def duplicate_ids(requests: torch.Tensor) -> torch.Tensor:
    """A 0-d bool tensor, True when two request ids are equal (no host synchronisation)."""
    ordered = requests.sort().values
    return (ordered[1:] == ordered[:-1]).any()
