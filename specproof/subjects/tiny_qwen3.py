"""A tiny Qwen3 target built from config with a fixed seed and saved with the tiny Llama's
tokenizer (:mod:`.real_models`): the second target architecture the DFlash reference documents
for its Transformers backend (Qwen3 and Llama). It has no drafter folder: the engines audited
on it build their drafters from the target (the dflash adapter's DFlash and DFlash2).

Same vocabulary (V = 8), prompt, width and depth as the tiny Llama, so the two models' rows
differ only in the architecture (Qwen3's per-head q/k norms, its head size given apart from
the width).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from specproof.models import AuditModel
from specproof.subjects.real_models import (
    BOS,
    EOS,
    HEADS,
    HIDDEN,
    MAX_POSITIONS,
    PROMPT,
    SCALE,
    SEED,
    VOCAB,
    save_model,
)

NAME = "tiny Qwen3 (V = 8)"


def qwen3_config() -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        num_key_value_heads=1,
        head_dim=HIDDEN // HEADS,
        max_position_embeddings=MAX_POSITIONS,
        initializer_range=SCALE,
        bos_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=False,
    )


def build_qwen3(folder: Path, seed: int = SEED) -> AuditModel:
    """Save the tiny Qwen3 target in ``folder`` (rebuilt every call: it takes seconds) and
    return it as the value adapters take."""
    from transformers import Qwen3ForCausalLM

    torch.manual_seed(seed)
    save_model(Qwen3ForCausalLM(qwen3_config()).eval(), folder)
    return AuditModel(
        name=NAME,
        target=folder,
        vocab=VOCAB,
        eos=(EOS,),
        prompt=PROMPT,
        notes=(f"a 2-layer Qwen3 built from config (seed {seed}), no drafter folder",),
    )
