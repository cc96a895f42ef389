"""Fuzzing ``audit_engine`` with subjects that misbehave once, at a run hypothesis picks: the
audit never raises, never passes, and the FAIL row's n counts the runs completed before it.

The subject samples the fixed table correctly on every other run, so any PASS would mean the
one bad answer was read as something it is not (the classes found by hand: 2.4 read as 2, a
string of digits read as ids)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

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
TOKENS = 2
RUNS = 12


def draw(prompt: Sequence[int], seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    out, last = [], prompt[-1]
    for _ in range(TOKENS):
        row = TABLE[last].double().numpy()
        last = int(rng.choice(4, p=row / row.sum()))
        out.append(last)
    return out


def not_an_integer() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
        st.lists(st.integers(0, 3), min_size=1, max_size=2),
        st.complex_numbers(max_magnitude=4),
    )


def wrong_answer() -> st.SearchStrategy[Any]:
    """What one run returns instead of its ids, built from the right ids ``t``."""
    replace_one = st.tuples(st.integers(0, TOKENS - 1), not_an_integer()).map(
        lambda pair: lambda t: [pair[1] if k == pair[0] else x for k, x in enumerate(t)]
    )
    outside = st.one_of(st.integers(max_value=-2), st.integers(min_value=4)).map(
        lambda bad: lambda t: [bad, *t[1:]]
    )
    dtypes = st.sampled_from([torch.float16, torch.float32, torch.float64, torch.bool])
    tensors = dtypes.map(lambda dtype: lambda t: torch.tensor(t).to(dtype))
    arrays = st.sampled_from([np.float32, np.float64, np.bool_]).map(
        lambda dtype: lambda t: np.asarray(t).astype(dtype)
    )
    wholes = st.one_of(
        not_an_integer().filter(lambda v: not isinstance(v, list)),
        st.just(lambda t: "".join(map(str, t))),
        st.just(lambda t: {"tokens": t}),
        st.just(lambda t: torch.tensor([t, t])),
        st.just(lambda t: [*t, 0]),  # one token too many
        st.just(lambda t: t[:1]),  # one too few, no EOS
        st.just(lambda t: Emission(tuple(float(x) for x in t))),
        st.just(lambda t: Emission(tuple(t), ((2,),))),  # type: ignore[arg-type]
        st.just(lambda t: Emission(tuple(t), ((1.5, 1),))),  # type: ignore[arg-type]
    ).map(lambda value: value if callable(value) else (lambda t, v=value: v))
    return st.one_of(replace_one, outside, tensors, arrays, wholes)


@given(bad_run=st.integers(0, RUNS - 1), wrong=wrong_answer())
def test_one_wrong_answer_fails_the_audit_and_counts_what_ran(bad_run: int, wrong: Any) -> None:
    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Any:
        tokens = draw(prompt, seed)
        return wrong(tokens) if seed == bad_run else tokens

    subject = Engine("fuzz", generate, lambda s: TABLE[s], (0,))
    report = audit_engine(subject, num_new_tokens=TOKENS, runs=RUNS, delta=0.9)
    assert not report.passed, report.table()
    failed = [r for r in report.results if r.verdict == "FAIL"]
    assert failed[0].check in ("generate", "layout"), report.table()
    if failed[0].check == "generate":
        assert failed[0].n == bad_run and f"run {bad_run}" in failed[0].summary
    else:
        assert failed[0].n == RUNS and f"run {bad_run}" in failed[0].summary


def wrong_rows() -> st.SearchStrategy[Any]:
    """target_probs answers that are not [B, L, V] probability rows of one vocabulary."""
    return st.sampled_from(
        [
            lambda rows: rows.numpy(),
            lambda rows: rows.tolist(),
            lambda rows: None,
            lambda rows: rows.double() * 3,
            lambda rows: rows.log(),
            lambda rows: -rows,
            lambda rows: rows[..., :-1],
            lambda rows: rows[:, :-1],
            lambda rows: rows[0],
            lambda rows: rows.to(torch.int32),
            lambda rows: rows.masked_fill(rows == rows.max(), float("inf")),
            lambda rows: torch.zeros_like(rows),
        ]
    )


@given(bad_call=st.integers(1, 4), wrong=wrong_rows())
def test_target_probs_answering_wrong_once_fails_the_audit(bad_call: int, wrong: Any) -> None:
    calls: list[int] = []

    def target_probs(sequences: torch.Tensor) -> Any:
        calls.append(1)
        rows = TABLE[sequences]
        return wrong(rows) if len(calls) == bad_call else rows

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        return draw(prompt, seed)

    subject = Engine("fuzz", generate, target_probs, (0,))
    report = audit_engine(subject, num_new_tokens=TOKENS, runs=RUNS, delta=0.9)
    if len(calls) < bad_call:
        return  # the audit made fewer calls than that: nothing went wrong
    assert not report.passed, report.table()
    assert report.results[-1].check == "target_probs", report.table()
