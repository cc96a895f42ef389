"""vLLM's ``rejection_sample`` with processed probabilities: ragged drafts flattened over the
batch, the bonus token given, the requests' metadata (greedy rows, per-request generators)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import torch

from specproof.reference.filters import FilterOrder

from ..drafting import Drafts, draw_states
from ..errors import VerifierError
from ..ids import integer_ids
from ..problems import PLACEHOLDER, TableProblem
from ..requests import raw_logits, vllm_metadata
from ..settings import CallLimits, CallSettings
from .base import (
    Call,
    Corrupt,
    HuntCall,
    RepeatedCalls,
    Verifier,
    VerifierSignature,
    corrupted_if,
    in_parts,
    row_slices,
    seed_torch,
)


def bonus_tokens(problem: TableProblem, drafts: Drafts, generator: torch.Generator) -> torch.Tensor:
    """The bonus token of every row, from the target row after its last draft (argmax for
    greedy rows): what an engine samples before calling vLLM's rejection_sample."""
    lengths = drafts.lengths
    last_state = torch.where(
        lengths > 0,
        drafts.tokens.gather(1, (lengths - 1).clamp_min(0).unsqueeze(1)).squeeze(1) % problem.states
        if drafts.tokens.shape[1]
        else torch.zeros_like(lengths),
        torch.full_like(lengths, problem.prompt_state),
    )
    keys = lengths * problem.states + last_state
    flat = problem.target_cdf.reshape(-1, problem.vocab)
    drawn = draw_states(flat, keys, generator)
    if not bool(drafts.greedy.any()):
        return drawn
    best = problem.target32.reshape(-1, problem.vocab).argmax(-1)[keys]
    return torch.where(drafts.greedy, best, drawn)


def vllm_call(
    drafts: Drafts,
    problem: TableProblem,
    generator: torch.Generator,
    settings: CallSettings,
    *,
    logits: bool = False,
) -> Callable[..., torch.Tensor]:
    """vLLM's rejection_sample inputs for these drafts (ragged, flattened rows), built once;
    the returned call can be repeated on identical inputs (fresh per-request generators with
    the same seeds each time, or ``seeds`` instead). ``logits``: target rows as raw logits
    (current vLLM hands its sampler raw logits and the request's parameters) instead of
    processed probabilities. The call reaches ``fn`` once per ``settings.limits.max_batch``
    requests, greedy rows marked with ``settings.marker``."""
    batch, gamma = drafts.tokens.shape
    bonus = bonus_tokens(problem, drafts, generator).to(torch.int32).unsqueeze(1)
    parts = [
        (rows, _vllm_args(drafts.select(rows), bonus[rows], problem, logits))
        for rows in row_slices(batch, settings.limits)
    ]

    def call(fn: Verifier, seeds: torch.Tensor | None = None) -> torch.Tensor:
        seed_torch(generator)
        own = drafts if seeds is None else replace(drafts, seeds=seeds)
        padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
        for rows, args in parts:
            part = own.select(rows)
            size = len(part.lengths)
            metadata = vllm_metadata(
                size,
                part.greedy,
                settings=settings,
                params=part.params(problem),
                generators=part.generators(),
                vocab=problem.vocab,
            )
            out = integer_ids(fn(*args, metadata), "output_token_ids")
            if out.dim() != 2 or out.shape[0] != size:
                raise VerifierError(
                    f"output has shape {tuple(out.shape)}, expected [{size}, n + 1]"
                )
            width = min(out.shape[1], gamma + 1)
            padded[rows, :width] = out[:, :width]
            if out.shape[1] > gamma + 1:
                extra = torch.nonzero((out[:, gamma + 1 :] != PLACEHOLDER).any(1))
                if len(extra):
                    raise VerifierError(
                        "a row emitted more than its drafts plus one", rows.start + int(extra[0, 0])
                    )
        return padded

    return call


