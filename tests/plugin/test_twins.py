"""The twins are far from the law the check expects: the round law of a correct verifier handed
target rows shifted by one token id, on the twin's case, is at exact TV >= 0.2 from the exact
round law (>= every level's delta), so the check fails the twin with probability >= its power."""

from __future__ import annotations

import numpy as np
import torch

from specproof.audit.laws import exact_round_law
from specproof.audit.problems import TableProblem
from specproof.audit.signatures import signature_named
from specproof.testing.levels import LEVELS
from specproof.testing.lossless import TWIN_CASE, plugin_problems
from specproof.testing.twins import shifted, shifted_target_twin

TARGET_ARGUMENT = {"flashinfer": 2, "vllm": 5, "vllm-logits": 5, "hf": 2}
"""Position of the target rows in each engine's call, read off the engines' argument lists."""


def test_the_verifier_twin_round_law_is_far_beyond_every_delta() -> None:
    (problem,) = plugin_problems((TWIN_CASE,), 0, "flashinfer")
    twin = TableProblem("twin", np.roll(problem.target, 1, axis=-1), problem.draft)
    law, twin_law = exact_round_law(problem), exact_round_law(twin)
    tv = 0.5 * sum(abs(law.get(k, 0.0) - twin_law.get(k, 0.0)) for k in set(law) | set(twin_law))
    assert tv >= 2 * max(level.delta for level in LEVELS.values())  # measured: 0.587


def test_the_twin_shifts_only_the_target_argument() -> None:
    seen: list[tuple[torch.Tensor, ...]] = []

    def subject(*args: torch.Tensor, **kwargs: object) -> None:
        seen.append(args)

    rows = torch.arange(6.0).reshape(2, 3)
    for signature, index in TARGET_ARGUMENT.items():
        assert signature_named(signature).target_argument == index
        args = [torch.zeros(1)] * 8
        args[index] = rows
        shifted_target_twin(subject, signature)(*args)
        assert torch.equal(seen[-1][index], torch.tensor([[2.0, 0.0, 1.0], [5.0, 3.0, 4.0]]))
        assert all(seen[-1][i] is args[i] for i in range(8) if i != index)
    assert torch.equal(shifted(rows)[:, 1:], rows[:, :-1])
