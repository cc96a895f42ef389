"""Tiny seeded transformers models built from config (never downloaded), and the assisted
generation settings the engine audit runs them under.

The target is a 2-layer Llama with V = 6 tokens; the assistant is a Mistral with the target's
weights plus seeded noise as large as the weights, a weak assistant: drafts are rejected often
(the correction path runs) yet accepted in full now and then. Each ``MODULE:FN`` here returns
(target, assistant, generate kwargs), as ``specproof audit-engine --hf`` expects.
"""

from __future__ import annotations

from typing import Any

import torch

VOCAB = 6
EOS = VOCAB - 1
SCALE = 0.3
"""Initializer std: large enough for the target's rows to differ visibly from uniform."""
ASSISTANT_NOISE = 1.0
"""Noise on the assistant's copy of the target's weights, relative to SCALE."""
DRAFT = 3
PROMPT = (1, 2, 3)

HFSetup = tuple[Any, Any, dict[str, Any]]


def _config(cls: Any, scale: float) -> Any:
    return cls(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        initializer_range=scale,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=False,
    )


def tiny_models(
    seed: int = 0, scale: float = SCALE, noise: float = ASSISTANT_NOISE, eos: bool = False
) -> tuple[Any, Any]:
    """(Llama target, Mistral assistant), both in eval mode, the same for the same seed; with
    ``eos`` token 5 ends generation, otherwise it is an ordinary token."""
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    torch.manual_seed(seed)
    target = LlamaForCausalLM(_config(LlamaConfig, scale)).eval()
    assistant = MistralForCausalLM(_config(MistralConfig, scale)).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    weights = {
        key: value + noise * scale * torch.randn(value.shape, generator=generator)
        if value.dim() > 1
        else value
        for key, value in target.state_dict().items()
    }
    assistant.load_state_dict(weights)
    for model in (target, assistant):
        model.generation_config.eos_token_id = EOS if eos else None
        model.generation_config.pad_token_id = EOS
    return target, assistant


def assisted(eos: bool = False, **sampling: Any) -> HFSetup:
    """Drafts of up to DRAFT tokens, no confidence cut, with these sampling kwargs."""
    target, assistant = tiny_models(eos=eos)
    kwargs = {
        "num_assistant_tokens": DRAFT,
        "num_assistant_tokens_schedule": "constant",
        "assistant_confidence_threshold": 0.0,
        **sampling,
    }
    return target, assistant, kwargs


def sample_t1() -> HFSetup:
    return assisted(do_sample=True)


def sample_t07() -> HFSetup:
    return assisted(do_sample=True, temperature=0.7)


def sample_top_k3() -> HFSetup:
    return assisted(do_sample=True, top_k=3)


def sample_top_p09() -> HFSetup:
    return assisted(do_sample=True, top_p=0.9)


def sample_repetition() -> HFSetup:
    return assisted(do_sample=True, repetition_penalty=1.3)


def sample_eos() -> HFSetup:
    """T = 1 with token 5 as EOS: runs end early, and the rows see the shorter lists."""
    return assisted(eos=True, do_sample=True)


def greedy() -> HFSetup:
    return assisted(do_sample=False)


def hf_defaults() -> HFSetup:
    """transformers' own assistant defaults (20 drafts, confidence threshold 0.4), at T = 1."""
    target, assistant = tiny_models()
    return target, assistant, {"do_sample": True}


CONFIGS = {
    "t1": sample_t1,
    "t0.7": sample_t07,
    "top-k 3": sample_top_k3,
    "top-p 0.9": sample_top_p09,
    "repetition 1.3": sample_repetition,
    "eos": sample_eos,
}
"""The sampled settings the installed transformers is audited under (name -> setup)."""
