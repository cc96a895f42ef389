"""A seeded, untrained DFlash block drafter for a target folder, in the layout transformers
(5.25 and later) loads for ``generate(..., speculation_type="dflash")``:
``MuseGlimmerAssistantModel``, one decoder layer of the target's width reading the target's
hidden states at a few layers spread over its depth (never the last), drafting
``block_size - 1`` tokens a round through the target's own embedding and head.

Its weights are random, so its drafts are poor; a correct verifier keeps the target's law
whatever the drafts, which is what the audit tests. Written beside the target as the model's
head :data:`HEAD`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEAD = "dflash-transformers"
BLOCK = 4
"""The anchor and 3 drafts: the audit's 5 sampled tokens hold the prefill round's token and
one whole block (3 drafts and the bonus token)."""
SEED = 2


def available() -> bool:
    """Whether the installed transformers has the drafter class (added in 5.25)."""
    try:
        import transformers
    except ImportError:
        return False
    return hasattr(transformers, "MuseGlimmerAssistantConfig")


def feature_layers(layers: int) -> list[int]:
    """Three layers spread over the depth, never the last (the first, middle and one before
    the last; every layer of a target of at most three)."""
    if layers <= 3:
        return list(range(layers))
    return sorted({1, layers // 2, layers - 2})


def drafter_config(target: dict[str, Any], block_size: int = BLOCK) -> Any:
    """The drafter's config, its widths and rotary settings those of the target's
    ``config.json`` (``target``)."""
    from transformers import MuseGlimmerAssistantConfig

    heads = int(target["num_attention_heads"])
    head_dim = int(target.get("head_dim") or target["hidden_size"] // heads)
    eos = target.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    config = MuseGlimmerAssistantConfig(
        hidden_size=int(target["hidden_size"]),
        intermediate_size=int(target["intermediate_size"]),
        num_hidden_layers=1,
        num_attention_heads=heads,
        num_key_value_heads=int(target.get("num_key_value_heads") or heads),
        head_dim=head_dim,
        rms_norm_eps=float(target.get("rms_norm_eps", 1e-5)),
        rope_parameters=target.get("rope_parameters")
        or {"rope_type": "default", "rope_theta": float(target.get("rope_theta", 10000.0))},
        max_position_embeddings=int(target["max_position_embeddings"]),
        sliding_window=int(target["max_position_embeddings"]),
        layer_types=["full_attention"],
        bos_token_id=target.get("bos_token_id"),
        eos_token_id=eos,
        pad_token_id=eos,
        block_size=block_size,
        mask_token_id=eos if eos is not None else 0,
        target_layer_ids=feature_layers(int(target["num_hidden_layers"])),
    )
    return config


def write_block_drafter(target: Path, out: Path, seed: int = SEED) -> None:
    """The seeded drafter of ``target`` (an HF folder) saved to ``out``, whole or not at all."""
    import torch
    from transformers import MuseGlimmerAssistantModel

    config = drafter_config(json.loads((target / "config.json").read_text()))
    torch.manual_seed(seed)
    model = MuseGlimmerAssistantModel(config).eval()
    partial = out.with_name(out.name + ".partial")
    model.save_pretrained(partial)
    partial.rename(out)


def load_block_drafter(folder: Path) -> Any:
    import torch
    from transformers import MuseGlimmerAssistantModel

    return MuseGlimmerAssistantModel.from_pretrained(folder, dtype=torch.float32).eval()
