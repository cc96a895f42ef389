"""The rows of ``specproof audit-engine`` on hand-made engines whose laws are known exactly.

The target is a fixed table: the law of the next token depends on the last token only. Every
statistical assertion runs at alpha = 1e-6 per row (a correct engine fails a row with
probability at most 1e-6; the seeds are fixed, so each test is deterministic), and the biased
engines sit at a TV from the target that the rows detect with the power stated beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from specproof.audit.engine import Emission, Engine, audit_engine
from specproof.audit.engine.coverage import WARN, untaken_paths
from specproof.audit.engine.laws import first_tokens_law
from specproof.audit.engine.rows import NEAR_TIE
from specproof.stats import worst_case_power

TABLE = torch.tensor(
    [
        [0.50, 0.30, 0.20, 0.00],
        [0.10, 0.60, 0.20, 0.10],
        [0.25, 0.25, 0.25, 0.25],
        [0.40, 0.00, 0.30, 0.30],
    ],
    dtype=torch.float32,
)
"""TABLE[a] is the law of the token after token a; EOS = 3 where an engine uses one."""
PROMPT = (0,)
ALPHA = 1e-6
DELTA = 0.3


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    return TABLE[sequences]


def sampler(table: torch.Tensor, eos: int | set[int] | None = None):  # type: ignore[no-untyped-def]
    """An engine drawing each token from ``table`` given the last token, stopping at EOS."""
    ends = {eos} if isinstance(eos, int) else set(eos or ())

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        out: list[int] = []
        last = prompt[-1]
        while len(out) < num_new_tokens:
            row = table[last].double().numpy()
            last = int(rng.choice(4, p=row / row.sum()))
            out.append(last)
            if last in ends:
                break
        return out

    return generate


def engine(generate, eos: int | None = None, greedy: bool = False) -> Engine:  # type: ignore[no-untyped-def]
    return Engine("table", generate, target_probs, PROMPT, eos=eos, greedy=greedy)


def checks(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.check: r.verdict for r in report.results}


def test_first_tokens_law_is_the_chain_rule_of_the_table() -> None:
    law = first_tokens_law(target_probs, PROMPT, 2, eos=frozenset({3}))
    # After 0: 0 (0.5), 1 (0.3), 2 (0.2); EOS 3 has mass 0 there. After 0 then 2: 3 ends.
    assert law[(0, 0)] == pytest.approx(0.25)
    assert law[(1, 1)] == pytest.approx(0.3 * 0.6)
    assert law[(2, 3)] == pytest.approx(0.2 * 0.25)
    assert (0, 3) not in law  # TABLE[0][3] = 0
    assert sum(law.values()) == pytest.approx(1.0)


def test_an_engine_that_samples_the_target_passes_every_row() -> None:
    report = audit_engine(engine(sampler(TABLE)), num_new_tokens=3, delta=DELTA, alpha=ALPHA)
    assert report.passed, report.table()
    assert set(checks(report)) >= {"layout", "support", "exact(N=3)", "pit@1", "pit(pooled)"}
    # Default n: the largest of the rows' required samples at (alpha, beta, delta).
    assert all(r.beta is None or r.beta <= 1e-4 for r in report.results)


def test_eos_ends_the_runs_and_the_rows_still_pass() -> None:
    report = audit_engine(
        engine(sampler(TABLE, eos=3), eos=3), num_new_tokens=3, delta=DELTA, alpha=ALPHA
    )
    assert report.passed, report.table()


def test_a_biased_first_token_fails_the_exact_and_pit_rows() -> None:
    biased = TABLE.clone()
    biased[0] = torch.tensor([0.10, 0.30, 0.60, 0.00])  # TV 0.4 from TABLE[0] on token 1
    runs = 600
    # The PIT of token 1 moves mass 0.4 across bins, a TV of at least 0.3 in the binned law.
    assert worst_case_power(runs, DELTA, ALPHA, 11, 1e-4) > 0.99
    report = audit_engine(
        engine(sampler(biased)), num_new_tokens=2, runs=runs, delta=DELTA, alpha=ALPHA
    )
    verdicts = checks(report)
    assert verdicts["support"] == "pass"
    assert verdicts["exact(N=2)"] == "FAIL"
    assert verdicts["pit@1"] == "FAIL"
    assert not report.passed


def test_a_token_of_target_mass_zero_fails_support_at_once() -> None:
    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        return [3, 0] if seed == 5 else [0, 0]  # TABLE[0][3] = 0

    report = audit_engine(engine(generate), num_new_tokens=2, runs=20, delta=DELTA)
    support = next(r for r in report.results if r.check == "support")
    assert support.verdict == "FAIL" and support.alpha == 0
    assert "run 5, position 1" in support.summary


@pytest.mark.parametrize(
    ("tokens", "problem"),
    [([0, 7], "outside 0..3"), ([3, 0], "token after EOS"), ([0, 1, 2], "3 tokens for 2")],
)
def test_layout_violations_fail_before_any_statistics(tokens: list[int], problem: str) -> None:
    report = audit_engine(
        engine(lambda p, n, s: tokens, eos=3), num_new_tokens=2, runs=3, delta=DELTA
    )
    assert [r.check for r in report.results] == ["layout"]
    assert report.results[0].verdict == "FAIL" and problem in report.results[0].summary


def greedy_table(margin: float) -> torch.Tensor:
    table = TABLE.clone()
    table[:, 0] = 0.4 + margin
    table[:, 1] = 0.4
    table[:, 2] = 0.2 - margin
    table[:, 3] = 0.0
    return table


@pytest.mark.parametrize(
    ("margin", "verdict"), [(NEAR_TIE / 10, "pass"), (0.05, "FAIL")], ids=["near-tie", "clear"]
)
def test_greedy_mismatches_are_classified_by_the_top2_margin(margin: float, verdict: str) -> None:
    table = greedy_table(margin)

    def second_best(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        return [1] * num_new_tokens  # token 1 is second to token 0 by ``margin`` everywhere

    report = audit_engine(
        Engine("greedy", second_best, lambda s: table[s], PROMPT, greedy=True), num_new_tokens=2
    )
    row = next(r for r in report.results if r.check == "greedy")
    assert row.verdict == verdict, row.summary
    if verdict == "pass":
        assert "near-tie" in row.summary


def test_a_greedy_tie_within_the_tolerance_is_numerics() -> None:
    """An engine run at a tolerance covering its numeric gap to the reference may break a tie
    that close either way (llama-server's float16 KV cache flips a top-2 margin of 1.1e-4 with
    speculation off); beyond the tolerance the mismatch is still a bug."""
    table = greedy_table(5e-4)

    def second_best(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        return [1] * num_new_tokens

    subject = Engine("greedy", second_best, lambda s: table[s], PROMPT, greedy=True)

    def verdict(tolerance: float) -> str:
        report = audit_engine(subject, num_new_tokens=2, tolerance=tolerance)
        return next(r.verdict for r in report.results if r.check == "greedy")

    assert verdict(1e-3) == "pass"
    assert verdict(NEAR_TIE) == "FAIL"
    assert verdict(4e-4) == "FAIL"


def test_coverage_warns_about_each_untaken_path_and_does_not_fail() -> None:
    assert untaken_paths([(1, 1), (1, 0)], max_draft=3) == [
        "no draft of the configured length 3 (longest 1)",
        "no round drafted more than one token",
        "no draft of two or more tokens was accepted in full",
        "no draft was rejected after an accepted token",
    ]
    assert untaken_paths([(3, 3), (3, 1), (2, 0)], max_draft=3) == []

    def one_draft(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        tokens = sampler(TABLE)(prompt, num_new_tokens, seed)
        return Emission(tuple(tokens), tuple((1, 1) for _ in tokens))

    subject = Engine("one", one_draft, target_probs, PROMPT, max_draft=4)
    report = audit_engine(subject, num_new_tokens=3, delta=DELTA)
    coverage = report.results[-1]
    assert coverage.check == "coverage" and coverage.verdict == WARN
    assert "configured length 2" in coverage.detail  # 4, capped at the 3 tokens asked - 1
    assert report.passed  # a warning informs; the law rows decide


def test_any_of_several_eos_ids_ends_a_run() -> None:
    """A config may list several EOS ids (Llama 3.1 Instruct lists three): a run that stops at
    any of them is well formed, and the exact law cuts at whichever comes first."""
    report = audit_engine(
        engine(sampler(TABLE, eos={2, 3}), eos=[2, 3]), num_new_tokens=2, runs=20, delta=DELTA
    )
    assert checks(report)["layout"] == "pass", report.table()
    law = first_tokens_law(target_probs, PROMPT, 2, eos=frozenset({2, 3}))
    assert law[(2,)] == pytest.approx(0.2)  # 2 ends the run at once
    assert sum(law.values()) == pytest.approx(1.0)
