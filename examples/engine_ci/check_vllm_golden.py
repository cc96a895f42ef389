"""The golden law vectors against the installed vLLM's own ``rejection_sample``, with the
vectors' accept uniforms injected as vLLM's ``uniform_probs`` (run in a venv with vLLM):

    python examples/engine_ci/check_vllm_golden.py golden/v1/chain_vectors.json

vLLM accepts draft k iff p/q >= u_k (the vectors' u_k < p/q away from equality, and every
injected uniform lies at least 1e-6 from it) and draws its recovered token with its own noise,
so this compares the number of accepted drafts and, after full acceptance, the bonus token it
is handed. Exit status 0 when every case agrees, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch


def rows(values: list[list[str]]) -> torch.Tensor:
    return torch.tensor([[float(Fraction(v)) for v in row] for row in values])


def check(case: dict[str, Any]) -> list[str]:
    from vllm.v1.sample import rejection_sampler

    from specproof.adapters.vllm_sampler import rejection_sample

    inputs, expected = case["inputs"], case["expected"]
    drafts = inputs["draft_ids"]
    n = len(drafts)
    target = rows(expected["processed_target"])
    greedy = inputs["sampling"]["greedy"]
    problems = []
    for given in expected["with_uniforms"]:
        uniforms = torch.tensor(given["accept_uniforms_float"], dtype=torch.float64)
        rejection_sampler.generate_uniform_probs = lambda *args, u=uniforms, **kw: u.clone()
        fields = SimpleNamespace(
            temperature=torch.tensor([0.0 if greedy else 1.0]),
            all_greedy=greedy,
            all_random=not greedy,
            top_p=None,
            top_k=None,
            generators={},
        )
        out = rejection_sample(
            torch.tensor(drafts, dtype=torch.int32),
            [n],
            n,
            torch.tensor([n], dtype=torch.int32),
            rows(inputs["draft_probs"]),
            target[:n].contiguous(),
            torch.tensor([[given["emitted"][-1]]], dtype=torch.int32),
            fields,
        )[0].tolist()
        emitted = [t for t in out if t >= 0]
        accepted = len(emitted) - 1
        if accepted != given["accepted"] or emitted[:accepted] != given["emitted"][:accepted]:
            problems.append(f"uniforms {given['accept_uniforms']}: vLLM emitted {emitted}")
        elif accepted == n and emitted != given["emitted"]:
            problems.append(f"uniforms {given['accept_uniforms']}: bonus {emitted[-1]}")
    return problems


def main(path: str) -> int:
    cases = json.loads(Path(path).read_text())["cases"]
    failed = skipped = 0
    for case in cases:
        if case["expected"]["refused"]:
            print(f"skip {case['name']} (no law: non-finite rows)")
            skipped += 1
            continue
        problems = check(case)
        verdict = "ok   " if not problems else "FAIL "
        print(verdict + case["name"] + "".join(f"\n     {p}" for p in problems))
        failed += bool(problems)
    print(f"{len(cases) - skipped} cases checked, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(
            f"usage: {sys.argv[0]} VECTORS.json (e.g. golden/v1/chain_vectors.json)",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
