"""The ``acceptance`` row of the engine audit: a correct chain engine passes it, one accepting
every draft and a lossless one skipping half its rounds fail it, on a
Markov engine in plain Python (default session) and on HF transformers' assisted generation
with tiny seeded models (``slow``: about 5-20 s each).

Rows run at alpha = 1e-3 (the audit's per-row false-fail rate here; the test is two-sided
with false-fail rate <= alpha by Ville's inequality, :mod:`specproof.stats.acceptance`). Seeds
are fixed, so each run is deterministic. The failing engines miss their expected count by far
more than the threshold (all 900 accepted against ~560 expected, or ~300 against ~560).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specproof.audit.engine import Emission, audit_engine
from specproof.audit.engine.acceptance import proposals_of
from specproof.subjects.acceptance_engines import DRAFT, TARGET, chain_engine

ALPHA = 1e-3
RUNS = 300


def acceptance(report):  # type: ignore[no-untyped-def]
    row = next(r for r in report.results if r.check == "acceptance")
    print(f"{report.subject}: {row.summary}")
    return row


def test_proposals_follow_the_rounds() -> None:
    run = Emission((5, 6, 7, 8, 9, 10), rounds=((3, 1), (3, 3)))
    # Round 1 tests drafts at positions 0 (accepted) and 1 (rejected); round 2 starts at 2.
    assert proposals_of(run) == ([0, 1, 2, 3, 4], [True, False, True, True, True])
    assert "rounds emit 3 tokens" in str(proposals_of(Emission((1, 2, 3, 4), ((2, 2),))))
    assert "accepts 4 of 3" in str(proposals_of(Emission((1, 2, 3, 4, 5), ((3, 4),))))
    # a last round that accepted every draft may lose its bonus token to the length limit
    assert proposals_of(Emission((1, 2, 3), ((3, 3),))) == ([0, 1, 2], [True, True, True])
    assert "ends at token 4" in str(proposals_of(Emission((1, 2, 3), ((3, 3), (0, 0)))))
    assert "ends at token 3" in str(proposals_of(Emission((1, 2), ((3, 2),))))
    # A last round whose accepted drafts end the run emits no token of the target's own.
    ended = Emission((1, 2, 3, 4, 5), ((3, 3), (1, 1)))
    assert proposals_of(ended) == ([0, 1, 2, 4], [True, True, True, True])
    assert "after the run's 5" in str(proposals_of(Emission((1, 2, 3, 4, 5), ((3, 3), (2, 1)))))


def test_correct_engine_passes_and_its_expectation_is_sum_min() -> None:
    report = audit_engine(chain_engine("correct"), runs=RUNS, alpha=ALPHA, num_new_tokens=4)
    row = acceptance(report)
    assert row.verdict == "pass" and not report.failed, report.table()
    # The expected count recomputed here from the chain's rows: each proposal at context c is
    # accepted with probability sum_x min(TARGET[c][x], DRAFT[c][x]).
    overlap = np.minimum(np.array(TARGET), np.array(DRAFT)).sum(axis=1)
    engine = chain_engine("correct")
    expected = 0.0
    for seed in range(RUNS):
        run = engine.generate(engine.prompt, 4, seed)
        assert isinstance(run, Emission)
        found = proposals_of(run)
        assert not isinstance(found, str)
        context = (*engine.prompt, *run.tokens)
        expected += sum(overlap[context[len(engine.prompt) - 1 + k]] for k in found[0])
    assert f"expected {expected:.1f}" in row.summary


@pytest.mark.parametrize(
    ("verifier", "direction"), [("accept-all", "too many"), ("skip-half", "too few")]
)
def test_wrong_acceptance_fails_the_row(verifier: str, direction: str) -> None:
    report = audit_engine(chain_engine(verifier), runs=RUNS, alpha=ALPHA, num_new_tokens=4)
    row = acceptance(report)
    assert row.verdict == "FAIL" and direction in row.summary, report.table()
    if verifier == "skip-half":
        # Lossless: every other row passes; only the acceptance row sees the slowdown.
        others = [r for r in report.results if r.check != "acceptance"]
        assert all(r.verdict == "pass" for r in others), report.table()


def test_sample_and_match_passes_its_own_rule_and_is_too_few_for_rejection() -> None:
    # sum_x p(x) q(x) per context is 0.22, 0.2, 0.25, 0.25, sum min(p, q) 0.6, 0.6, 0.65, 0.6:
    # the rejection rule expects over twice the count the engine reaches.
    engine = chain_engine("match")
    report = audit_engine(engine, runs=RUNS, alpha=ALPHA, num_new_tokens=4)
    row = acceptance(report)
    assert row.verdict == "pass" and "sample-and-match" in row.summary, report.table()
    assert not report.failed, report.table()  # lossless: every law row passes too
    engine.acceptance_rule = "rejection"
    report = audit_engine(engine, runs=RUNS, alpha=ALPHA, num_new_tokens=4)
    row = acceptance(report)
    assert row.verdict == "FAIL" and "too few" in row.summary, report.table()


def test_an_engine_without_a_draft_law_has_no_row() -> None:
    engine = chain_engine("correct")
    engine.draft_probs = None
    report = audit_engine(engine, runs=50, alpha=ALPHA, num_new_tokens=3)
    assert all(r.check != "acceptance" for r in report.results)


def test_a_failing_draft_law_fails_its_own_row() -> None:
    engine = chain_engine("correct")

    def broken(sequences: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("no drafter here")

    engine.draft_probs = broken
    report = audit_engine(engine, runs=50, alpha=ALPHA, num_new_tokens=3)
    assert report.results[-1].check == "draft_probs" and report.failed


transformers = pytest.importorskip(
    "transformers", reason="the HF rows need the hf extra (nox -s tests installs it)"
)


def hf_acceptance(setup, runs: int):  # type: ignore[no-untyped-def]
    from specproof.adapters.hf import hf_engine

    torch.set_num_threads(1)
    report = audit_engine(hf_engine(*setup(), name=setup.__name__), runs=runs, alpha=ALPHA,
                          delta=0.3)  # fmt: skip
    return report, acceptance(report)


@pytest.mark.slow
def test_hf_skipping_half_its_rounds_fails_only_the_acceptance_row() -> None:
    from specproof.subjects import hf_mutants

    report, row = hf_acceptance(hf_mutants.skip_half_the_rounds, 100)
    assert row.verdict == "FAIL" and "too few" in row.summary, report.table()
    assert [r.check for r in report.results if r.verdict == "FAIL"] == ["acceptance"]


@pytest.mark.slow
def test_hf_assisted_generation_passes_the_acceptance_row() -> None:
    from specproof.subjects import tiny

    report, row = hf_acceptance(tiny.sample_t1, 100)
    assert row.verdict == "pass" and not report.failed, report.table()


@pytest.mark.slow
def test_hf_accepting_every_draft_fails_too_many() -> None:
    from specproof.subjects import hf_mutants

    _, row = hf_acceptance(hf_mutants.accept_every_draft, 100)
    assert row.verdict == "FAIL" and "too many" in row.summary


def test_a_draft_law_over_another_vocabulary_fails_its_own_row() -> None:
    engine = chain_engine("correct")
    engine.draft_probs = lambda sequences: torch.full((*sequences.shape, 5), 0.2)
    report = audit_engine(engine, runs=50, alpha=ALPHA, num_new_tokens=3)
    last = report.results[-1]
    assert last.check == "draft_probs" and "vocabulary changed from 4 to 5" in last.summary
