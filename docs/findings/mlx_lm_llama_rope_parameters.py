"""mlx-lm's llama loader ignores the RoPE base of a folder written by transformers 5.

Run with mlx-lm installed (mlx[cpu] works on Linux; seconds, no download, no torch):

    python docs/findings/mlx_lm_llama_rope_parameters.py

transformers 5 writes a llama's RoPE base inside ``rope_parameters`` (``{"rope_theta": ...,
"rope_type": "default"}``) and no top-level ``rope_theta``. mlx-lm's ``llama.ModelArgs`` reads
only the top-level key and falls back to 10000 without a word. The script saves one random
2-layer Llama with RoPE base 100000 (mlx's own initialisation, seeded) twice: with the config
as transformers 5 writes it, and with the same config plus a top-level ``rope_theta`` (the
transformers 4 layout, the control). It loads both with ``mlx_lm.utils.load_model`` and
compares their logits with the saved model's on one sequence of 16 tokens. Exit status 1 when
the transformers-5 folder loads with another base or other logits.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten
from mlx_lm.models import llama
from mlx_lm.utils import load_model

BASE = 100000.0
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "num_hidden_layers": 2, "intermediate_size": 128, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 32, "rms_norm_eps": 1e-6, "vocab_size": 32,
    "tie_word_embeddings": False, "max_position_embeddings": 2048,
}  # fmt: skip
TRANSFORMERS_5 = {**CONFIG, "rope_parameters": {"rope_theta": BASE, "rope_type": "default"}}
TRANSFORMERS_4 = {**TRANSFORMERS_5, "rope_theta": BASE}
SEQUENCE = [3, 17, 5, 29, 11, 2, 8, 23, 14, 7, 30, 1, 19, 4, 26, 9]


def saved_model(seed: int) -> llama.Model:
    mx.random.seed(seed)
    model = llama.Model(llama.ModelArgs.from_dict({**CONFIG, "rope_theta": BASE}))
    mx.eval(model.parameters())
    return model


def logits(model: llama.Model) -> np.ndarray:
    out = model(mx.array([SEQUENCE]))[0].astype(mx.float32)
    return np.array(out).astype(np.float64)


def loaded(folder: Path, config: dict[str, object], model: llama.Model) -> llama.Model:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    mx.save_safetensors(str(folder / "model.safetensors"), dict(tree_flatten(model.parameters())))
    out, _ = load_model(folder)
    return out


def main() -> int:
    model = saved_model(0)
    reference = logits(model)
    differs = False
    with tempfile.TemporaryDirectory() as scratch:
        for label, config in (("transformers 4 layout (control)", TRANSFORMERS_4),
                              ("transformers 5 layout", TRANSFORMERS_5)):  # fmt: skip
            folder = Path(scratch) / label.split(" (")[0].replace(" ", "-")
            out = loaded(folder, config, model)
            gap = np.abs(logits(out) - reference).max(axis=-1)
            print(f"{label}: loaded rope_theta {out.args.rope_theta:g} (saved {BASE:g}); "
                  f"max |logit gap| at position 0 {gap[0]:.2e}, over positions 1-15 "
                  f"{gap[1:].max():.2e}")  # fmt: skip
            if "control" not in label:
                differs = out.args.rope_theta != BASE or gap.max() > 1e-4
    print("the transformers 5 folder loads with another RoPE base" if differs else "no difference")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
