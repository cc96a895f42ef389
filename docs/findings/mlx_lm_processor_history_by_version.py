"""Which tokens an installed mlx-lm hands its logits processors at the first generated token.

Prints, for `generate_step` and for `speculative_generate_step` (the model drafting for
itself), the token history the first processor call receives after a 6-token prompt. A
path that keeps the prompt prints all 6 tokens; a path that drops it prints the last one.

Needs mlx (`mlx[cpu]` on Linux) and one mlx-lm; no model download. Across releases, with
each wheel unpacked into its own folder (pure Python, so one mlx serves them all):

    for v in 0.26.4 0.27.0 0.31.1 0.31.2 0.31.3 0.32.0 0.32.2; do
        pip download --no-deps mlx-lm==$v -d wheels && unzip -q -o wheels/mlx_lm-$v-*.whl -d lm/$v
        PYTHONPATH=lm/$v python docs/findings/mlx_lm_processor_history_by_version.py
    done
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import mlx.core as mx
import mlx_lm
from mlx_lm.generate import generate_step, speculative_generate_step
from mlx_lm.models import llama

Processor = Callable[[mx.array, mx.array], mx.array]


def first_history(run: Callable[[list[Processor]], Iterable[object]]) -> list[int]:
    """The token history of the first processor call made while ``run`` generates."""
    seen: list[list[int]] = []

    def record(tokens: mx.array, logits: mx.array) -> mx.array:
        if not seen:
            seen.append([int(t) for t in tokens.tolist()])
        return logits

    for _ in run([record]):
        pass
    return seen[0]


def main() -> None:
    mx.random.seed(0)
    args = llama.ModelArgs(
        model_type="llama", hidden_size=32, num_hidden_layers=1, intermediate_size=64,
        num_attention_heads=2, rms_norm_eps=1e-5, vocab_size=16, num_key_value_heads=2,
    )  # fmt: skip
    model = llama.Model(args)
    mx.eval(model.parameters())
    prompt = mx.array([2, 5, 7, 9, 3, 11], mx.uint32)
    plain = first_history(lambda p: generate_step(prompt, model, max_tokens=2, logits_processors=p))
    spec = first_history(
        lambda p: speculative_generate_step(
            prompt, model, model, num_draft_tokens=2, max_tokens=3, logits_processors=p
        )
    )
    print(
        f"mlx-lm {mlx_lm.__version__}: prompt {prompt.tolist()}; "
        f"generate_step {plain}; speculative_generate_step {spec}"
    )


if __name__ == "__main__":
    main()
