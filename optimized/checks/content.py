"""Checks of tensor contents (ids, temperatures, lengths, tokens, rows), recorded in a
:class:`~specproof.optimized.checks.recorded.DeferredChecks` so that a call reads them back in
one host synchronisation. The messages name the argument, what was expected and what came.
"""

from __future__ import annotations

import torch

from .contract import PLACEHOLDER_DRAFT, WORD_LIMIT, duplicate_ids, outside, sum_tolerance
from .recorded import DeferredChecks, first_index
from .row_contents import improper_rows


def defer_request_ids(
    checks: DeferredChecks, requests: torch.Tensor, *, distinct: bool = True
) -> None:
    """Request ids are Philox counter words, one random stream each: in [0, 2^32), and
    distinct when ``distinct`` (under one shared key)."""
    if requests.numel() == 0:
        return
    checks.add(
        outside(requests, 0, WORD_LIMIT - 1),
        lambda bad: (
            "request_ids must lie in [0, 2^32) (they are Philox counter words), "
            f"got {requests.tolist()[:8]}"
        ),
    )
    if not distinct:
        return
    checks.add(
        duplicate_ids(requests).view(1),
        lambda bad: (
            "request_ids must be distinct: two requests with one id would share one "
            f"random stream (got {requests.tolist()[:8]})"
        ),
    )


def defer_temperature(
    checks: DeferredChecks, temperature: torch.Tensor, *, only: tuple[float, ...] = ()
) -> None:
    """Temperatures finite and >= 0 (0 selects greedy); with ``only``, one of those values."""
    checks.add(
        outside(temperature, 0, torch.finfo(temperature.dtype).max),  # NaN and inf too
        lambda bad: (
            "temperature must be finite and >= 0 (0 selects greedy verification), "
            f"got {temperature.tolist()[:8]}"
        ),
    )
    if only:
        allowed = torch.zeros_like(temperature, dtype=torch.bool)
        for value in only:
            allowed |= temperature == value
        words = " or ".join(f"{v:g}" for v in only)
        checks.add(
            ~allowed,
            lambda bad: (
                f"with probability inputs the temperature can only be {words}; pass "
                "logits to apply another temperature"
            ),
        )


def defer_rows(checks: DeferredChecks, name: str, rows: torch.Tensor, is_logits: bool) -> None:
    """Every [..., V] row: one reduction per row carries every check (NaN and inf propagate
    into it): the maximum of a logits row (NaN, +inf, or -inf for a row with no finite entry),
    the float32 sum and the minimum of a probability row."""
    flat = rows.reshape(-1, rows.shape[-1])
    if flat.numel() == 0:
        return
    tolerance = sum_tolerance(rows.dtype)
    if is_logits:
        maxima = flat.amax(dim=-1)
        bad = torch.isnan(maxima) | torch.isinf(maxima)
    else:
        bad = improper_rows(flat.sum(dim=-1, dtype=torch.float32), flat.amin(dim=-1), tolerance)

    def describe(bad: torch.Tensor) -> str:
        row = flat[first_index(bad)[0]].to(torch.float32)
        if torch.isnan(row).any():
            return f"{name} contains NaN"
        if is_logits:
            if torch.isposinf(row).any():
                return f"{name} (logits) contains +inf"
            return f"{name} (logits) has a row with no finite entry"
        if torch.isinf(row).any():
            return f"{name} contains inf"
        if (row < 0).any():
            return f"{name} has negative probabilities"
        return (
            f"{name} has a row summing to {float(row.sum()):.6g}, more than {tolerance:g} from 1 "
            "(pass logits, or normalise the rows)"
        )

    checks.add(bad, describe)


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
    placeholder_drafts: bool = False,
    distinct_ids: bool = True,
    tokens: bool = True,
) -> None:
    """Every documented precondition of chain verification but the row contents, with one
    host synchronisation. ``given`` says which of (num_draft_tokens, request_ids, temperature)
    the caller passed: the contents of values the entry point made itself are not re-checked.
    With ``placeholder_drafts`` a draft id of -1 is allowed (a rejection at its position).
    ``distinct_ids`` False when per-request keys keep streams apart instead of ids (every
    64-bit per-request offset is valid: nothing to check). ``tokens`` False leaves the drafted
    tokens to the caller (the torch backend records :func:`defer_draft_tokens` on the ids it
    reads, so a default call makes no synchronisation here).
    Row contents are checked by :mod:`specproof.optimized.checks.row_contents` on the values
    verification computes. Shapes, dtypes and devices are the caller's to check first
    (:func:`~specproof.optimized.checks.contract.check_chain_shapes`)."""
    positions, vocab = target.shape[1], target.shape[2]
    n = positions - 1
    lengths_given, requests_given, temperature_given = given
    if not (tokens or any(given)):
        return  # nothing of the caller's to check here (the default call)
    checks = DeferredChecks()
    if lengths_given:
        checks.add(
            outside(lengths, 0, n),
            lambda bad: f"num_draft_tokens must lie in 0..{n}, got {lengths.tolist()[:8]}",
        )
    if requests_given:
        defer_request_ids(checks, requests, distinct=distinct_ids)
    if temperature_given:
        probabilities_only = not (target_logits or draft_logits)
        defer_temperature(checks, temperature, only=(0.0, 1.0) if probabilities_only else ())
    if tokens:
        verified = torch.arange(n, device=target.device)[None, :] < lengths[:, None]  # [B, n]
        bad = verified & refused_tokens(draft_tokens, vocab, placeholder_drafts)
        defer_draft_tokens(checks, bad, draft_tokens, vocab)
    checks.raise_if_any()


def refused_tokens(
    draft_tokens: torch.Tensor, vocab: int, placeholder_drafts: bool
) -> torch.Tensor:
    """Drafted ids outside 0..V-1 (outside -1..V-1 with ``placeholder_drafts``: vLLM's -1 is a
    rejection there, not a refused input), at every position: the caller masks the positions
    it verifies."""
    low = PLACEHOLDER_DRAFT if placeholder_drafts else 0
    return outside(draft_tokens, low, vocab - 1)


def defer_draft_tokens(
    checks: DeferredChecks, bad: torch.Tensor, draft_tokens: torch.Tensor, vocab: int
) -> None:
    """Record ``bad`` ([B, n]: verified positions holding a :func:`refused_tokens` id), worded
    with the first one's id, request and position."""

    def message(bad: torch.Tensor) -> str:
        b, k = first_index(bad)
        return (
            f"draft token {int(draft_tokens[b, k])} at request {b}, position {k} "
            f"is outside 0..{vocab - 1}"
        )

    checks.add(bad, message)
