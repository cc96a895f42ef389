"""Calling a verifier with an engine's signature: one module per signature (FlashInfer's
chain_speculative_sampling, vLLM's rejection_sample on probabilities or raw logits, the batch-1
logits signature ``hf``), each a :class:`VerifierSignature`, and the registry that names them;
each call returns the emitted tokens [B, gamma + 1], -1 padded.

- :mod:`.base`: the :class:`VerifierSignature` base and the helpers every signature's calls share
- :mod:`.flashinfer`: FlashInfer's ``chain_speculative_sampling``
- :mod:`.vllm`: vLLM's ``rejection_sample`` on processed probabilities
- :mod:`.vllm_logits`: vLLM's ``RejectionSampler.forward`` form, target rows as raw logits
- :mod:`.hf`: the batch-1 logits signature
- :mod:`.registry`: the signatures by the name typed after ``--signature``"""

from __future__ import annotations

from typing import TypeAlias

from ..settings import DEFAULT_MAX_BATCH
from .base import (
    RepeatedCalls,
    Verifier,
    VerifierSignature,
    accepts_generator,
    in_parts,
    one_torch_thread,
    row_slices,
    seed_torch,
)
from .flashinfer import FlashInferSignature, call_flashinfer
from .hf import FILTER_KEYWORDS, HF_TEMPERATURE, HfSignature, accepts_filters, call_hf
from .registry import register, signature_named, signature_names, unregister
from .vllm import VllmSignature, bonus_tokens, vllm_call
from .vllm_logits import VllmLogitsSignature

Signature: TypeAlias = "VerifierSignature | str"
"""A signature, or its name as typed after ``--signature``."""

__all__ = [
    "DEFAULT_MAX_BATCH",
    "FILTER_KEYWORDS",
    "HF_TEMPERATURE",
    "FlashInferSignature",
    "HfSignature",
    "RepeatedCalls",
    "Signature",
    "Verifier",
    "VerifierSignature",
    "VllmLogitsSignature",
    "VllmSignature",
    "accepts_filters",
    "accepts_generator",
    "bonus_tokens",
    "call_flashinfer",
    "call_hf",
    "in_parts",
    "one_torch_thread",
    "register",
    "row_slices",
    "seed_torch",
    "signature_named",
    "signature_names",
    "unregister",
    "vllm_call",
]
