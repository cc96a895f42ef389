"""Chain verification in torch, with the semantics and random stream of the fused Triton kernel.

It reads only what the result needs:

- probabilities: one gather of p(x_k) and q(x_k) over all verified positions decides every
  acceptance at once; only the final row of each request (target, and draft at a rejection) is
  read in full, to draw the residual or bonus token;
- logits: a loop over positions (never over requests) softmaxes, at position k, only the rows
  of requests still accepting; the rows of a request rejected at k are used right there for
  its residual, and a bonus row is softmaxed once, after the loop. Rows after a request's
  first rejection are never read. Small logits (:data:`SOFTMAX_AT_ONCE`) are softmaxed in one
  call instead and then decided like probabilities, in one pass; only the rows reached are
  checked, as in the loop.

The inverse CDF is a binary search in the cumulative sums (no multinomial, no [R, V] index
temporaries). With a :class:`~specproof.optimized.checks.recorded.DeferredChecks`, the content
checks are made on the values computed here (see
:mod:`specproof.optimized.checks.row_contents` for the contract).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
import torch
from specproof.reference.philox import UNIFORM_BITS
from specproof.reference.philox import philox4x32 as philox4x32_python

from ..checks.chain_call import ChainCall
from ..checks.content import defer_draft_tokens, refused_tokens
from ..checks.contract import sum_tolerance
from ..checks.recorded import DeferredChecks
from ..checks.row_contents import (
    check_full_rows,
    check_gathered,
    check_maxima,
    check_softmax_values,
    sum_bounds,
)
from ..checks.streams import Streams
from ..philox import (
    ACCEPT,
    BONUS,
    RESIDUAL,
    int64_bits,
    philox4x32,
    philox_rounds_numpy,
    position_words,
    uint64_words,
)
from .rows import gather_rows, gather_rows_with_stats, sample_tiled, softmax_rows_, workspace

SOFTMAX_AT_ONCE = 2**17
"""Logits of at most this many entries are softmaxed in one call (:meth:`Rows.softmax_all_rows`)
rather than position by position: reading rows past a rejection costs less there than the
calls."""


class FullRows(NamedTuple):
    """Statistics of probability rows read in full, for their checks: float32 sums and minima,
    the request of each row, and the copy's verdict where it gave one."""

    sums: torch.Tensor
    minima: torch.Tensor
    requests: torch.Tensor
    improper: torch.Tensor | None = None


