"""mlx-lm's speculative decoding leaves the prompt out of the logits processors' context.

Run with mlx-lm installed (mlx[cpu] works on Linux; seconds, no download, no torch):

    python docs/findings/mlx_lm_speculative_penalty_prompt.py

A random 2-layer Llama (mlx's own initialisation, seeded) and the repetition penalty of
``make_logits_processors``. ``generate_step`` hands its processors the whole prompt and the
tokens generated so far; ``speculative_generate_step`` hands them only the prompt's last token
and the tokens generated so far, so with a draft model the penalty skips every other prompt
token and the output law differs from the same call without one. The script compares the
log-probabilities both yield for the first token (no sampling involved: both are
deterministic) and the law of each with the penalty applied by hand to the whole prompt and to
its last token only. Exit status 1 when the speculative law differs from the plain one.
"""

from __future__ import annotations

import sys

import mlx.core as mx
import numpy as np
from mlx_lm.generate import generate_step, speculative_generate_step
from mlx_lm.models import llama
from mlx_lm.sample_utils import make_logits_processors

PENALTY = 1.3
PROMPT = [4, 5, 4, 5, 4, 5, 4, 5, 1, 2, 6, 3]


def tiny_llama(seed: int) -> llama.Model:
    mx.random.seed(seed)
    args = llama.ModelArgs(
        model_type="llama", hidden_size=64, num_hidden_layers=2, intermediate_size=128,
        num_attention_heads=2, num_key_value_heads=1, rms_norm_eps=1e-6, vocab_size=8,
        tie_word_embeddings=False,
    )  # fmt: skip
    model = llama.Model(args)
    # Logits of a few units (mlx's default initialisation gives nearly uniform rows).
    model.update({"lm_head": {"weight": 4 * model.lm_head.weight}})
    mx.eval(model.parameters())
    return model


def probs(logprobs: mx.array) -> np.ndarray:
    return np.exp(np.array(logprobs.astype(mx.float32)).reshape(-1))


def penalised_law(model: llama.Model, context: list[int]) -> np.ndarray:
    logits = np.array(model(mx.array([PROMPT]))[0, -1].astype(mx.float32)).astype(np.float64)
    for token in set(context):
        logits[token] = logits[token] * PENALTY if logits[token] < 0 else logits[token] / PENALTY
    return np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()


def main() -> int:
    target = tiny_llama(0)
    draft = tiny_llama(0)  # the target's own weights: drafting cannot change the law
    prompt = mx.array(PROMPT, dtype=mx.uint32)
    processors = make_logits_processors(repetition_penalty=PENALTY, repetition_context_size=20)
    _, plain = next(generate_step(prompt, target, max_tokens=1, logits_processors=processors))
    _, speculative, _ = next(
        speculative_generate_step(prompt, target, draft, num_draft_tokens=3, max_tokens=1,
                                  logits_processors=processors)
    )  # fmt: skip
    plain_p, speculative_p = probs(plain), probs(speculative)
    whole, last = penalised_law(target, PROMPT), penalised_law(target, PROMPT[-1:])
    np.set_printoptions(precision=4, suppress=True)
    print(f"prompt {PROMPT}, repetition penalty {PENALTY} over the last 20 tokens")
    print(f"generate_step             {plain_p}")
    print(f"speculative_generate_step {speculative_p}")
    print(f"penalty on the whole prompt (by hand)       {whole}")
    print(f"penalty on the prompt's last token (by hand) {last}")
    tv = 0.5 * float(np.abs(plain_p - speculative_p).sum())
    print(f"TV(plain, speculative) of the first token: {tv:.4f}")
    as_whole = np.allclose(plain_p, whole, atol=1e-5)
    as_last = np.allclose(speculative_p, last, atol=1e-5)
    print(f"plain = whole prompt: {as_whole}; speculative = last token only: {as_last}")
    return 1 if tv > 1e-4 else 0


if __name__ == "__main__":
    sys.exit(main())
