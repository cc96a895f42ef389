"""FlashInfer's ``chain_speculative_sampling``: dense [B, n] drafts, draft and target
probabilities (the target's bonus row included), accepted and emitted counters written in place."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from specproof.reference.filters import FilterOrder

from ..drafting import Drafts
from ..errors import VerifierError
from ..ids import integer_ids
from ..problems import PLACEHOLDER, TableProblem
from ..settings import DEFAULT_LIMITS, CallLimits, CallSettings
from ..structure import emitted_lengths
from .base import (
    Call,
    Corrupt,
    HuntCall,
    RepeatedCalls,
    Verifier,
    VerifierSignature,
    accepts_generator,
    corrupted_if,
    first_output,
    in_parts,
    row_slices,
    seed_torch,
)


def call_flashinfer(
    fn: Verifier,
    drafts: Drafts,
    generator: torch.Generator,
    limits: CallLimits = DEFAULT_LIMITS,
) -> torch.Tensor:
    """Call ``fn`` with FlashInfer's chain_speculative_sampling signature, once per draft
    length (its layout is dense) and per ``limits.max_batch`` rows, and check its counters."""
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    for length in torch.unique(drafts.lengths).tolist():
        same_length = torch.nonzero(drafts.lengths == length).squeeze(1)
        for part in row_slices(len(same_length), limits):
            _call_flashinfer_rows(fn, drafts, generator, same_length[part], length, padded)
    return padded


def _call_flashinfer_rows(
    fn: Verifier,
    drafts: Drafts,
    generator: torch.Generator,
    rows: torch.Tensor,
    length: int,
    padded: torch.Tensor,
) -> None:
    """One call on ``rows`` (all of draft length ``length``), written into ``padded``."""
    accepted = torch.zeros(len(rows), dtype=torch.int32)
    emitted = torch.zeros(len(rows), dtype=torch.int32)
    kwargs: dict[str, Any] = {"deterministic": True}
    if accepts_generator(fn):
        kwargs["generator"] = generator
    else:
        seed_torch(generator)
    result = fn(
        drafts.draft_probs[rows, :length].contiguous(),
        drafts.tokens[rows, :length].to(torch.int32).contiguous(),
        drafts.target_probs[rows, : length + 1].contiguous(),
        accepted,
        emitted,
        **kwargs,
    )
    out = integer_ids(first_output(result), "output_token_ids")
    if out.shape != (len(rows), length + 1):
        raise VerifierError(
            f"output_token_ids has shape {tuple(out.shape)}, expected {(len(rows), length + 1)}"
        )
    if isinstance(result, tuple | list) and len(result) >= 3:
        reported = integer_ids(result[2], "emitted_num")
        wrong = torch.nonzero(reported != emitted_lengths(out) - 1)
        if len(wrong):
            raise VerifierError(
                "emitted_num differs from the drafts kept in output_token_ids",
                int(rows[int(wrong[0, 0])]),
            )
    padded[rows, : length + 1] = out


def call_flashinfer_seeded(
    fn: Verifier, drafts: Drafts, stream: torch.Generator, seed: int | None, limits: CallLimits
) -> torch.Tensor:
    """Dense calls (fixed draft length) with FlashInfer's signature, one per
    ``limits.max_batch`` rows; ``seed``: a fresh ``generator=`` per call, the first seeded
    ``seed`` and the others from it (the function must accept it), None: torch's global
    stream, reseeded from the audit's stream."""
    batch, gamma = drafts.tokens.shape
    out = torch.empty((batch, gamma + 1), dtype=torch.int64)
    seeds = None if seed is None else torch.Generator().manual_seed(seed)
    for index, rows in enumerate(row_slices(batch, limits)):
        part = drafts.select(rows)
        size = len(part.lengths)
        kwargs: dict[str, Any] = {"deterministic": True}
        if seed is not None and seeds is not None:
            own = seed if index == 0 else int(torch.randint(0, 2**62, (1,), generator=seeds))
            kwargs["generator"] = torch.Generator().manual_seed(own)
        else:
            seed_torch(stream)
        result = fn(
            part.draft_probs.contiguous(),
            part.tokens.to(torch.int32).contiguous(),
            part.target_probs.contiguous(),
            torch.zeros(size, dtype=torch.int32),
            torch.zeros(size, dtype=torch.int32),
            **kwargs,
        )
        called = integer_ids(first_output(result), "output")
        if called.shape != (size, gamma + 1):
            raise VerifierError(f"output_token_ids has shape {tuple(called.shape)}")
        out[rows] = called.to(torch.int64)
    return out


class FlashInferSignature(VerifierSignature):
    """``chain_speculative_sampling(draft_probs, draft_token_ids, target_probs,
    output_accepted_token_num, output_emitted_draft_token_num, deterministic, generator)``."""

    name: ClassVar[str] = "flashinfer"
    default_filter_order: ClassVar[FilterOrder] = "joint"  # FlashInfer's joint top-k/top-p
    sends_bonus_row: ClassVar[bool] = True
    takes_request_filters: ClassVar[bool] = False  # no request parameters in the call
    output_arguments: ClassVar[frozenset[int]] = frozenset({3, 4})  # the two counters
    target_argument: ClassVar[int] = 2

    def call(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        return call_flashinfer(fn, drafts, generator, settings.limits)

    def repeated_calls(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        stream: torch.Generator,
        settings: CallSettings,
    ) -> RepeatedCalls:
        first = call_flashinfer_seeded(fn, drafts, stream, None, settings.limits)
        again = call_flashinfer_seeded(fn, drafts, stream, None, settings.limits)
        runs = None
        if accepts_generator(fn):
            s1, s2 = (int(v) for v in torch.randint(0, 2**62, (2,), generator=stream))
            runs = (
                call_flashinfer_seeded(fn, drafts, stream, s1, settings.limits),
                call_flashinfer_seeded(fn, drafts, stream, s1, settings.limits),
                call_flashinfer_seeded(fn, drafts, stream, s2, settings.limits),
            )
        return RepeatedCalls(first, again, first, None, runs)

    def nonfinite_call(
        self,
        fn: Verifier,
        draft: torch.Tensor,
        tokens: torch.Tensor,
        target: torch.Tensor,
        where: str,
        corrupt: Corrupt,
        limits: CallLimits,
    ) -> Call:
        draft = corrupted_if(where, "draft", draft, corrupt)
        target = corrupted_if(where, "target", target, corrupt)

        def call(rows: slice) -> torch.Tensor:
            zeros = torch.zeros(rows.stop - rows.start, dtype=torch.int32)
            result = fn(
                draft[rows].contiguous(),
                tokens[rows].to(torch.int32),
                target[rows].contiguous(),
                zeros,
                zeros.clone(),
            )
            return torch.as_tensor(first_output(result))

        return in_parts(call, tokens.shape[0], limits)

    def hunt_call(
        self,
        fn: Verifier,
        tokens: torch.Tensor,
        draft: torch.Tensor,
        target: torch.Tensor,
        batch: int,
    ) -> HuntCall:
        gamma, vocab = draft.shape
        repeated = tokens.repeat(batch, 1)
        draft3 = draft.expand(batch, gamma, vocab).contiguous()
        target3 = target.expand(batch, gamma + 1, vocab).contiguous()

        def call(size: int, generator: torch.Generator) -> torch.Tensor:
            seed_torch(generator)
            zeros = torch.zeros(batch, dtype=torch.int32)
            result = fn(draft3, repeated.to(torch.int32), target3, zeros, zeros.clone())
            return first_output(result)

        return call
