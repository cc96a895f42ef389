"""The tiny Qwen3 target: saved as a Qwen3 HF folder that reads back as the model it says it
is (its folder's vocabulary and EOS are the value's), the same weights for the same seed."""

from __future__ import annotations

from pathlib import Path

import torch

from specproof.adapters.hf import load_hf
from specproof.models import model_from_folder
from specproof.subjects.real_models import PROMPT
from specproof.subjects.tiny_qwen3 import build_qwen3


def test_the_saved_qwen3_reads_back_as_the_model_it_describes(tmp_path: Path) -> None:
    model = build_qwen3(tmp_path / "a")
    target = load_hf(model.target)
    assert type(target).__name__ == "Qwen3ForCausalLM"
    from_folder = model_from_folder(model.target, prompt=PROMPT)
    assert (from_folder.vocab, from_folder.eos) == (model.vocab, model.eos)
    assert model.draft is None and model.prompt == PROMPT
    again = load_hf(build_qwen3(tmp_path / "b").target)
    ids = torch.tensor([list(PROMPT)])
    with torch.no_grad():
        logits, repeat = target(ids).logits, again(ids).logits
    assert torch.equal(logits, repeat)
    # rows far from uniform and from one-hot: what an audit at V = 8 needs
    top = torch.softmax(logits[0], -1).max(-1).values
    assert bool((top > 1.5 / model.vocab).all() and (top < 0.99).all())