class Rows:
    """One side (target or draft) of the verification: reads its rows as probabilities."""

    def __init__(
        self,
        name: str,
        values: torch.Tensor,
        is_logits: bool,
        temperature: torch.Tensor | None,
        checks: DeferredChecks | None,
    ) -> None:
        self.name, self.values, self.is_logits = name, values, is_logits
        self.temperature, self.checks = temperature, checks
        self.full_rows: list[FullRows] = []
        self.copy_checked = False
        self.softmaxed: torch.Tensor | None = None

    def softmax_all_rows(self) -> None:
        """Softmax every row now, in one call, when the logits are small (at most
        :data:`SOFTMAX_AT_ONCE` entries): a row's softmax does not depend on the other rows
        in the call, so later reads take the same values from this copy. On a busy CPU each
        softmax call can wait milliseconds for its worker threads, whatever its size."""
        if not self.is_logits or self.values.numel() > SOFTMAX_AT_ONCE:
            return
        batch, positions, vocab = self.values.shape
        rows = self.values.reshape(batch * positions, vocab).to(torch.float32, copy=True)
        scale = None
        if self.temperature is not None:
            scale = self.temperature.repeat_interleave(positions)
        self.softmaxed = softmax_rows_(rows, scale).view(batch, positions, vocab)

    def probabilities(
        self,
        batch_index: torch.Tensor,
        position: torch.Tensor,
        requests: torch.Tensor,
        into: str | None = None,
        known_sums: bool = False,
    ) -> torch.Tensor:
        """Float32 probability rows [R, V] of (batch_index[i], position[i]), in the workspace
        ``into`` when given; full-row checks recorded (for logits the NaN test is made on
        values taken from the result, see :meth:`check_softmax`). With ``known_sums`` the
        caller records the sums itself (:meth:`record_sums`), from a pass it makes anyway, where
        the copy gives none."""
        if self.softmaxed is not None:
            return gather_rows(self.softmaxed, batch_index, position, into)
        if self.is_logits:
            rows = gather_rows(self.values, batch_index, position, into)
            scale = None if self.temperature is None else self.temperature[batch_index]
            return softmax_rows_(rows, scale)
        # The copy gives each row's sum, minimum and verdict where it can: then no pass (nor
        # tensor operation) of their own.
        bounds = None if self.checks is None else sum_bounds(sum_tolerance(self.values.dtype))
        rows, stats = gather_rows_with_stats(self.values, batch_index, position, into, bounds)
        self.copy_checked = stats is not None
        if self.checks is None:
            return rows
        if stats is not None:  # recorded in finish()
            self.full_rows.append(FullRows(stats.sums, stats.minima, requests, stats.improper))
        elif not known_sums:
            self.full_rows.append(FullRows(rows.sum(dim=-1), rows.amin(dim=-1), requests))
        return rows

    def record_sums(self, rows: torch.Tensor, sums: torch.Tensor, requests: torch.Tensor) -> None:
        """Sums of the rows just read with ``known_sums``, from a pass the caller made; used
        only where the copy gave none."""
        if self.checks is not None and not self.is_logits and not self.copy_checked:
            self.full_rows.append(FullRows(sums, rows.amin(dim=-1), requests))

    def finish(self) -> None:
        """Record the checks of every probability row read in full."""
        if self.checks is not None:
            # One mask per chunk read, in the order read: the first bad row is worded first.
            for rows in self.full_rows:
                check_full_rows(
                    self.checks, self.name, rows.sums, rows.minima, self.values.dtype,
                    rows.requests, improper=rows.improper,
                )  # fmt: skip
            self.full_rows = []

    def at_drafted(
        self, gathered: torch.Tensor | None, index: torch.Tensor, n: int
    ) -> torch.Tensor:
        """Probabilities at the drafted tokens ``index`` [B, n, 1] of the first n positions:
        ``gathered`` (the entries read from the input) unless the rows were softmaxed."""
        if self.softmaxed is not None:
            return self.softmaxed[:, :n].gather(2, index)[..., 0]
        assert gathered is not None
        return gathered

    def check_softmax_reached(self, values: torch.Tensor, reached: torch.Tensor) -> None:
        """:meth:`check_softmax` of the [B, n] entries ``values`` where ``reached``."""
        if self.checks is not None and self.is_logits:
            check_softmax_values(
                self.checks,
                self.name,
                values,
                lambda index: self.values[index[0], index[1]],
                where=reached,
            )

    def check_softmax(self, p_x: torch.Tensor, batch_index: torch.Tensor, position: int) -> None:
        if self.checks is not None and self.is_logits:
            check_softmax_values(
                self.checks,
                self.name,
                p_x,
                lambda index: self.values[int(batch_index[index[0]]), position],
            )


