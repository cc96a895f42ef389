"""Content checks of the rows chain verification reads: NaN, inf, negative mass, row sums, a
drafted token with draft probability 0, a logits row with no finite entry.

They cost almost nothing because they look only at values the verification computes anyway
(the entries it gathers; for rows read in full, the sum and minimum the torch backend's copy of
the row keeps, :mod:`specproof.optimized.torch_backend.fused_gather`, and the Triton kernel's
residual pass), and they cost one host synchronisation per call (they are recorded in a
:class:`~specproof.optimized.checks.recorded.DeferredChecks`). The contract
(with ``validate=True``; argument checks live in :mod:`specproof.optimized.checks.contract`):

- Probabilities, rows read at one entry (every target and draft row of a verified position):
  the entry at the drafted token must be finite, >= 0 and at most 1 + tolerance, and the draft
  entry must be > 0 where the request samples. **Their other entries and their sums are not
  checked**: verification never reads them, so they cannot change the output.
- Probabilities, rows read in full (the target row whose residual or bonus token is drawn, and
  the draft row of a rejected position): finite, non-negative, summing to 1 within
  :func:`~specproof.optimized.checks.contract.sum_tolerance`.
- Logits: every row reached (target and draft rows up to and including the first rejection,
  and the row of the final token) goes through a softmax; a NaN, a +inf or no finite entry
  makes its probabilities NaN, which is detected there. The drafted token's logit at every
  verified position must not be NaN or +inf, nor -inf where the request samples.
- Greedy requests (temperature 0): each row reached is read by a max; a NaN or inf maximum
  (or no finite entry, for logits) is refused; sums are not checked (the argmax does not
  depend on them).

Rows after a request's first rejection, and padding rows beyond its length, are neither read
nor checked. The Triton kernel checks what it reads and returns one flag per request; only
when one is set does :func:`check_rows_read` re-read the rows the kernel read, to word the
error.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch

from .contract import outside, sum_tolerance
from .recorded import DeferredChecks, first_index


def at(where: str, index: tuple[int, ...]) -> str:
    return f"{where} at request {index[0]}" + (f", position {index[1]}" if len(index) > 1 else "")


def check_gathered(
    checks: DeferredChecks,
    name: str,
    values: torch.Tensor,
    where: torch.Tensor,
    *,
    is_logits: bool,
    dtype: torch.dtype,
    sampled: torch.Tensor | None = None,
) -> None:
    """Entries read at the drafted tokens ([B, n] ``values`` in float32, masked by ``where``).
    ``sampled`` marks, for the draft, where the token must have positive probability.

    One mask covers every way an entry can be wrong (NaN fails every comparison); which way
    is worked out on the error path, for the first bad entry."""
    if is_logits:
        # NaN or +inf: -inf is a logit of probability 0.
        not_below_inf = outside(values, None, torch.finfo(values.dtype).max)
        checks.add(where & not_below_inf, lambda bad: logit_entry(name, values, bad))
        if sampled is not None:
            zero = sampled & torch.isneginf(values)
            checks.add(zero, lambda bad: draft_zero_message(first_index(bad)))
        return
    ceiling = 1 + sum_tolerance(dtype)
    checks.add(
        where & outside(values, 0, ceiling), lambda bad: probability_entry(name, values, bad)
    )
    if sampled is not None:
        zero = sampled & values.logical_not()  # == 0 (-0.0 too), without a scalar operand
        checks.add(zero, lambda bad: draft_zero_message(first_index(bad)))


def logit_entry(name: str, values: torch.Tensor, bad: torch.Tensor) -> str:
    index = first_index(bad)
    value = float(values[index])
    return at(
        f"{name} contains NaN" if math.isnan(value) else f"{name} (logits) contains +inf", index
    )


def probability_entry(name: str, values: torch.Tensor, bad: torch.Tensor) -> str:
    index = first_index(bad)
    value = float(values[index])
    if math.isnan(value):
        problem = "contains NaN"
    elif math.isinf(value):
        problem = "contains inf"
    elif value < 0:
        problem = "has negative probabilities"
    else:
        problem = "has a probability above 1"
    return at(f"{name} {problem}", index)


def draft_zero_message(index: tuple[int, ...]) -> str:
    return (
        f"the draft token at request {index[0]}, position {index[1]} has draft probability 0: "
        "it cannot have been drawn from that row"
    )


def check_full_rows(
    checks: DeferredChecks,
    name: str,
    sums: torch.Tensor,
    minima: torch.Tensor,
    dtype: torch.dtype,
    requests: torch.Tensor,
    *,
    improper: torch.Tensor | None = None,
) -> None:
    """Probability rows read in full, by their float32 sums and minima (``requests`` names
    the request of each row, for the message). One mask: NaN and inf propagate into the sum,
    which then fails the tolerance test; the wording is chosen on the error path. ``improper``:
    the mask :func:`improper_rows` gives, where the row copy made it already."""
    tolerance = sum_tolerance(dtype)

    def describe(bad: torch.Tensor) -> str:
        row = first_index(bad)[0]
        total, least = float(sums[row]), float(minima[row])
        request = int(requests[row])
        if math.isnan(total) or math.isnan(least):
            return f"{name} contains NaN (request {request})"
        if math.isinf(total):
            return f"{name} contains inf (request {request})"
        if least < 0:
            return f"{name} has negative probabilities (request {request})"
        return (
            f"{name} has a row summing to {total:.6g} (request {request}), more than "
            f"{tolerance:g} from 1 (pass logits, or normalise the rows)"
        )

    if improper is None:
        improper = improper_rows(sums, minima, tolerance)
    checks.add(improper, describe)


def improper_rows(sums: torch.Tensor, minima: torch.Tensor, tolerance: float) -> torch.Tensor:
    """Rows that are not probability vectors, from their float32 sums and their minima: a
    negative entry, or a sum more than ``tolerance`` from 1 (a NaN or inf entry makes the sum
    fail). ``~((minima >= 0) & ((sums - 1).abs() <= tolerance))``, as bounds on the sum
    (:func:`sum_bounds`), without scalar operands."""
    low, high = sum_bounds(tolerance)
    return outside(minima, 0, None) | outside(sums.to(torch.float32), low, high)


@functools.cache
def sum_bounds(tolerance: float) -> tuple[float, float]:
    """[low, high]: the float32 sums s that pass ``(s - 1).abs() <= tolerance`` in float32 (the
    tolerance rounded to float32, t). For s in [1/2, 2], s - 1 is exact, so the test is
    1 - t <= s <= 1 + t over the reals, and no float32 outside [1/2, 2] is within t < 1/2 of
    1: low and high are the float32 values nearest inside those real bounds."""
    t = np.float32(tolerance)
    one = np.float32(1)
    low, high = one - t, one + t  # float32 arithmetic: rounded to nearest
    if float(low) < 1 - float(t):  # both exact in float64
        low = np.nextafter(low, one)
    if float(high) > 1 + float(t):
        high = np.nextafter(high, one)
    return float(low), float(high)


def check_softmax_values(
    checks: DeferredChecks,
    name: str,
    probabilities: torch.Tensor,
    rows: Callable[[tuple[int, ...]], torch.Tensor],
    where: torch.Tensor | None = None,
) -> None:
    """Probabilities computed from reached logits rows (those ``where`` marks, when given):
    NaN means the row held a NaN, a +inf, or no finite entry. ``rows(index)`` returns the
    logits row of the entry at ``index`` (error path only)."""

    def describe(bad: torch.Tensor) -> str:
        row = rows(first_index(bad)).to(torch.float32)
        if torch.isnan(row).any():
            return f"{name} contains NaN"
        if torch.isposinf(row).any():
            return f"{name} (logits) contains +inf"
        if not torch.isfinite(row).any():
            return f"{name} (logits) has a row with no finite entry"
        return f"{name} (logits) gives NaN probabilities"

    nan = torch.isnan(probabilities)
    checks.add(nan if where is None else where & nan, describe)


def check_maxima(checks: DeferredChecks, name: str, maxima: torch.Tensor, is_logits: bool) -> None:
    """Maxima of rows read by a max (greedy rows; every reached logits row in
    :func:`check_rows_read`): NaN and inf propagate into them."""
    checks.add(torch.isnan(maxima), lambda bad: f"{name} contains NaN")
    if is_logits:
        checks.add(torch.isposinf(maxima), lambda bad: f"{name} (logits) contains +inf")
        checks.add(
            torch.isneginf(maxima), lambda bad: f"{name} (logits) has a row with no finite entry"
        )
    else:
        checks.add(torch.isinf(maxima), lambda bad: f"{name} contains inf")


def check_rows_read(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    temperature: torch.Tensor,
    accepted: torch.Tensor,
    *,
    target_logits: bool,
    draft_logits: bool,
) -> None:
    """The same contract, checked after a kernel ran, from its ``accepted`` counts: re-reads
    the rows it read (a second pass; the torch backend checks inside its own pass)."""
    batch, positions, _ = target.shape
    n = positions - 1
    checks = DeferredChecks()
    verified = torch.arange(n, device=target.device)[None, :] < lengths[:, None]
    reached = torch.arange(n, device=target.device)[None, :] <= accepted[:, None]
    reached &= verified
    greedy = temperature == 0
    sampled = verified & ~greedy[:, None]
    # An out-of-range draft (a placeholder) is never read: its position is rejected unread.
    read = verified & (draft_tokens >= 0) & (draft_tokens < target.shape[-1])
    sampled &= read
    tokens = torch.where(read, draft_tokens, 0).to(torch.int64)
    p_x = target[:, :n].gather(2, tokens[..., None])[..., 0].to(torch.float32)
    check_gathered(checks, "target", p_x, read, is_logits=target_logits, dtype=target.dtype)
    if draft is not None:
        q_x = draft.gather(2, tokens[..., None])[..., 0].to(torch.float32)
        check_gathered(
            checks,
            "draft",
            q_x,
            read,
            is_logits=draft_logits,
            dtype=draft.dtype,
            sampled=sampled,
        )
    everyone = torch.arange(batch, device=target.device)
    rows_b, rows_k = reached.nonzero(as_tuple=True)
    final_k = accepted.to(torch.int64)
    all_b = torch.cat([rows_b, everyone])
    all_k = torch.cat([rows_k, final_k])
    if target_logits or bool(greedy.any()):
        values = target[all_b, all_k].to(torch.float32)
        check_maxima(checks, "target", values.amax(dim=-1), target_logits)
    if not target_logits:
        final = target[everyone, final_k].to(torch.float32)
        keep = ~greedy
        check_full_rows(
            checks,
            "target",
            final.sum(-1)[keep],
            final.amin(-1)[keep],
            target.dtype,
            everyone[keep],
        )
    if draft is not None:
        rejected = (accepted < lengths) & ~greedy
        q_rows = draft[rows_b, rows_k].to(torch.float32) if draft_logits else None
        if q_rows is not None:
            check_maxima(checks, "draft", q_rows.amax(dim=-1), True)
        elif bool(rejected.any()):
            index = everyone[rejected]
            rows = draft[index, final_k[rejected]].to(torch.float32)
            check_full_rows(checks, "draft", rows.sum(-1), rows.amin(-1), draft.dtype, index)
    checks.raise_if_any()