def _vllm_args(
    drafts: Drafts, bonus: torch.Tensor, problem: TableProblem, logits: bool
) -> tuple[Any, ...]:
    """The arguments of one rejection_sample call on ``drafts`` (metadata aside)."""
    batch, gamma = drafts.tokens.shape
    lengths = drafts.lengths
    keep = torch.arange(gamma).unsqueeze(0) < lengths.unsqueeze(1)  # [B, gamma]
    num_draft = lengths.tolist()
    params = drafts.params(problem)
    target = drafts.target_probs[:, :gamma][keep].contiguous()
    if logits:
        row_of = torch.arange(batch).unsqueeze(1).expand(batch, gamma)[keep]
        temperature = torch.tensor([p.temperature for p in params], dtype=torch.float64)
        temperature = torch.where(drafts.greedy, 0.0, temperature)[row_of]
        dropped = torch.tensor([p.dropped_mass() for p in params], dtype=torch.float64)
        target = raw_logits(target, temperature, torch.where(drafts.greedy, 0.0, dropped)[row_of])
    return (
        drafts.tokens[keep].to(torch.int32).contiguous(),
        num_draft,
        max(num_draft) if num_draft else 0,
        torch.cumsum(lengths, 0).to(torch.int32),
        None if problem.ngram else drafts.draft_probs[keep].contiguous(),
        target,
        bonus.contiguous(),
    )


class VllmSignature(VerifierSignature):
    """``rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
    draft_probs, target_probs, bonus_token_ids, sampling_metadata)`` on probabilities."""

    name: ClassVar[str] = "vllm"
    default_filter_order: ClassVar[FilterOrder] = "vllm"
    sends_bonus_row: ClassVar[bool] = False
    carries_requests: ClassVar[bool] = True
    target_argument: ClassVar[int] = 5

    def call(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        return vllm_call(drafts, problem, generator, settings, logits=self.target_logits)(fn)

    def repeated_calls(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        stream: torch.Generator,
        settings: CallSettings,
    ) -> RepeatedCalls:
        call = vllm_call(drafts, problem, stream, settings, logits=self.target_logits)
        first, again = call(fn), call(fn)
        seeded = (drafts.seeds >= 0).numpy() if drafts.seeds is not None else None
        third = first
        if drafts.seeds is not None:
            fresh = torch.randint(0, 2**62, drafts.seeds.shape, generator=stream)
            third = call(fn, seeds=torch.where(drafts.seeds >= 0, fresh, drafts.seeds))
        return RepeatedCalls(first, again, third, seeded)

    def sent_target(self, target: torch.Tensor, where: str, corrupt: Corrupt) -> torch.Tensor:
        """A non-finite case's verified target rows [B, gamma, V] as sent (the full target
        ``target`` [B, gamma + 1, V], finite)."""
        gamma = target.shape[1] - 1
        return corrupted_if(where, "target", target, corrupt)[:, :gamma]

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
        size, gamma, vocab = draft.shape
        draft = corrupted_if(where, "draft", draft, corrupt)
        verified = self.sent_target(target, where, corrupt)
        bonus = torch.multinomial(
            target[:, gamma].double(), 1, generator=torch.Generator().manual_seed(size)
        ).to(torch.int32)

        def call(rows: slice) -> torch.Tensor:
            count = rows.stop - rows.start
            return torch.as_tensor(
                fn(
                    tokens[rows].reshape(-1).to(torch.int32),
                    [gamma] * count,
                    gamma,
                    torch.arange(1, count + 1, dtype=torch.int32) * gamma,
                    draft[rows].reshape(-1, vocab).contiguous(),
                    verified[rows].reshape(-1, vocab).contiguous(),
                    bonus[rows].contiguous(),
                    vllm_metadata(count),
                )
            )

        return in_parts(call, size, limits)

    def hunt_target(self, target: torch.Tensor) -> torch.Tensor:
        """A hunt round's verified target rows [gamma, V] as sent."""
        return target

    def hunt_call(
        self,
        fn: Verifier,
        tokens: torch.Tensor,
        draft: torch.Tensor,
        target: torch.Tensor,
        batch: int,
    ) -> HuntCall:
        gamma = draft.shape[0]
        flat_tokens = tokens.repeat(batch, 1).reshape(-1).to(torch.int32)
        drafts = draft.repeat(batch, 1)
        verified = self.hunt_target(target[:gamma].repeat(batch, 1))
        bonus = target[gamma].argmax().repeat(batch, 1).to(torch.int32)
        cu = torch.arange(1, batch + 1, dtype=torch.int32) * gamma
        metadata = vllm_metadata(batch)

        def call(size: int, generator: torch.Generator) -> torch.Tensor:
            seed_torch(generator)
            sent = (flat_tokens, [gamma] * batch, gamma, cu, drafts, verified, bonus, metadata)
            return fn(*sent)

        return call
