"""Tiny EAGLE and EAGLE-3 draft heads for the tiny target of :mod:`.real_models`, built from
config with a fixed seed (nothing is downloaded), in the checkpoint layout vLLM loads with
``speculative_config={"method": "eagle" | "eagle3", "model": folder}``.

Both heads are one Llama decoder layer with random weights: their drafts are poor, so they are
rejected often and accepted in full now and then, which is what the audit needs. They share
the target's embedding (no ``embed_tokens`` weight is saved); the EAGLE-3 head has its own
``lm_head`` over the full vocabulary, as EAGLE-3 checkpoints do. The EAGLE-3 head reads the
target's hidden states before each of its two layers (``eagle_aux_hidden_state_layer_ids``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from specproof.subjects.real_models import (
    HEADS,
    HIDDEN,
    SCALE,
    SEED,
    VOCAB,
    llama_config,
    save_tokenizer,
)

METHODS = ("eagle", "eagle3")
AUX_LAYERS = (0, 1)
"""Target layers whose input hidden state the EAGLE-3 head reads (fc input 2 x hidden)."""


def _layer(prefix: str, attention_input: int, generator: torch.Generator) -> dict[str, Any]:
    head_dim = HIDDEN // HEADS
    shapes = {
        "self_attn.q_proj.weight": (HIDDEN, attention_input),
        "self_attn.k_proj.weight": (head_dim, attention_input),  # one KV head
        "self_attn.v_proj.weight": (head_dim, attention_input),
        "self_attn.o_proj.weight": (HIDDEN, HIDDEN),
        "mlp.gate_proj.weight": (2 * HIDDEN, HIDDEN),
        "mlp.up_proj.weight": (2 * HIDDEN, HIDDEN),
        "mlp.down_proj.weight": (HIDDEN, 2 * HIDDEN),
    }
    out = {
        f"{prefix}.{name}": SCALE * torch.randn(shape, generator=generator)
        for name, shape in shapes.items()
    }
    out[f"{prefix}.post_attention_layernorm.weight"] = torch.ones(HIDDEN)
    return out


def eagle_weights(method: str, seed: int = SEED) -> dict[str, torch.Tensor]:
    """The head's tensors under the names vLLM 0.32.0's loaders read."""
    if method not in METHODS:
        raise ValueError(f"no EAGLE head {method!r}; known: {', '.join(METHODS)}")
    generator = torch.Generator().manual_seed(seed + 7 + METHODS.index(method))
    if method == "eagle":
        # EagleLlamaForCausalLM: fc over [embedding, hidden], then one layer (its input norm
        # is dropped; vLLM numbers its attention after the target's layers but loads it as
        # layers.0); embedding and lm_head shared with the target.
        weights = {"fc.weight": SCALE * torch.randn((HIDDEN, 2 * HIDDEN), generator=generator)}
        weights.update(_layer("layers.0", HIDDEN, generator))
        return weights
    # Eagle3LlamaForCausalLM: fc over the target's aux hidden states, a "midlayer" attending
    # over [normed embedding, normed hidden], a final norm and its own lm_head.
    aux = len(AUX_LAYERS) * HIDDEN
    weights = {"fc.weight": SCALE * torch.randn((HIDDEN, aux), generator=generator)}
    weights.update(_layer("midlayer", 2 * HIDDEN, generator))
    weights["midlayer.input_layernorm.weight"] = torch.ones(HIDDEN)
    weights["midlayer.hidden_norm.weight"] = torch.ones(HIDDEN)
    weights["norm.weight"] = torch.ones(HIDDEN)
    weights["lm_head.weight"] = SCALE * torch.randn((VOCAB, HIDDEN), generator=generator)
    return weights


def eagle_config(method: str) -> dict[str, Any]:
    config: dict[str, Any] = llama_config().to_dict()
    config["num_hidden_layers"] = 1
    config["torch_dtype"] = "float32"
    if method == "eagle":
        config["architectures"] = ["LlamaForCausalLM"]  # vLLM names it EagleLlamaForCausalLM
    else:
        config["architectures"] = ["LlamaForCausalLMEagle3"]
        config["draft_vocab_size"] = VOCAB
        config["eagle_config"] = {
            "eagle_aux_hidden_state_layer_ids": list(AUX_LAYERS),
            "use_aux_hidden_state": True,
        }
    return config


def save_eagle(folder: Path, method: str, seed: int = SEED) -> Path:
    """Write the ``method`` head (config.json, model.safetensors, tokenizer) to ``folder``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.contiguous() for k, v in eagle_weights(method, seed).items()}
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(eagle_config(method), indent=1))
    save_tokenizer(folder)
    return folder
