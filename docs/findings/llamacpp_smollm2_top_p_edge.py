"""llama.cpp on SmolLM2-135M-Instruct: a top-p cut decided by a near tie that the engine's own
cache path flips (numerics, not a sampling bug).

Run in the audit-llamacpp venv after ``python -m specproof.runners.smollm2`` (the model once,
cached; the float32 GGUF is converted beside it on first use):

    python docs/findings/llamacpp_smollm2_top_p_edge.py

The audit's "truncated no draft" configuration (top-k 5, top-p 0.9, min-p 0.05, repetition
penalty 1.3 over the emitted tokens) emitted, in run 55, a token whose mass in HF's law is 0.
At that position two tokens are nearly tied at ranks 4 and 5 and the top-p cut keeps four:
whichever ranks fourth is kept. This prints both engines' top five there, then run 55 as a
fresh ``Llama`` makes it and as one that served runs 0..54 first (as the audit calls it): the
fourth token differs, because llama.cpp's logits for the same context differ by how its KV
cache was filled. Exit status 1 when the two runs of seed 55 differ (the flip reproduced).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from specproof.adapters import llamacpp_engine as le
from specproof.models.smollm2 import smollm2

SEED = 55
POSITION = 4


def top_five(name: str, logits: torch.Tensor, emitted: list[int]) -> None:
    row = le.penalised(logits.float(), emitted, 1.3).double()
    probs = torch.softmax(row, -1)
    top = torch.topk(probs, 5)
    pairs = zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ranked = ", ".join(f"{i}: {p:.5f}" for i, p in pairs)
    print(f"{name:9} top five (id: probability): {ranked}")


def main() -> int:
    model = smollm2(say=lambda text: None)
    config = le.by_name("truncated no draft", model)
    converter = le.converter_folder(Path(sys.prefix) / "share" / "specproof")
    ggufs = {"target": le.gguf_of(model.target, converter)}
    fresh = le.llamacpp_engine(config, model, ggufs).generate(config.prompt, 5, SEED).tokens
    served = le.llamacpp_engine(config, model, ggufs)
    after = [served.generate(config.prompt, 5, seed).tokens for seed in range(SEED + 1)][-1]
    print(f"run {SEED}, fresh engine:          {fresh}")
    print(f"run {SEED}, after runs 0..{SEED - 1}: {after}")
    sequence = [*config.prompt, *after]
    at = len(config.prompt) + POSITION - 1
    emitted = sequence[len(config.prompt) : at]
    with torch.no_grad():
        hf = le.load_hf(model.target)(torch.tensor([sequence])).logits[0, at - 1].double()
    top_five("HF", hf, emitted)
    top_five(
        "llama.cpp", le.llama_logits(le.open_llama(ggufs["target"]))(sequence)[at - 1], emitted
    )
    return 1 if fresh != after else 0


if __name__ == "__main__":
    sys.exit(main())
