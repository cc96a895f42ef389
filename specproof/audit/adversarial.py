"""Fixed adversarial cases for the verifier battery, found by
``python -m specproof.runners.adversarial_search`` (random search over V = 3, gamma = 2 tables on a
grid of eighths, maximising one mutant class's exact round TV, from the reference rules). The
rows are integer weights (normalised when the problem is built); the TV in each comment is the
exact round TV of that class on the case as searched."""

from __future__ import annotations

import numpy as np

from .problems import TableProblem

CASES: dict[str, tuple[list[list[int]], list[list[int]], str]] = {
    "adversarial-threshold-eps": (
        [[7, 4, 4], [5, 4, 5], [1, 6, 4]],
        [[3, 2, 1], [0, 4, 7]],
        "maximises threshold-eps (exact round TV 0.0290)",
    ),
    "adversarial-shared-uniform": (
        [[2, 7, 2], [1, 5, 4], [0, 0, 1]],
        [[2, 1, 2], [2, 1, 6]],
        "maximises shared-uniform (exact round TV 0.1406)",
    ),
    "adversarial-residual-reuses-uniform": (
        [[3, 4, 7], [1, 6, 7], [7, 2, 1]],
        [[4, 0, 1], [0, 1, 6]],
        "maximises residual-reuses-uniform (exact round TV 0.1393)",
    ),
    "adversarial-q-top-k": (
        [[4, 7, 6], [1, 1, 3], [3, 1, 7]],
        [[4, 6, 7], [4, 5, 6]],
        "maximises q-top-k (exact round TV 0.3307)",
    ),
}


def adversarial_problems() -> list[TableProblem]:
    out = []
    for name, (target, draft, description) in CASES.items():
        p = np.array(target, dtype=np.float64)[:, None, :]
        q = np.array(draft, dtype=np.float64)[:, None, :]
        out.append(
            TableProblem(
                name,
                p / p.sum(-1, keepdims=True),
                q / q.sum(-1, keepdims=True),
                description=description,
            )
        )
    return out
