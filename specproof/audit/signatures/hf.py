"""The batch-1 logits signature ``hf`` (in the style of HF transformers' speculative sampling):
``fn(draft_tokens [1, n] int64, draft_logits [1, n, V], target_logits [1, n + 1, V],
temperature: float)`` returns the emitted tokens [1, m] (or a tuple whose first item they are):
m - 1 accepted drafts, then the correction or bonus token."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

import torch

from specproof.reference.filters import FilterOrder

from ..drafting import Drafts
from ..errors import VerifierError
from ..ids import integer_ids
from ..problems import PLACEHOLDER, TableProblem
from ..requests import RequestParams
from ..settings import CallLimits, CallSettings
from .base import (
    Call,
    Corrupt,
    HuntCall,
    RepeatedCalls,
    Verifier,
    VerifierSignature,
    corrupted_if,
    first_output,
    one_torch_thread,
    seed_torch,
)

HF_TEMPERATURE = 0.5
"""Temperature of the hf signature's cases (each request's own temperature where the problem
has requests): the logits are T log p, so softmax(logits / T) = p exactly when (and only when)
the temperature is applied to both sides."""
FILTER_KEYWORDS = ("top_k", "top_p", "min_p")


def accepts_filters(fn: Verifier) -> bool:
    """Whether an hf-signature verifier takes the request's filters as keywords."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return True
    return all(name in parameters for name in FILTER_KEYWORDS)


def call_hf(
    fn: Verifier, drafts: Drafts, problem: TableProblem, generator: torch.Generator
) -> torch.Tensor:
    """Call ``fn`` once per row with the hf signature (batch 1, logits and a temperature)."""
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    temperatures = [
        p.temperature if problem.requests else HF_TEMPERATURE for p in drafts.params(problem)
    ]
    scale = torch.tensor(temperatures, dtype=torch.float64).reshape(-1, 1, 1)
    draft_logits = (torch.log(drafts.draft_probs.double()) * scale).to(torch.float32)
    target_logits = (torch.log(drafts.target_probs.double()) * scale).to(torch.float32)
    seed_torch(generator)
    with one_torch_thread():
        _call_hf_rows(fn, drafts, draft_logits, target_logits, temperatures, padded)
    return padded


def _call_hf_rows(
    fn: Verifier,
    drafts: Drafts,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperatures: list[float],
    padded: torch.Tensor,
) -> None:
    """One call of ``fn`` per row, its emitted tokens written into ``padded``."""
    for row in range(len(temperatures)):
        n = int(drafts.lengths[row])
        result = fn(
            drafts.tokens[row : row + 1, :n].clone(),
            draft_logits[row : row + 1, :n].clone(),
            target_logits[row : row + 1, : n + 1].clone(),
            temperatures[row],
        )
        out = integer_ids(first_output(result), "the emitted tokens").reshape(-1)
        if not 1 <= out.numel() <= n + 1:
            raise VerifierError(f"emitted {out.numel()} tokens for {n} drafts", row)
        padded[row, : out.numel()] = out


class HfSignature(VerifierSignature):
    """Batch 1, draft and target logits at a temperature, filters as keywords (optional)."""

    name: ClassVar[str] = "hf"
    default_filter_order: ClassVar[FilterOrder] = "sequential"
    sends_bonus_row: ClassVar[bool] = True
    draft_logits: ClassVar[bool] = True
    target_logits: ClassVar[bool] = True
    filters_sent_raw: ClassVar[bool] = True
    calls_per_row: ClassVar[bool] = True
    hunt_batch: ClassVar[int | None] = 64
    target_argument: ClassVar[int] = 2

    def reaches_filters(self, fn: Verifier) -> bool:
        return accepts_filters(fn)

    def call(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        return call_hf(fn, drafts, problem, generator)

    def call_raw(
        self,
        fn: Verifier,
        drafts: Drafts,
        raw: torch.Tensor,
        params: RequestParams,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        # call_hf sends T log(rows) at the request's temperature; the filters go as keywords
        keywords = {name: getattr(params, name) for name in FILTER_KEYWORDS}
        bound: Callable[..., Any] = functools.partial(fn, **keywords)
        return call_hf(bound, replace(drafts, target_probs=raw), problem, generator)

    def repeated_calls(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        stream: torch.Generator,
        settings: CallSettings,
    ) -> RepeatedCalls:
        first = call_hf(fn, drafts, problem, stream)
        again = call_hf(fn, drafts, problem, stream)
        return RepeatedCalls(first, again, first, None)

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
        size, gamma, _ = draft.shape
        scale = HF_TEMPERATURE
        draft_logits = (torch.log(draft.double()) * scale).to(torch.float32)
        target_logits = (torch.log(target.double()) * scale).to(torch.float32)
        draft_logits = corrupted_if(where, "draft", draft_logits, corrupt)
        target_logits = corrupted_if(where, "target", target_logits, corrupt)

        def call() -> torch.Tensor:
            out = torch.full((size, gamma + 1), PLACEHOLDER, dtype=torch.int64)
            for row in range(size):
                result = fn(
                    tokens[row : row + 1].clone(),
                    draft_logits[row : row + 1].clone(),
                    target_logits[row : row + 1].clone(),
                    scale,
                )
                emitted = torch.as_tensor(first_output(result)).to(torch.int64).reshape(-1)
                if not 1 <= emitted.numel() <= gamma + 1:
                    raise VerifierError(f"emitted {emitted.numel()} tokens for {gamma} drafts", row)
                out[row, : emitted.numel()] = emitted
            return out

        return call

    def hunt_call(
        self,
        fn: Verifier,
        tokens: torch.Tensor,
        draft: torch.Tensor,
        target: torch.Tensor,
        batch: int,
    ) -> HuntCall:
        gamma = draft.shape[0]
        scale = HF_TEMPERATURE
        draft_logits = (torch.log(draft.double()) * scale).float().unsqueeze(0)
        target_logits = (torch.log(target.double()) * scale).float().unsqueeze(0)

        def call(size: int, generator: torch.Generator) -> torch.Tensor:
            seed_torch(generator)
            out = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
            with one_torch_thread():
                for row in range(batch):
                    result = fn(tokens.unsqueeze(0), draft_logits, target_logits, scale)
                    emitted = integer_ids(first_output(result), "output")
                    emitted = emitted.reshape(-1)[: gamma + 1]
                    out[row, : emitted.numel()] = emitted
            return out

        return call
