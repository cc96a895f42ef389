"""A seeded, untrained EAGLE-3 head for a Llama target folder, in the checkpoint layout
llama.cpp's converter reads as an EAGLE-3 draft (``LlamaForCausalLMEagle3``: ``draft_vocab_size``
and one hidden layer in ``config.json``, converted with ``--target-model-dir``): ``fc`` over the
target's hidden states entering three of its layers, one decoder layer ("midlayer") attending
over the normed token embedding and the normed fused features, a final norm and its own
``lm_head`` over the full vocabulary (no ``d2t``: the draft vocabulary is the target's).

Its weights are random, so its drafts are poor; a correct verifier keeps the target's law
whatever the drafts, which is what the audit tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SEED = 3
SCALE = 0.02


def aux_layers(layers: int) -> list[int]:
    """The three target layers llama.cpp's converter picks when a config names none."""
    return [2, layers // 2, layers - 3]


def head_config(target: dict[str, Any]) -> dict[str, Any]:
    """The head's ``config.json`` from the target's."""
    config = dict(target)
    config.update(
        architectures=["LlamaForCausalLMEagle3"],
        num_hidden_layers=1,
        draft_vocab_size=int(target["vocab_size"]),
        eagle_aux_hidden_state_layer_ids=aux_layers(int(target["num_hidden_layers"])),
        target_hidden_size=int(target["hidden_size"]),
        tie_word_embeddings=False,
    )
    config.pop("layer_types", None)
    return config


def head_weights(target: dict[str, Any], seed: int = SEED) -> dict[str, Any]:
    """The head's tensors under the names the converter renames (``midlayer.*``)."""
    import torch

    hidden = int(target["hidden_size"])
    heads = int(target["num_attention_heads"])
    kv_heads = int(target.get("num_key_value_heads") or heads)
    head_dim = int(target.get("head_dim") or hidden // heads)
    inner = int(target["intermediate_size"])
    vocab = int(target["vocab_size"])
    generator = torch.Generator().manual_seed(seed)
    shapes = {
        "fc.weight": (hidden, 3 * hidden),
        "midlayer.self_attn.q_proj.weight": (heads * head_dim, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": (kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": (kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "midlayer.mlp.gate_proj.weight": (inner, hidden),
        "midlayer.mlp.up_proj.weight": (inner, hidden),
        "midlayer.mlp.down_proj.weight": (hidden, inner),
        "lm_head.weight": (vocab, hidden),
    }
    weights = {
        name: SCALE * torch.randn(shape, generator=generator) for name, shape in shapes.items()
    }
    for norm in ("midlayer.input_layernorm", "midlayer.hidden_norm",
                 "midlayer.post_attention_layernorm", "norm"):  # fmt: skip
        weights[f"{norm}.weight"] = torch.ones(hidden)
    return weights


def write_eagle3_head(target: Path, out: Path, seed: int = SEED) -> Path:
    """The seeded head of ``target`` (an HF folder) saved to ``out``, whole or not at all."""
    import shutil

    from safetensors.torch import save_file

    config = json.loads((target / "config.json").read_text())
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    weights = {k: v.contiguous() for k, v in head_weights(config, seed).items()}
    save_file(weights, str(partial / "model.safetensors"), metadata={"format": "pt"})
    (partial / "config.json").write_text(json.dumps(head_config(config), indent=1))
    partial.rename(out)
    return out
