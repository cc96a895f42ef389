"""Chain verifiers in plain torch, with FlashInfer's and vLLM's signatures: a correct one of each,
and a deliberately biased one of each (the residual drawn from p instead of norm(max(p - q, 0))).

They are what ``specproof audit`` is shown on: it passes the correct ones and fails the biased.
All of them refuse rows holding NaN or inf with a ``ValueError`` (no law is defined there). Each
is the one flagged verifier of :mod:`specproof.subjects.flagged` with the flags it names (none for
the correct ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from specproof.subjects.flagged import (
    CORRECT,
    BugFlags,
    draft,
    flashinfer_verifier,
    hf_verifier,
    verify_hf,
    vllm_logits_verifier,
    vllm_verifier,
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


chain_speculative_sampling = flashinfer_verifier(CORRECT, "chain_speculative_sampling")
chain_speculative_sampling.__doc__ = """
FlashInfer's signature and semantics, in torch: dense [B, n] drafts, -1 padding, counters added to
in place.
"""

biased_chain_speculative_sampling = flashinfer_verifier(BIASED, "biased_chain_speculative_sampling")
biased_chain_speculative_sampling.__doc__ = """
As :func:`chain_speculative_sampling`, but the token after a rejection is drawn from p.
"""

rejection_sample = vllm_verifier(CORRECT, "rejection_sample")
rejection_sample.__doc__ = """
vLLM's signature and semantics in torch: ragged drafts, bonus token given, -1 padding, greedy rows
(temperature <= 0 in ``sampling_metadata``: vLLM's marker 0, or the older -1), per-request
generators (``sampling_metadata.generators``: row -> torch.Generator). ``draft_probs`` None means
one-hot drafts (n-gram).
"""

rejection_sample_logits = vllm_logits_verifier(CORRECT, "vllm", "rejection_sample_logits")
rejection_sample_logits.__doc__ = """
As :func:`rejection_sample`, with raw target logits as current vLLM hands them to its rejection
sampler: each request's temperature, top-k, top-p and min-p (``sampling_metadata``) are applied at
every verified position before verification, in vLLM's sampler's order (temperature, min-p, top-k,
renormalise, top-p: the nucleus is taken on the law min-p renormalised).
"""

rejection_sample_logits_min_p_last = vllm_logits_verifier(
    MIN_P_LAST, "vllm", "rejection_sample_logits_min_p_last"
)
rejection_sample_logits_min_p_last.__doc__ = """
As :func:`rejection_sample_logits`, with min-p after top-k and top-p, as transformers' warpers
apply it (``--filter-order sequential``): where min-p and top-p both bind, the nucleus is taken on
the law without min-p, lossy against vLLM's sampler.
"""

rejection_sample_logits_llama_cpp = vllm_logits_verifier(
    LLAMA_CPP_ORDER, "vllm", "rejection_sample_logits_llama_cpp"
)
rejection_sample_logits_llama_cpp.__doc__ = """
As :func:`rejection_sample_logits`, in llama.cpp's default sampler chain (top-k, top-p, min-p on
softmax(logits), the temperature last; ``--filter-order llama.cpp``): min-p cuts on the untempered
law, lossy against vLLM's sampler where that cuts other tokens.
"""

rejection_sample_logits_joint = vllm_logits_verifier(JOINT, "vllm", "rejection_sample_logits_joint")
rejection_sample_logits_joint.__doc__ = """
As :func:`rejection_sample_logits`, with top-k and top-p both cut on the full law ("joint",
FlashInfer's joint sampling and SGLang's regular sampler): correct where the engine samples jointly
(``--filter-order joint``), lossy against a sequential sampler.
"""

biased_rejection_sample = vllm_verifier(BIASED, "biased_rejection_sample")
biased_rejection_sample.__doc__ = """
As :func:`rejection_sample`, but the recovered token is drawn from p.
"""

speculative_sampling = hf_verifier(CORRECT, "sequential", "speculative_sampling")
speculative_sampling.__doc__ = """
The hf signature (batch 1, logits at a temperature, in the style of HF transformers'
``_speculative_sampling``): returns [1, m], m - 1 accepted drafts then one token. The request's
filters reach the target side only, in transformers' order (temperature, top-k, top-p, min-p; top-p
on the renormalised top-k law); q is the law the drafts came from.
"""

speculative_sampling_joint = hf_verifier(JOINT, "sequential", "speculative_sampling_joint")
speculative_sampling_joint.__doc__ = """
As :func:`speculative_sampling`, with top-k and top-p cut jointly on the full law: lossy against
transformers' sequential warpers when both bind.
"""

speculative_sampling_min_p_skipped = hf_verifier(
    MIN_P_SKIPPED, "sequential", "speculative_sampling_min_p_skipped"
)
speculative_sampling_min_p_skipped.__doc__ = """
As :func:`speculative_sampling`, but min-p is never applied (vLLM issue 42744's class).
"""


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