def draw_residual(
    p: torch.Tensor,
    q: torch.Tensor | None,
    draft_token: torch.Tensor,
    u: torch.Tensor,
    fetch_p: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """Tokens from norm(max(0, p - q)) per row (q one-hot at ``draft_token`` when None, and
    zero for a draft outside the vocabulary); from p itself where that has no mass (p == q up
    to rounding), with the same uniform.

    ``p`` is overwritten by the residual; ``fetch_p(rows)`` reads the p rows again for the
    rare empty residuals."""
    if q is None:
        inside = (draft_token >= 0) & (draft_token < p.shape[1])
        column = torch.where(inside, draft_token, 0)[:, None]
        picked = p.gather(1, column)
        p.scatter_(1, column, torch.where(inside[:, None], (picked - 1).clamp_(min=0), picked))
        token, total = sample_tiled(p, u)
    else:
        token, total = sample_tiled(p.sub_(q).clamp_(min=0), u)
    empty = (total <= 0).nonzero().squeeze(1)
    if empty.numel():
        token[empty] = sample_tiled(fetch_p(empty), u[empty])[0]
    return token


def round_uniforms(streams: Streams, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every uniform a request can use in the round, from one Philox call: acceptance and
    residual at positions 1..n ([B, n] each), bonus at 1..n + 1 ([B, n + 1]). The addresses and
    the float32 conversion are those of :func:`~specproof.optimized.philox.address_uniforms`
    (one call instead of one per phase and position: each is ~100 small tensor ops). On the CPU
    they are computed in Python integers for a few words, in numpy for more
    (:func:`round_uniforms_cpu`); elsewhere in torch (:func:`round_uniforms_torch`)."""
    if streams.words.device.type == "cpu":
        return round_uniforms_cpu(streams, n)
    return round_uniforms_torch(streams, n)


def round_uniforms_torch(
    streams: Streams, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`round_uniforms` in torch integer operations, on the streams' device."""
    requests = streams.words
    index = torch.arange(1, n + 2, device=requests.device)
    slots = torch.cat([index[:n] * 4 + ACCEPT, index[:n] * 4 + RESIDUAL, index * 4 + BONUS])
    round_t = torch.tensor(streams.round, dtype=torch.int64, device=requests.device)
    seed: int | torch.Tensor = streams.keys
    if streams.per_request:  # one key and offset per request: a column each
        seed = torch.as_tensor(streams.keys)[:, None]
        offset_t = torch.as_tensor(streams.offsets)[:, None]
    else:
        offset_t = torch.tensor(
            int64_bits(streams.offsets), dtype=torch.int64, device=requests.device
        )
    high, low = position_words(round_t, offset_t)
    word = philox4x32(seed, slots[None, :], requests[:, None], high, low)[0]
    u = (word >> (32 - UNIFORM_BITS)).to(torch.float32) * (2.0**-UNIFORM_BITS)
    return split_round(u, n)


PYTHON_WORDS = 32
"""At most this many words (requests x (3n + 1)) are drawn with Python integers
(:func:`specproof.reference.philox.philox4x32`, about 6 us a word here) rather than numpy
(about 130 us for the ~100 array operations of a call, whatever its size)."""


def round_uniforms_cpu(streams: Streams, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`round_uniforms` for CPU streams: the same words (the position's high word is
    round + the offset's high word mod 2^32, as :func:`position_words` makes it)."""
    batch = streams.words.shape[0]
    if batch * (3 * n + 1) <= PYTHON_WORDS:
        return split_round(round_uniforms_python(streams, n), n)
    index = np.arange(1, n + 2, dtype=np.uint64)
    four = np.uint64(4)
    slots = np.concatenate(
        [index[:n] * four + np.uint64(ACCEPT), index[:n] * four + np.uint64(RESIDUAL),
         index * four + np.uint64(BONUS)]
    )  # fmt: skip
    key, offset = uint64_words(streams.keys), uint64_words(streams.offsets)
    if streams.per_request:  # one key and offset per request: a column each
        key, offset = key[:, None], offset[:, None]
    high = np.uint64(streams.round) + (offset >> np.uint64(32))
    requests = uint64_words(streams.words)[:, None]
    word = philox_rounds_numpy(key, slots[None, :], requests, high, offset)[0]
    shift = np.uint64(32 - UNIFORM_BITS)
    u = torch.from_numpy((word >> shift).astype(np.float32) * np.float32(2.0**-UNIFORM_BITS))
    return split_round(u, n)


def round_uniforms_python(streams: Streams, n: int) -> torch.Tensor:
    """The [B, 3n + 1] uniforms of :func:`round_uniforms_cpu` in Python integers
    (:func:`specproof.reference.philox.philox4x32`), for a few words."""
    batch = streams.words.shape[0]
    everyone = (1 << 64) - 1
    if streams.per_request:
        keys = [k & everyone for k in torch.as_tensor(streams.keys).tolist()]
        offsets = [o & everyone for o in torch.as_tensor(streams.offsets).tolist()]
    else:
        keys = [int(streams.keys) & everyone] * batch
        offsets = [int(streams.offsets) & everyone] * batch
    slots = [i * 4 + ACCEPT for i in range(1, n + 1)] + [i * 4 + RESIDUAL for i in range(1, n + 1)]
    slots += [i * 4 + BONUS for i in range(1, n + 2)]
    shift = 32 - UNIFORM_BITS
    rows = [
        [philox4x32_python(key, slot, word, streams.round + (offset >> 32), offset)[0] >> shift
         for slot in slots]
        for key, offset, word in zip(keys, offsets, streams.words.tolist(), strict=True)
    ]  # fmt: skip
    # Integers below 2^24 are exact in float32, and so is their product with 2^-24.
    return torch.tensor(rows, dtype=torch.float32).reshape(batch, len(slots)) * 2.0**-UNIFORM_BITS


def split_round(u: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(acceptance, residual, bonus) columns of a round's [B, 3n + 1] uniforms."""
    return u[:, :n], u[:, n : 2 * n], u[:, 2 * n :]


def refetch(
    side: Rows,
    batch_index: torch.Tensor,
    position: torch.Tensor,
    requests: torch.Tensor,
    picked: torch.Tensor,
) -> torch.Tensor:
    """Probability rows ``picked`` of (batch_index, position) read again from the input."""
    return side.probabilities(batch_index[picked], position[picked], requests[batch_index[picked]])


CHUNK_BYTES = 4 * 2**20
"""Final rows are processed this many bytes of one row set at a time: the gathered p and q rows
then stay in cache for the checks and the residual (on this CPU, about half the cost of the
full-row checks at B = 256)."""


def row_chunks(rows: torch.Tensor, vocab: int) -> list[torch.Tensor]:
    """``rows`` split into pieces of about :data:`CHUNK_BYTES` of float32 rows each."""
    size = max(1, CHUNK_BYTES // (4 * vocab))
    return list(rows.split(size)) if rows.numel() else []


def row_of(
    values: torch.Tensor, batch_index: torch.Tensor, position: torch.Tensor, index: tuple[int, ...]
) -> torch.Tensor:
    """The input row of entry ``index[0]`` (for error messages)."""
    return values[int(batch_index[index[0]]), int(position[index[0]])]


def select_rows(rows: torch.Tensor, index: torch.Tensor, into: str) -> torch.Tensor:
    """``rows[index]`` copied into the workspace ``into``."""
    out = workspace(into, len(index), rows.shape[1], rows.device)
    return torch.index_select(rows, 0, index, out=out)


def chain_verify_torch(
    call: ChainCall, *, checks: DeferredChecks | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same contract as :func:`~specproof.optimized.kernels.chain_verify.chain_verify_triton`;
    violations of the content contract are recorded in ``checks`` when given."""
    target, draft, draft_tokens = call.target, call.draft, call.draft_tokens
    target_logits, draft_logits = call.target_logits, call.draft_logits
    lengths, requests, temperature = call.lengths, call.requests, call.temperatures
    batch, positions, _ = target.shape
    n = positions - 1
    device = target.device
    out = torch.full((batch, positions), -1, dtype=torch.int64, device=device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    if batch == 0:
        return out, accepted
    lengths = lengths.to(torch.int64)
    requests = requests.to(torch.int64)
    everyone = torch.arange(batch, device=device)
    verified = torch.arange(n, device=device)[None, :] < lengths[:, None]
    tokens = torch.where(verified, draft_tokens, 0).to(torch.int64)
    # A draft outside the vocabulary (vLLM's -1 placeholder) is read at token 0 and rejected.
    inside = (tokens >= 0) & (tokens < target.shape[-1])
    read = verified & inside
    if checks is not None:  # the first check recorded: it is the first worded
        vocab = target.shape[-1]
        # Unverified positions hold 0 here, so both masks leave them out.
        placeholders = call.placeholder_drafts
        refused = refused_tokens(tokens, vocab, True) if placeholders else ~inside
        defer_draft_tokens(checks, refused, draft_tokens, vocab)
    safe_tokens = torch.where(inside, tokens, 0)
    greedy = temperature == 0
    sampled = ~greedy
    scaled = bool(((temperature != 1) & sampled).any())
    row_temperature = torch.where(sampled, temperature, 1.0).to(torch.float32) if scaled else None
    p_side = Rows("target", target, target_logits, row_temperature, checks)
    q_side = None if draft is None else Rows("draft", draft, draft_logits, row_temperature, checks)
    for side in (p_side, q_side):
        if side is not None:
            side.softmax_all_rows()

    # Entries at the drafted tokens, over every verified position: O(B * n) reads.
    index = safe_tokens[..., None]
    p_at = target[:, :n].gather(2, index)[..., 0].to(torch.float32)
    q_at = None if draft is None else draft.gather(2, index)[..., 0].to(torch.float32)
    if checks is not None:
        check_gathered(checks, "target", p_at, read, is_logits=target_logits, dtype=target.dtype)
        if draft is not None and q_at is not None:
            check_gathered(
                checks,
                "draft",
                q_at,
                read,
                is_logits=draft_logits,
                dtype=draft.dtype,
                sampled=read & sampled[:, None],
            )
    u_accept, u_residual, u_bonus = round_uniforms(call.streams, n)
    final = torch.full((batch,), -1, dtype=torch.int64, device=device)
    rejected = torch.zeros(batch, dtype=torch.bool, device=device)

    # Logits softmaxed at once are probabilities from here on: every acceptance is decided in
    # one pass too (the same entries the loop would read, so the same decisions).
    every_row_known = all(
        side is None or not side.is_logits or side.softmaxed is not None
        for side in (p_side, q_side)
    )
    needs_loop = not every_row_known or bool(greedy.any())
    if not needs_loop:
        p_values = p_side.at_drafted(p_at, index, n)
        q_values = torch.ones_like(p_at) if q_side is None else q_side.at_drafted(q_at, index, n)
        # u < p / q as u * q < p in float64: exact for float32 operands.
        keep = u_accept.double() * q_values.double() < p_values.double()
        run = torch.cumprod((keep & read).to(torch.int32), dim=1)
        accepted = run.sum(dim=1, dtype=torch.int64)
        rejected = accepted < lengths
        if target_logits or draft_logits:  # the rows reached: up to the first rejection
            reached = verified & (torch.arange(n, device=device)[None, :] <= accepted[:, None])
            p_side.check_softmax_reached(p_values, reached)
            if q_side is not None:
                q_side.check_softmax_reached(q_values, reached)
        rejected_rows = rejected.nonzero().squeeze(1)
        for hit in row_chunks(rejected_rows, target.shape[-1]):
            position = accepted[hit]
            p_rows = p_side.probabilities(hit, position, requests[hit], "p")
            q_rows = None
            if q_side is not None:
                q_rows = q_side.probabilities(hit, position, requests[hit], "q")
            final[hit] = draw_residual(
                p_rows,
                q_rows,
                tokens[hit, position],
                u_residual[hit, position],
                partial(refetch, p_side, hit, position, requests),
            )
    else:
        # u = inf rejects an outside draft for any p(0), q(0): inf * q < p fails, NaN too.
        u_accept = torch.where(inside, u_accept, float("inf"))
        still = lengths > 0
        for k in range(n):
            alive = still.nonzero().squeeze(1)
            if alive.numel() == 0:
                break
            keep = torch.zeros(alive.shape, dtype=torch.bool, device=device)
            is_greedy = greedy[alive]
            if bool(is_greedy.any()):
                rows = alive[is_greedy]
                maxima, argmax = gather_rows(target, rows, rows * 0 + k, "p").max(dim=-1)
                if checks is not None:
                    check_maxima(checks, "target", maxima, target_logits)
                keep[is_greedy] = argmax == tokens[rows, k]
            rows = alive[~is_greedy]
            if rows.numel():
                position = rows * 0 + k
                x = safe_tokens[rows, k]
                p: torch.Tensor | None = None
                q: torch.Tensor | None = None
                if target_logits:
                    p = p_side.probabilities(rows, position, requests[rows], "p")
                    p_x = p.gather(1, x[:, None])[:, 0]
                    p_side.check_softmax(p_x, rows, k)
                else:
                    p_x = p_at[rows, k]
                if q_side is None or q_at is None:
                    q_x = torch.ones_like(p_x)
                elif draft_logits:
                    q = q_side.probabilities(rows, position, requests[rows], "q")
                    q_x = q.gather(1, x[:, None])[:, 0]
                    q_side.check_softmax(q_x, rows, k)
                else:
                    q_x = q_at[rows, k]
                decided = u_accept[rows, k].double() * q_x.double() < p_x.double()
                keep[~is_greedy] = decided
                lost = (~decided).nonzero().squeeze(1)
                if lost.numel():
                    at_rows, at_position = rows[lost], position[lost]
                    if p is not None:  # softmaxed above: copy the rejected rows out
                        p_lost = select_rows(p, lost, "p_lost")
                    else:
                        p_lost = p_side.probabilities(at_rows, at_position, requests[at_rows])
                    q_lost = None
                    if q is not None:
                        q_lost = select_rows(q, lost, "q_lost")
                    elif q_side is not None:
                        q_lost = q_side.probabilities(at_rows, at_position, requests[at_rows])
                    u = u_residual[at_rows, k]
                    final[at_rows] = draw_residual(
                        p_lost,
                        q_lost,
                        tokens[at_rows, k],  # as drafted: an outside id removes nothing
                        u,
                        partial(refetch, p_side, at_rows, at_position, requests),
                    )
            accepted[alive[keep]] += 1
            rejected[alive[~keep]] = True
            still[alive[~keep]] = False
            still &= accepted < lengths

    # Greedy requests: the argmax of the row after the accepted drafts.
    if bool(greedy.any()):
        rows = everyone[greedy]
        maxima, argmax = gather_rows(target, rows, accepted[rows], "p").max(dim=-1)
        if checks is not None:
            check_maxima(checks, "target", maxima, target_logits)
        final[rows] = argmax
    # Bonus tokens: sampled requests that accepted every verified draft.
    for bonus in row_chunks((sampled & ~rejected).nonzero().squeeze(1), target.shape[-1]):
        position = accepted[bonus]
        bonus_rows = p_side.probabilities(bonus, position, requests[bonus], "p", known_sums=True)
        token, total = sample_tiled(bonus_rows, u_bonus[bonus, position])
        p_side.record_sums(bonus_rows, total, requests[bonus])  # total: the sum of the row
        if checks is not None and target_logits:
            check_softmax_values(checks, "target", total, partial(row_of, target, bonus, position))
        final[bonus] = token
    p_side.finish()
    if q_side is not None:
        q_side.finish()
    # Drafts accepted before the first rejection, then the final token.
    emitted = torch.arange(n, device=device)[None, :] < accepted[:, None]
    out[:, :n] = torch.where(emitted, tokens, -1)
    out[everyone, accepted] = final
    return out, accepted
