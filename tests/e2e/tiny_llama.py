"""A tiny random Llama saved by transformers, for the tests of the Llama target."""

from __future__ import annotations

from pathlib import Path

import torch

VOCAB = 97
FEATURES = (0, 2)


def write_tiny_llama(folder: Path) -> Path:
    """A random 4-layer Llama with grouped-query attention (4 heads, 2 KV heads), a rotary
    theta other than the default and tied embeddings, saved by transformers into ``folder``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rope_theta=50_000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for weight in model.parameters():  # far from the ones init: every weight matters
            if weight.dim() > 1:
                weight.normal_(0.0, 0.2)
            else:
                weight.normal_(1.0, 0.2)
    model.save_pretrained(folder)
    return folder
