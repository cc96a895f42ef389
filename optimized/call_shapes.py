"""The call shapes of the engines' verification functions, written once: vLLM's
``rejection_sample`` and FlashInfer's ``chain_speculative_sampling`` as typed Protocols.

The drop-ins (:mod:`specproof.optimized.compat`), the audit's example verifiers, its mutants and
its wrappers of vLLM's sampler declare that they conform (``_: VllmRejectionSample = fn``, checked
by mypy); :func:`accepts_call_shape` checks a callable at run time (the audit calls positionally,
so parameter names are free where the Protocol makes them positional-only)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol

import torch


class VllmRejectionSample(Protocol):
    """``vllm.v1.sample.rejection_sampler.rejection_sample``: ragged drafts flattened over the
    batch (``draft_token_ids`` [sum n], ``num_draft_tokens`` the n of each request,
    ``max_spec_len`` their maximum, ``cu_num_draft_tokens`` [B] their running sum),
    ``draft_probs`` [sum n, V] (None: one-hot n-gram drafts), ``target_probs`` [sum n, V]
    (probabilities, or raw logits for ``RejectionSampler.forward``), ``bonus_token_ids`` [B, 1],
    ``sampling_metadata`` (temperature, greedy flags, filters, per-request generators).
    Returns the output tokens [B, max_spec_len + 1], -1 after each request's emitted tokens."""

    def __call__(
        self,
        draft_token_ids: torch.Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: torch.Tensor,
        draft_probs: torch.Tensor | None,
        target_probs: torch.Tensor,
        bonus_token_ids: torch.Tensor,
        sampling_metadata: Any,
        /,
    ) -> torch.Tensor: ...


class FlashInferChainSpeculativeSampling(Protocol):
    """``flashinfer.sampling.chain_speculative_sampling``: dense drafts (``draft_probs``
    [B, n, V], ``draft_token_ids`` [B, n], ``target_probs`` [B, n + 1, V] with the bonus row),
    the accepted and emitted counters [B] written in place when given, ``deterministic`` and a
    ``generator`` by keyword. Returns (output_token_ids [B, n + 1] with -1 after the emitted
    tokens, accepted counts, emitted counts)."""

    def __call__(
        self,
        draft_probs: torch.Tensor,
        draft_token_ids: torch.Tensor,
        target_probs: torch.Tensor,
        maybe_output_accepted_token_num: torch.Tensor | None = None,
        maybe_output_emitted_draft_token_num: torch.Tensor | None = None,
        /,
        deterministic: bool = True,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


def accepts_call_shape(fn: Callable[..., Any], shape: type) -> bool:
    """Whether ``fn`` can be called as the Protocol ``shape`` calls: every positional argument
    of its ``__call__`` by position and every keyword argument by name (a run-time check of the
    arguments only; mypy checks the types where a module declares conformance)."""
    expected = list(inspect.signature(shape.__call__).parameters.values())[1:]  # without self
    positional = [p for p in expected if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    keywords = {p.name: None for p in expected if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
    try:
        inspect.signature(fn).bind(*(None for _ in positional), **keywords)
    except TypeError:
        return False
    return True
