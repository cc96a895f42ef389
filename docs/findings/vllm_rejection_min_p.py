"""vLLM 0.32.0's RejectionSampler.forward applies no min-p at the verified positions: with its CPU
expand kernel replaced (docs/findings/vllm_cpu_expand_kernel.md), it fails every min-p case of the
audit and passes each against the same raw rows processed without min-p (the metadata still
carries min-p). Run in the audit-vllm venv from a clone's root:

    PYTHONPATH=. .nox/audit-vllm/bin/python docs/findings/vllm_rejection_min_p.py
"""

from dataclasses import replace

from specproof.adapters.vllm_sampler import forward_logits_expand_fixed, installed_version
from specproof.audit import audit_verifier
from specproof.audit.filters import exact_rows, filter_problems

problems = filter_problems(0, "vllm")
control = [
    replace(
        p,
        name=p.name + "/no-min-p",
        target=exact_rows(p.raw, replace(p.requests[0], min_p=None), "vllm"),
    )
    for p in problems
    if p.requests[0].min_p is not None
]
report = audit_verifier(
    forward_logits_expand_fixed,
    "vllm-logits",
    problems=problems + control,
    calls=False,
    robustness=False,
)
print("vllm", installed_version())
print(report.table())
