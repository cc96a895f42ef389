"""``audit-engine`` against subjects that misbehave: each one is a FAIL row with its reason (never
a traceback, never a PASS), the rows already run are kept, and a hang stops at ``timeout``.

Every subject here draws from a fixed table (the law of the next token depends on the last
token only), except where a test says how it misbehaves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch

from specproof.audit.engine import Emission, Engine, audit_engine

TABLE = torch.tensor(
    [
        [0.50, 0.30, 0.20, 0.00],
        [0.10, 0.60, 0.20, 0.10],
        [0.25, 0.25, 0.25, 0.25],
        [0.40, 0.00, 0.30, 0.30],
    ],
    dtype=torch.float32,
)
PROMPT = (0,)
RUNS = 40
DELTA = 0.5


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    return TABLE[sequences]


def draw(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    out: list[int] = []
    last = prompt[-1]
    for _ in range(num_new_tokens):
        row = TABLE[last].double().numpy()
        last = int(rng.choice(4, p=row / row.sum()))
        out.append(last)
    return out


def audit(generate: Any, probs: Any = target_probs, **options: Any) -> Any:
    subject = Engine("subject", generate, probs, PROMPT)
    settings: dict[str, Any] = {"num_new_tokens": 2, "runs": RUNS, "delta": DELTA, **options}
    return audit_engine(subject, **settings)


def failed(report: Any) -> dict[str, str]:
    return {r.check: r.summary for r in report.results if r.verdict == "FAIL"}


@pytest.mark.parametrize(
    ("wrong", "reason"),
    [
        (lambda t: [x + 0.4 for x in t], "float"),  # 2.4 was read as 2: the audit passed
        (lambda t: torch.tensor(t, dtype=torch.float32) + 0.3, "float32"),
        (lambda t: np.asarray(t, dtype=np.float64), "float64"),
        (lambda t: "".join(str(x) for x in t), "str"),  # "0123" was read as 0, 1, 2, 3
        (lambda t: [bool(x % 2) for x in t], "bool"),
        (lambda t: None, "NoneType"),
        (lambda t: [t], "list"),
        (lambda t: torch.tensor([t, t]), "shape"),
        (lambda t: Emission(tuple(x + 0.5 for x in t)), "float"),
    ],
    ids=["float-list", "float-tensor", "float-array", "str", "bool", "none", "nested", "2d", "em"],
)
def test_ids_that_are_not_integers_fail_the_generate_row(wrong: Any, reason: str) -> None:
    report = audit(lambda p, n, s: wrong(draw(p, n, s)))
    assert not report.passed
    rows = failed(report)
    assert "generate" in rows and reason in rows["generate"], report.table()
    assert "run 0" in rows["generate"]


def test_integer_ids_of_any_integer_type_are_accepted() -> None:
    """A correct engine fails no row: each statistical row false-fails with probability <=
    alpha = 1e-6 (the default; fixed seeds, so the outcome is reproducible). At this helper's
    few runs the rows fall short of their goal power, so the verdict is inconclusive."""
    kinds = [list, tuple, np.asarray, torch.tensor, lambda t: torch.tensor([t])]
    report = audit(lambda p, n, s: kinds[s % len(kinds)](draw(p, n, s)))
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()


def test_a_generate_that_raises_is_a_fail_row_counting_the_runs_before_it() -> None:
    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        if seed == 7:
            raise RuntimeError("engine broke")
        return draw(prompt, num_new_tokens, seed)

    report = audit(generate)
    row = next(r for r in report.results if r.check == "generate")
    assert row.verdict == "FAIL" and row.n == 7
    assert "run 7 raised RuntimeError: engine broke" in row.summary


def test_a_generate_that_calls_sys_exit_is_a_fail_row_not_an_exit() -> None:
    """sys.exit(0) inside the subject used to end the command with status 0 and no table."""

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        if seed == 2:
            raise SystemExit(0)
        return draw(prompt, num_new_tokens, seed)

    for timeout in (None, 30.0):
        rows = failed(audit(generate, timeout=timeout))
        assert "run 2 raised SystemExit" in rows["generate"]


def test_malformed_round_traces_fail_the_generate_row() -> None:
    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        return Emission(tuple(draw(prompt, num_new_tokens, seed)), ((1,),))  # type: ignore[arg-type]

    assert "generate" in failed(audit(generate))


def test_generate_many_returning_too_few_runs_is_a_fail_row() -> None:
    def many(prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int) -> list[Emission]:
        runs = [Emission(tuple(draw(p, num_new_tokens, seed + i))) for i, p in enumerate(prompts)]
        return runs[:-1]

    subject = Engine("many", draw, target_probs, PROMPT, generate_many=many, batch=16)
    report = audit_engine(subject, num_new_tokens=2, runs=RUNS, delta=DELTA)
    row = failed(report)
    assert "15 runs for 16" in row["generate"]


def test_a_hanging_generate_fails_as_timed_out_within_the_limit() -> None:
    release = threading.Event()

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        if seed == 3:
            release.wait()
        return draw(prompt, num_new_tokens, seed)

    start = time.monotonic()
    try:
        report = audit(generate, timeout=1.0)
    finally:
        release.set()
    assert time.monotonic() - start < 30
    row = next(r for r in report.results if r.check == "timeout")
    assert row.verdict == "FAIL" and row.n == 3
    assert "generate run 3" in row.summary and "3 of 40 runs" in row.summary


def test_a_hanging_target_probs_fails_as_timed_out() -> None:
    release = threading.Event()

    def probs(sequences: torch.Tensor) -> torch.Tensor:
        if sequences.shape[1] > 1:
            release.wait()
        return TABLE[sequences]

    try:
        report = audit(draw, probs, timeout=1.0)
    finally:
        release.set()
    assert "timeout" in failed(report) and "target_probs" in failed(report)["timeout"]


def ones_then(wrong: Any) -> Any:
    """target_probs that answers right for the vocabulary probe, then ``wrong``."""
    calls = []

    def probs(sequences: torch.Tensor) -> Any:
        calls.append(1)
        return TABLE[sequences] if len(calls) == 1 else wrong(TABLE[sequences])

    return probs


@pytest.mark.parametrize(
    ("wrong", "reason"),
    [
        (lambda rows: rows.numpy(), "ndarray"),
        (lambda rows: rows.masked_fill(rows == rows.max(), float("nan")), "non-finite"),
        (lambda rows: rows[:, :-1], "shape"),
        (lambda rows: rows * 7.0 + 1.0, "sums to"),  # logits passed as probabilities
        (lambda rows: torch.cat([rows, torch.zeros(*rows.shape[:-1], 1)], -1), "vocabulary"),
        (lambda rows: rows.to(torch.int64), "int64"),
    ],
    ids=["numpy", "nan", "shape", "not-a-law", "vocab-changes", "integer"],
)
def test_target_probs_misbehaving_is_a_fail_row(wrong: Any, reason: str) -> None:
    report = audit(draw, ones_then(wrong))
    assert not report.passed
    rows = failed(report)
    assert "target_probs" in rows and reason in rows["target_probs"], report.table()


def test_target_probs_raising_after_the_layout_row_keeps_that_row() -> None:
    def probs(sequences: torch.Tensor) -> torch.Tensor:
        if sequences.shape[1] > 2:  # the teacher-forced pass over the runs' tokens
            raise RuntimeError("target broke")
        return TABLE[sequences]

    report = audit(draw, probs, num_new_tokens=2)
    checks = [(r.check, r.verdict) for r in report.results]
    assert ("layout", "pass") in checks
    assert checks[-1] == ("target_probs", "FAIL")
    assert "RuntimeError: target broke" in report.results[-1].summary


@pytest.mark.parametrize("prompt", [(0, 9), (-1,), ()], ids=["outside", "negative", "empty"])
def test_a_prompt_outside_the_vocabulary_is_refused_before_any_run(prompt: tuple[int, ...]) -> None:
    calls = []

    def generate(p: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        calls.append(seed)
        return draw(p, num_new_tokens, seed)

    def probs(sequences: torch.Tensor) -> torch.Tensor:
        return TABLE[sequences]  # an index outside 0..3 raises IndexError here

    from specproof.audit.engine.runs import PromptError

    with pytest.raises(PromptError, match="prompt"):
        audit_engine(Engine("p", generate, probs, prompt), num_new_tokens=2, runs=RUNS)
    assert calls == []
