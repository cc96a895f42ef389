"""The large-vocab-long case: drafts of 0..8 on a large vocabulary, tokens hashed into 3 bins,
one row per output position. A verifier whose only bug is at output positions >= 3 (the
correction drawn from the residual of the previous position's rows, an off-by-one in
per-position indexing) fails the rows of those positions; a correct one passes.

Every statistical row has false-fail rate alpha = 1e-6 and, at the default n, power >= 1 - beta
= 0.9999 against TV >= delta = 0.05 in the law it tests. The bug's exact TV in each position
row is computed here by a forward pass independent of the audit's laws; V = 256 keeps the
test to seconds (the command's default is 2053; the TVs are alike, see the first test).
"""

from __future__ import annotations

import numpy as np
import pytest

from specproof.audit import audit_verifier, examples
from specproof.audit.bugclasses import bug, subject
from specproof.audit.cases import verifier_problems
from specproof.audit.problems import TableProblem, token_classes

VOCAB = 256
DELTA = 0.05
lagged_residual = subject(bug("residual-lagged-from-3"))


def case(vocab: int = VOCAB) -> TableProblem:
    return next(p for p in verifier_problems(0, vocab) if p.name == "large-vocab-long")


def lagged_residual_tvs(problem: TableProblem) -> dict[int, float]:
    """Exact TV between the position-j law of the chain rule and of the bug, j = 3..gamma.

    The bug keeps every acceptance and changes only the correction after a rejection at output
    position j >= 3, so the position-j laws differ only in the cells (length >= j, j emitted,
    class at j): P(first j - 1 drafts accepted, state a before the last, state b now) times
    max(p - q, 0) at (j - 1, b) binned, against the rejection mass at (j - 1, b) times the
    normalised binned residual at (j - 2, a)."""
    p, q = problem.p64(), problem.q64()
    classes, count = token_classes(problem)
    states = problem.states
    next_state = np.eye(states)[np.arange(problem.vocab) % states]
    move = np.minimum(p[:-1], q) @ next_state  # [gamma, state, next state]
    residual = np.maximum(p[:-1] - q, 0.0) @ np.eye(count)[classes]  # [gamma, state, class]
    rejected = residual.sum(-1)
    shape = residual / rejected[..., None]
    reach = np.zeros((states, states))  # [state before, state now]
    reach[problem.prompt_state, problem.prompt_state] = 1.0
    tvs = {}
    for k in range(problem.gamma):
        if k >= 2:
            correct = reach.sum(0) @ residual[k]
            lagged = np.einsum("ab,b,ac->c", reach, rejected[k], shape[k - 1])
            share = sum(n > k for n in problem.draft_lengths) / len(problem.draft_lengths)
            tvs[k + 1] = share * 0.5 * float(np.abs(correct - lagged).sum())
        reach = np.einsum("ab,bc->bc", reach, move[k])
    return tvs


def test_the_bug_is_above_delta_at_position_3_on_small_and_default_vocabularies() -> None:
    for vocab in (VOCAB, 2053):
        tvs = lagged_residual_tvs(case(vocab))
        assert tvs[3] >= DELTA + 0.03, (vocab, tvs)
        assert tvs[4] >= DELTA, (vocab, tvs)


def test_a_bug_only_from_position_3_fails_those_rows_and_no_other() -> None:
    problem = case()
    assert problem.vocab == VOCAB and problem.gamma == 8 and problem.token_bins is not None
    report = audit_verifier(lagged_residual, "vllm", problems=[problem], calls=False)
    failed = {r.check for r in report.results if not r.passed}
    assert {"position 3", "position 4"} <= failed, report.table()
    # The first two positions, the length and the layout follow the correct law (each
    # statistical row false-fails with probability <= 1e-6). The support row may fail too: the
    # lagged residual puts mass on the bin the correct residual leaves empty.
    assert not failed & {"position 1", "position 2", "length", "layout"}, report.table()


@pytest.mark.parametrize("signature", ["vllm", "flashinfer"])
def test_correct_verifiers_pass_the_case(signature: str) -> None:
    fn = examples.rejection_sample if signature == "vllm" else examples.chain_speculative_sampling
    report = audit_verifier(fn, signature, problems=[case()], calls=False)  # type: ignore[arg-type]
    assert report.passed, report.table()
    assert {f"position {j}" for j in range(1, 10)} <= {r.check for r in report.results}
