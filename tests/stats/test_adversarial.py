"""Known lossy bugs, each rejected; their correct counterparts pass on the same problem.

Each bug's exact law is enumerated (stats.adversarial), so its TV from the target is stated and
the sample size is the one that detects TV >= DELTA with probability >= 1 - BETA, at a
false-fail rate <= ALPHA. The problem: V = 3, gamma = 2, position-only rows, 2 output tokens.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from stats.adversarial import (
    Law,
    bf16_rows,
    block_round,
    chain_round,
    exact_block_law,
    exact_chain_law,
    top_k_rows,
)

from specproof.audit.problems import TableProblem, exact_output_law
from specproof.audit.rounds import sample_rounds
from specproof.stats import FitResult, detection_power, exact_tv, goodness_of_fit, required_samples

ALPHA = 1e-6
BETA = 1e-4
DELTA = 0.05
TOLERANCE = 1e-6
"""Float32 rows and float64 draws: a correct sampler is within 1e-6 of the float64 law."""

PROBLEM = TableProblem(
    "adversarial",
    np.array([[[0.5, 0.3, 0.2]], [[0.2, 0.5, 0.3]], [[0.4, 0.4, 0.2]]]),
    np.array([[[0.3, 0.3, 0.4]], [[0.45, 0.2, 0.35]]]),
    tokens=2,
)
TARGET = exact_output_law(PROBLEM)
N = required_samples(DELTA, ALPHA, BETA, len(TARGET) + 1, TOLERANCE)

Round = Callable[[TableProblem, int, torch.Generator], torch.Tensor]
LOSSY: dict[str, tuple[Round, Callable[[], Law]]] = {
    "bf16-draft-fp32-ratio": (chain_round(bf16_rows), lambda: exact_chain_law(PROBLEM, bf16_rows)),
    "top-k-draft-raw-ratio": (
        chain_round(top_k_rows(2)),
        lambda: exact_chain_law(PROBLEM, top_k_rows(2)),
    ),
    "threshold-above-min(1,p/q)": (
        chain_round(relax=0.5),
        lambda: exact_chain_law(PROBLEM, relax=0.5),
    ),
    "block-token-wise-residual": (
        block_round(token_wise=True),
        lambda: exact_block_law(PROBLEM, token_wise=True),
    ),
}
LOSSLESS: dict[str, tuple[Round, Callable[[], Law]]] = {
    "chain": (chain_round(), lambda: exact_chain_law(PROBLEM)),
    "block": (block_round(), lambda: exact_block_law(PROBLEM)),
}


def fit_of(round_fn: Round, law: Law, seed: int, name: str) -> FitResult:
    sampled = sample_rounds(PROBLEM, round_fn, N, seed)
    outcomes = [tuple(row) for row in sampled.outputs.tolist()]
    return goodness_of_fit(
        outcomes, law, alpha=ALPHA, beta=BETA, delta=DELTA, tolerance=TOLERANCE, name=name
    )


@pytest.mark.parametrize("name", list(LOSSY))
def test_a_lossy_sampler_is_rejected(name: str) -> None:
    """alpha = 1e-6; power >= 1 - 1e-4 against the bug's exact TV (asserted >= DELTA = 0.05)."""
    round_fn, exact = LOSSY[name]
    law = exact()
    tv = exact_tv(law, TARGET)
    assert tv >= DELTA, f"{name}: exact TV {tv:.4f} below the stated delta"
    power = detection_power(N, TARGET, law, alpha=ALPHA, tolerance=TOLERANCE)
    assert power >= 1 - BETA, f"{name}: power {power:.6f} < 1 - beta at n = {N}"
    fit = fit_of(round_fn, TARGET, seed=11, name=name)
    assert fit.rejected, f"{name} (exact TV {tv:.4f}) escaped: " + fit.describe()


@pytest.mark.parametrize("name", list(LOSSY) + list(LOSSLESS))
def test_each_sampler_follows_its_own_exact_law(name: str) -> None:
    """The enumerators are right about the samplers: alpha = 1e-6, power 1 - 1e-4 at TV 0.05."""
    round_fn, exact = {**LOSSY, **LOSSLESS}[name]
    fit = fit_of(round_fn, exact(), seed=12, name=name)
    assert not fit.rejected, fit.describe()


@pytest.mark.parametrize("name", list(LOSSLESS))
def test_the_correct_samplers_are_lossless(name: str) -> None:
    """Exact (float64): the correct chain and block laws equal the target law; and their samples
    pass against it at alpha = 1e-6 (power 1 - 1e-4 against TV >= 0.05)."""
    round_fn, exact = LOSSLESS[name]
    assert exact_tv(exact(), TARGET) < 1e-12
    fit = fit_of(round_fn, TARGET, seed=13, name=name)
    assert not fit.rejected, fit.describe()
