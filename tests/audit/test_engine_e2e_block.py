"""``audit-engine`` on specproof's own end-to-end decoders (through the adapter over
:mod:`specproof.e2e`'s decode API) and on the block round run as one unit.

Reduced n with alpha = 1e-3 per row, delta = 0.3: a correct decoder fails one of its rows with
probability <= 1e-2 (seeds fixed: deterministic). The block mutants run at the audit's default
n (alpha = 1e-6, power >= 0.9999 against TV >= 0.1 in each row's law), which is cheap for the
table-driven round.
"""

from __future__ import annotations

import pytest
import torch

from specproof.audit.engine import audit_engine
from specproof.subjects.block_examples import BLOCK_ENGINES
from specproof.subjects.e2e_decoders import E2E_DECODERS

ALPHA = 1e-3
DELTA = 0.3


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("name", list(E2E_DECODERS))
def test_e2e_decoders_pass_audit_engine(name: str) -> None:
    engine = E2E_DECODERS[name]()
    report = audit_engine(engine, runs=20 if engine.greedy else 200, alpha=ALPHA, delta=DELTA)
    # No row fails; a sampled engine's 200 runs fall short of the goal power (inconclusive),
    # a greedy engine's rows are exact.
    assert not report.failed, report.table()
    assert report.verdict == ("PASS" if engine.greedy else "INCONCLUSIVE"), report.table()
    coverage = report.results[-1]
    assert coverage.check == "coverage" and coverage.verdict == "pass", coverage.detail


@pytest.mark.parametrize("name", [n for n, (e, _) in BLOCK_ENGINES.items() if e == "PASS"])
def test_block_rounds_pass(name: str) -> None:
    report = audit_engine(BLOCK_ENGINES[name][1](), runs=1000, alpha=ALPHA, delta=DELTA)
    assert report.passed, report.table()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if "untempered" in n else n
        for n, (e, _) in BLOCK_ENGINES.items()
        if e == "FAIL"
    ],
)
def test_block_round_mutants_fail_at_the_default_n(name: str) -> None:
    report = audit_engine(BLOCK_ENGINES[name][1]())
    assert not report.passed, report.table()
