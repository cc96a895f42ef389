"""``python -m specproof.runners.adversarial_search``: for each mutant class, a random search over
small tables (V = 3, one state, gamma = 2) for the largest exact round TV of that class (from
the reference rules), printed as the fixed arrays of :mod:`specproof.audit.adversarial`."""

from __future__ import annotations

import numpy as np

from specproof.audit.laws import default_rule, exact_round_law
from specproof.audit.problems import TableProblem
from specproof.commands.command_rules import OneLineParser
from specproof.stats import exact_tv
from specproof.subjects.mutants.rules import MutantChain

PROG = "python -m specproof.runners.adversarial_search"
CLASSES = (
    "threshold-eps",
    "shared-uniform",
    "residual-reuses-uniform",
    "q-top-k",
    "q-bf16",
    "uniform-bf16",
)


def candidate(rng: np.random.Generator, vocab: int = 3, gamma: int = 2) -> TableProblem:
    """Rows on a grid of eighths, some entries zero: small exact tables."""

    def rows(count: int) -> np.ndarray:
        raw = rng.integers(0, 8, size=(count, 1, vocab)).astype(np.float64)
        raw[raw.sum(-1) == 0, 0] = 1
        return raw / raw.sum(-1, keepdims=True)

    return TableProblem("candidate", rows(gamma + 1), rows(gamma))


def search(bug: str, tries: int, seed: int) -> tuple[float, TableProblem]:
    rng = np.random.default_rng(seed)
    best: tuple[float, TableProblem] | None = None
    for _ in range(tries):
        problem = candidate(rng)
        law = exact_round_law(problem, lambda greedy: MutantChain(bug))
        tv = exact_tv(law, exact_round_law(problem, default_rule))
        if best is None or tv > best[0]:
            best = (tv, problem)
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--tries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for bug in CLASSES:
        tv, problem = search(bug, args.tries, args.seed)
        print(f"# {bug}: exact round TV {tv:.6g}")
        print(f"target={problem.target.round(6).tolist()!r}")
        print(f"draft={problem.draft.round(6).tolist()!r}")


if __name__ == "__main__":
    main()
