"""Does specproof's verification step reach a vLLM engine core running in a child process?

    python examples/engine_ci/vllm_verifier_plugin_probe.py

Run in the audit-vllm venv with specproof installed (its ``vllm.general_plugins`` entry point
is what vLLM loads in the child). The parent calls ``install()`` and starts ``vllm.LLM`` with
the default multiprocessing engine core (draft model k = 3 on the tiny models). Two checks:

1. the child's plugin reports the install (a stderr line naming its process id);
2. behaviour: a request with logprobs, which vLLM's own step serves and specproof's refuses
   (``UnsupportedRequest``), must fail inside the engine core.

Prints ``plugin mode: works`` or what failed; exit status 0 / 1.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    import vllm

    from specproof.adapters import vllm_engine as ve
    from specproof.adapters import vllm_verifier
    from specproof.subjects.real_models import PROMPT, build_models

    vllm_verifier.install()
    with tempfile.TemporaryDirectory() as folder:
        paths = build_models(Path(folder))
        llm = vllm.LLM(
            model=str(paths.target), dtype="float32", max_model_len=ve.MAX_MODEL_LEN, seed=0,
            speculative_config=ve.speculative_config(ve.Speculation("draft", 3), paths),
            generation_config="vllm", enable_prefix_caching=False, enforce_eager=True,
        )  # fmt: skip
        prompt = [{"prompt_token_ids": list(PROMPT)}]
        plain = vllm.SamplingParams(temperature=1.0, max_tokens=5, ignore_eos=True, seed=1)
        out = llm.generate(prompt * 4, plain, use_tqdm=False)
        print("generated:", [list(o.outputs[0].token_ids) for o in out], flush=True)
        logprobs = vllm.SamplingParams(temperature=1.0, max_tokens=5, ignore_eos=True, logprobs=1)
        try:
            llm.generate(prompt, logprobs, use_tqdm=False)
        except Exception as error:  # the engine core died on the refusal
            print(f"logprobs request failed in the engine: {type(error).__name__}", flush=True)
            print("plugin mode: works")
            return 0
    print("plugin mode: NOT installed in the engine core (vLLM's own step served logprobs)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
