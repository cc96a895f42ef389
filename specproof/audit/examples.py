"""Chain verifiers in plain torch, with FlashInfer's and vLLM's signatures: a correct one of each,
and a deliberately biased one of each (the residual drawn from p instead of norm(max(p - q, 0))).

They are what ``specproof audit`` is shown on: it passes the correct ones and fails the biased.
All of them refuse rows holding NaN or inf with a ``ValueError`` (no law is defined there). Each
is the one flagged verifier of :mod:`specproof.audit.flagged` with the flags it names (none for
the correct ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .flagged import (
    CORRECT,
    BugFlags,
    draft,
    process_target_logits,
    verify_flashinfer,
    verify_hf,
    verify_vllm,
)

# mypy reads optimized/ as the package ``optimized`` (the wheel maps it to specproof.optimized,
# which mypy cannot follow), so the call shapes are imported for it under that name.
if TYPE_CHECKING:
    from optimized.call_shapes import FlashInferChainSpeculativeSampling, VllmRejectionSample

BIASED = BugFlags.of("residual-from-p")
"""The biased examples' one bug: the token after a rejection drawn from p."""
MIN_P_SKIPPED = BugFlags.of("min-p-skipped")
GREEDY_DRAFT = BugFlags.of("draft-greedy-report-softmax")
JOINT = BugFlags(filter_order="joint")
MIN_P_LAST = BugFlags(filter_order="sequential")
LLAMA_CPP_ORDER = BugFlags(filter_order="llama.cpp")


def chain_speculative_sampling(
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    maybe_output_accepted_token_num: torch.Tensor | None = None,
    maybe_output_emitted_draft_token_num: torch.Tensor | None = None,
    deterministic: bool = True,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    offset: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashInfer's signature and semantics, in torch: dense [B, n] drafts, -1 padding,
    counters added to in place."""
    return verify_flashinfer(
        CORRECT,
        draft_probs,
        draft_token_ids,
        target_probs,
        maybe_output_accepted_token_num,
        maybe_output_emitted_draft_token_num,
        generator,
    )


def biased_chain_speculative_sampling(
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    maybe_output_accepted_token_num: torch.Tensor | None = None,
    maybe_output_emitted_draft_token_num: torch.Tensor | None = None,
    deterministic: bool = True,
    generator: torch.Generator | None = None,
    seed: int | None = None,
    offset: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """As :func:`chain_speculative_sampling`, but the token after a rejection is drawn from p."""
    return verify_flashinfer(
        BIASED,
        draft_probs,
        draft_token_ids,
        target_probs,
        maybe_output_accepted_token_num,
        maybe_output_emitted_draft_token_num,
        generator,
    )


def rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """vLLM's signature and semantics in torch: ragged drafts, bonus token given, -1 padding,
    greedy rows (temperature <= 0 in ``sampling_metadata``: vLLM's marker 0, or the older -1),
    per-request generators (``sampling_metadata.generators``: row -> torch.Generator).
    ``draft_probs`` None means one-hot drafts (n-gram)."""
    return verify_vllm(
        CORRECT,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
    )


def rejection_sample_logits(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample`, with raw target logits as current vLLM hands them to its
    rejection sampler: each request's temperature, top-k, top-p and min-p
    (``sampling_metadata``) are applied at every verified position before verification, in
    vLLM's sampler's order (temperature, min-p, top-k, renormalise, top-p: the nucleus is taken
    on the law min-p renormalised)."""
    return _rejection_sample_logits_in(
        CORRECT,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def _rejection_sample_logits_in(flags: BugFlags, *args: Any) -> torch.Tensor:
    """vLLM's raw-logits signature, the target filtered in vLLM's order unless ``flags`` name
    another."""
    tokens, lengths, longest, _cu, draft_probs, logits, bonus, metadata = args
    target = process_target_logits(logits, lengths, metadata, flags)
    return verify_vllm(flags, tokens, lengths, longest, draft_probs, target, bonus, metadata)


def rejection_sample_logits_min_p_last(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, with min-p after top-k and top-p, as transformers'
    warpers apply it (``--filter-order sequential``): where min-p and top-p both bind, the
    nucleus is taken on the law without min-p, lossy against vLLM's sampler."""
    return _rejection_sample_logits_in(
        MIN_P_LAST,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def rejection_sample_logits_llama_cpp(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, in llama.cpp's default sampler chain (top-k, top-p,
    min-p on softmax(logits), the temperature last; ``--filter-order llama.cpp``): min-p cuts
    on the untempered law, lossy against vLLM's sampler where that cuts other tokens."""
    return _rejection_sample_logits_in(
        LLAMA_CPP_ORDER,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def rejection_sample_logits_joint(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, with top-k and top-p both cut on the full law
    ("joint", FlashInfer's joint sampling and SGLang's regular sampler): correct where the
    engine samples jointly (``--filter-order joint``), lossy against a sequential sampler."""
    return _rejection_sample_logits_in(
        JOINT,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def biased_rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample`, but the recovered token is drawn from p."""
    return verify_vllm(
        BIASED,
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
    )


def speculative_sampling(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    *,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
) -> torch.Tensor:
    """The hf signature (batch 1, logits at a temperature, in the style of HF transformers'
    ``_speculative_sampling``): returns [1, m], m - 1 accepted drafts then one token. The
    request's filters reach the target side only, in transformers' order (temperature, top-k,
    top-p, min-p; top-p on the renormalised top-k law); q is the law the drafts came from."""
    return verify_hf(
        CORRECT, draft_tokens, draft_logits, target_logits, temperature, top_k, top_p, min_p
    )


def speculative_sampling_joint(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    *,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, with top-k and top-p cut jointly on the full law: lossy
    against transformers' sequential warpers when both bind."""
    return verify_hf(
        JOINT, draft_tokens, draft_logits, target_logits, temperature, top_k, top_p, min_p
    )


def speculative_sampling_min_p_skipped(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    *,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, but min-p is never applied (vLLM issue 42744's class)."""
    return verify_hf(
        MIN_P_SKIPPED, draft_tokens, draft_logits, target_logits, temperature, top_k, top_p, min_p
    )


def biased_speculative_sampling(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, but the token after a rejection is drawn from p."""
    return verify_hf(BIASED, draft_tokens, draft_logits, target_logits, temperature)


def sample_draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """A drafter with the audit's drafter signature: samples from softmax(logits / T) and reports
    those probabilities."""
    return draft(CORRECT, logits, temperature)


def greedy_draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Drafts the argmax while reporting the softmax (HF issue 32867's class): lossy."""
    return draft(GREEDY_DRAFT, logits, temperature)


def algorithm1_schedule(confidences: list[list[Any]], sps: Any) -> list[int]:
    """DSpark's Algorithm 1 with the early break, with the public scheduler signature."""
    from specproof.reference import Algorithm1

    return Algorithm1()(confidences, sps)


def global_search_schedule(confidences: list[list[Any]], sps: Any) -> list[int]:
    """Algorithm 1 without the break (reads c_{k+1} before x_k is verified): lossy."""
    from specproof.reference import GlobalSearch

    return GlobalSearch()(confidences, sps)


# The example verifiers have the engines' call shapes (mypy checks these lines).
_flashinfer_shapes: list[FlashInferChainSpeculativeSampling] = [
    chain_speculative_sampling,
    biased_chain_speculative_sampling,
]
_vllm_shapes: list[VllmRejectionSample] = [
    rejection_sample,
    rejection_sample_logits,
    rejection_sample_logits_min_p_last,
    rejection_sample_logits_llama_cpp,
    rejection_sample_logits_joint,
    biased_rejection_sample,
]
