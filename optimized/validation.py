"""Input checks for the optimized entry points: a clear error, never silently wrong output.

Argument checks (types, dtypes, shapes, devices, the Philox words: see
:mod:`specproof.optimized.arguments`) run on every call. With ``validate=True`` the checks here
read tensor contents at O(B * n) cost (lengths, token ids at verified positions, distinct
request ids, temperatures); the row contents of chain verification are checked by
:mod:`specproof.optimized.row_checks`, those of trees and draft sampling by :func:`check_rows`.
With ``validate=False`` the caller guarantees what these checks prove: lengths in 0..n; token
ids in 0..V-1 at every verified position; request ids distinct and in [0, 2^32); temperatures
finite and >= 0; logits never NaN or +inf (-inf allowed) with a finite entry per row;
probability rows non-negative and summing to 1 within :func:`sum_tolerance`; every drafted
token has positive draft probability. Violations then give unspecified tokens (never
out-of-bounds memory access for in-range ids and lengths). The README's "Bad input" section
lists every check.
"""

from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INT_DTYPES = (torch.int32, torch.int64)


class InvalidInputError(ValueError):
    """An input violates the documented contract of a verification or sampling call."""


def sum_tolerance(dtype: torch.dtype) -> float:
    """How far a probability row's sum may be from 1: 1e-3 in float32, 1e-2 in 16-bit floats."""
    return 1e-3 if dtype == torch.float32 else 1e-2


def fail(message: str) -> None:
    raise InvalidInputError(message)


WORD_LIMIT = 1 << 32


def check_request_ids(requests: torch.Tensor) -> None:
    """Request ids are Philox counter words, one random stream each: in [0, 2^32), distinct."""
    if requests.numel() == 0:
        return
    if ((requests < 0) | (requests >= WORD_LIMIT)).any():
        fail(
            "request_ids must lie in [0, 2^32) (they are Philox counter words), "
            f"got {requests.tolist()[:8]}"
        )
    if requests.unique().numel() != requests.numel():
        fail(
            "request_ids must be distinct: two requests with one id would share one random "
            f"stream (got {requests.tolist()[:8]})"
        )


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


def check_rows(
    name: str, rows: torch.Tensor, is_logits: bool, where: torch.Tensor | None = None
) -> None:
    """Check [..., V] rows selected by the boolean mask ``where`` (all rows when None).

    One reduction per row carries every check (NaN and inf propagate into it): the maximum of
    a logits row (NaN, +inf, or -inf for a row with no finite entry), the float32 sum and the
    minimum of a probability row. One host synchronisation; the slow wording runs only for a
    row that fails."""
    flat = rows.reshape(-1, rows.shape[-1])
    if where is not None:
        flat = flat[where.reshape(-1)]
    if flat.numel() == 0:
        return
    if is_logits:
        maxima = flat.amax(dim=-1)
        bad = torch.isnan(maxima) | torch.isinf(maxima)
    else:
        sums = flat.sum(dim=-1, dtype=torch.float32)
        tolerance = sum_tolerance(rows.dtype)
        bad = ~torch.isfinite(sums) | (flat.amin(dim=-1) < 0) | ((sums - 1).abs() > tolerance)
    if not bool(bad.any()):
        return
    row = flat[int(bad.nonzero()[0, 0])].to(torch.float32)
    if torch.isnan(row).any():
        fail(f"{name} contains NaN")
    if is_logits:
        if torch.isposinf(row).any():
            fail(f"{name} (logits) contains +inf")
        fail(f"{name} (logits) has a row with no finite entry")
    if torch.isinf(row).any():
        fail(f"{name} contains inf")
    if (row < 0).any():
        fail(f"{name} has negative probabilities")
    fail(
        f"{name} has a row summing to {float(row.sum()):.6g}, more than {tolerance:g} from 1 "
        "(pass logits, or normalise the rows)"
    )


def check_temperature(temperature: torch.Tensor, batch: int, probabilities_only: bool) -> None:
    if temperature.shape != (batch,):
        fail(f"temperature must have shape ({batch},), got {tuple(temperature.shape)}")
    if not torch.isfinite(temperature).all() or (temperature < 0).any():
        fail(
            "temperature must be finite and >= 0 (0 selects greedy verification), "
            f"got {temperature.tolist()[:8]}"
        )
    if probabilities_only and not ((temperature == 0) | (temperature == 1)).all():
        fail(
            "with probability inputs the temperature can only be 0 (greedy) or 1 (as given); "
            "pass logits to apply another temperature"
        )


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


def check_chain_inputs(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    target_logits: bool,
    draft_logits: bool,
    given: tuple[bool, bool, bool] = (True, True, True),
) -> None:
    """Every documented precondition of chain verification but the row contents (see the
    module docstring). ``given`` says which of (num_draft_tokens, request_ids, temperature) the
    caller passed: the contents of values the entry point made itself are not re-checked."""
    check_chain_shapes(target, draft, draft_tokens, lengths, requests, temperature)
    batch, positions, vocab = target.shape
    n = positions - 1
    lengths_given, requests_given, temperature_given = given
    if lengths_given and ((lengths < 0) | (lengths > n)).any():
        fail(f"num_draft_tokens must lie in 0..{n}, got {lengths.tolist()[:8]}")
    if requests_given:
        check_request_ids(requests)
    if temperature_given:
        check_temperature(temperature, batch, not (target_logits or draft_logits))
    positions_index = torch.arange(n, device=target.device)
    verified = positions_index[None, :] < lengths[:, None]  # [B, n]
    bad = verified & ((draft_tokens < 0) | (draft_tokens >= vocab))
    if bad.any():
        b, k = (int(i) for i in bad.nonzero()[0])
        fail(
            f"draft token {int(draft_tokens[b, k])} at request {b}, position {k} "
            f"is outside 0..{vocab - 1}"
        )
    # Row contents (NaN, inf, mass, sums, draft probability 0) are checked by
    # specproof.optimized.row_checks on the values verification computes.
