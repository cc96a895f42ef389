"""OpenVINO GenAI's draft-model speculation returns wrong tokens, even greedy ones, for requests
whose prompts the scheduler prefills over several steps.

Run with the engine and the GGUF writer installed (CPU; under a minute, no download, no torch):

    pip install openvino-genai==2026.4.1.0 gguf numpy
    python docs/findings/openvino_genai_speculative_split_prefill.py

The two random 2-layer Llamas of openvino_genai_speculative_sampling.py (beside this file; its
model writer is reused), compiled at f32 compute and KV cache. Greedy decoding is
deterministic, so speculation, whatever it drafts, must return exactly the tokens the pipeline
returns without it. ``ContinuousBatchingPipeline.generate`` decodes PROMPTS random prompts of 8
tokens greedily (``ignore_eos``, 8 new tokens) in one call: without speculation, and with
``draft_model`` (``num_assistant_tokens`` 3) under the default scheduler (a token budget,
``max_num_batched_tokens``, of 256 per step: 1,600 prompt tokens are prefilled over several
steps) and under a budget that holds every prompt at once. Exit status 1 when outputs differ
under the default budget and none differs under the large one.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import openvino as ov
import openvino_genai

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openvino_genai_speculative_sampling import VOCAB, as_ir, weights

PROMPTS = 200
PROMPT_LENGTH = 8
NEW_TOKENS = 8
LARGE_BUDGET = 1_000_000
PRECISION = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
"""f32 compute and KV cache, so that no near tie can separate the two paths' argmaxes."""


def greedy_outputs(
    target: Path, draft: Path | None, prompts: list[list[int]], budget: int | None
) -> list[list[int]]:
    scheduler = openvino_genai.SchedulerConfig()
    scheduler.cache_size = 1
    if budget is not None:
        scheduler.max_num_batched_tokens = budget
    properties: dict[str, object] = dict(PRECISION)
    if draft is not None:
        properties["draft_model"] = openvino_genai.draft_model(str(draft), "CPU", **PRECISION)
    pipeline = openvino_genai.ContinuousBatchingPipeline(str(target), scheduler, "CPU", properties)
    configs = []
    for _ in prompts:
        config = openvino_genai.GenerationConfig(
            max_new_tokens=NEW_TOKENS, do_sample=False, ignore_eos=True
        )
        if draft is not None:
            config.num_assistant_tokens = 3
        configs.append(config)
    tensors = [ov.Tensor(np.array([p], dtype=np.int64)) for p in prompts]
    return [list(r.m_generation_ids[0]) for r in pipeline.generate(tensors, configs)]


def main() -> int:
    rng = np.random.default_rng(0)
    prompts = [[int(t) for t in rng.integers(1, VOCAB - 1, PROMPT_LENGTH)] for _ in range(PROMPTS)]
    with tempfile.TemporaryDirectory() as scratch:
        target = as_ir(Path(scratch) / "target", weights(0))
        draft = as_ir(Path(scratch) / "draft", weights(0, noise=0.25))
        plain = greedy_outputs(target, None, prompts, None)
        differing = {}
        for name, budget in (("default token budget", None), ("large token budget", LARGE_BUDGET)):
            speculative = greedy_outputs(target, draft, prompts, budget)
            diff = [i for i, (a, b) in enumerate(zip(plain, speculative, strict=True)) if a != b]
            differing[name] = len(diff)
            example = ""
            if diff:
                i = diff[0]
                example = f"; first: prompt {i} {prompts[i]}: {plain[i]} vs {speculative[i]}"
            print(f"draft_model, {name}: {len(diff)} of {PROMPTS} greedy outputs differ from "
                  f"speculation off{example}")  # fmt: skip
    print(f"openvino-genai {openvino_genai.__version__}; {PROMPTS} prompts of {PROMPT_LENGTH} "
          f"tokens in one generate call, {NEW_TOKENS} new tokens each")  # fmt: skip
    stands = differing["default token budget"] > 0 and differing["large token budget"] == 0
    return 1 if stands else 0


if __name__ == "__main__":
    sys.exit(main())
