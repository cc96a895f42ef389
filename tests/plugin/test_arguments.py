"""The checks' arguments are refused before any work, each with a one-line ValueError naming
the argument, so that a bad argument never fails a correct subject (nor crashes the report);
a subject's own exception is a failed row, never such an error; a hanging engine ends as a
timeout row. Each call below that runs rows runs at level quick (false-fail rate <= rows x
1e-6 per call, power >= 0.9 against TV >= 0.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from plugin import engines, subjects

from specproof.audit.report import AuditReport
from specproof.subjects import examples
from specproof.testing import assert_engine_lossless, assert_lossless

CALLED: list[str] = []


def counted(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        CALLED.append(name)
        return fn(*args, **kwargs)

    return call


@pytest.fixture(autouse=True)
def no_calls_yet() -> Iterator[None]:
    CALLED.clear()
    yield


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # seed = 2^70 failed a correct verifier on specproof's own overflow
        ({"seed": 2**70}, r"seed must be in 0\.\.2\^62"),
        ({"seed": -1}, r"seed must be in 0\.\.2\^62"),
        ({"seed": True}, r"seed must be a whole number"),
        ({"seed": 1.5}, r"seed must be a whole number"),
        # cases=() and cases the signature cannot express crashed in AuditReport.table()
        ({"cases": ()}, r"cases is empty"),
        ({"cases": ("greedy",)}, r"greedy \(the flashinfer signature cannot express it\)"),
        ({"cases": "small-vocab"}, r"cases must be a list of case names"),
        ({"cases": ("small-vocab", "small-vocab")}, r"cases names small-vocab more than once"),
        ({"cases": ("no-such-case",)}, r"unknown audit case\(s\): no-such-case"),
        ({"max_batch": 0}, r"max_batch must be >= 1"),
        ({"timeout": 0}, r"timeout must be > 0"),
        ({"timeout": float("nan")}, r"timeout must be > 0 and finite"),
        ({"filter_order": "backwards"}, r"filter_order must be one of"),
        ({"level": "slow"}, r"specproof level must be one of full, quick"),
        ({"calls": "no"}, r"calls must be True or False, got 'no'"),
        ({"twin": 0}, r"twin must be True or False, got 0"),
    ],
)
def test_bad_verifier_arguments_are_refused_before_any_call(
    options: dict[str, Any], message: str
) -> None:
    verifier = counted(examples.chain_speculative_sampling, "verifier")
    with pytest.raises(ValueError, match=message) as raised:
        assert_lossless(verifier, signature="flashinfer", **options)
    assert "\n" not in str(raised.value)
    assert CALLED == []


def test_a_filter_case_that_cannot_reach_an_hf_verifier_is_refused() -> None:
    """hf verifiers receive the request's filters only through top_k, top_p and min_p."""
    with pytest.raises(ValueError, match=r"filters-order \(the verifier takes no top_k"):
        assert_lossless(subjects.hf_without_filters, signature="hf", cases=("filters-order",))


def test_an_unknown_signature_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown signature 'sglang'"):
        assert_lossless(examples.rejection_sample, signature="sglang")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        # num_new_tokens = -1 failed a correct engine on the layout row
        ({"num_new_tokens": -1}, r"num_new_tokens must be >= 1, got -1"),
        ({"num_new_tokens": 0}, r"num_new_tokens must be >= 1, got 0"),
        ({"seed": 2**70}, r"seed must be in 0\.\.2\^62"),
        ({"timeout": -5}, r"timeout must be > 0"),
    ],
)
def test_bad_engine_arguments_are_refused_before_any_run(
    options: dict[str, Any], message: str
) -> None:
    generate = counted(engines.generate, "generate")
    target = counted(engines.target_probs, "target_probs")
    with pytest.raises(ValueError, match=message):
        assert_engine_lossless(generate, target, engines.PROMPT, **options)
    assert CALLED == []


@pytest.mark.parametrize("prompt", [(), "12", (1, -2), (1, 2.5)])
def test_a_bad_prompt_is_refused(prompt: Any) -> None:
    with pytest.raises(ValueError, match="prompt"):
        assert_engine_lossless(engines.generate, engines.target_probs, prompt)


def test_a_hanging_engine_fails_the_timeout_row() -> None:
    """Before: no timeout reached generate, and the call never returned."""
    subjects.RELEASE.clear()
    try:
        with pytest.raises(AssertionError, match=r"timeout .*FAIL"):
            assert_engine_lossless(
                subjects.hanging_generate,
                subjects.uniform_probs,
                (1, 2),
                num_new_tokens=2,
                level="quick",
                timeout=0.5,
            )
    finally:
        subjects.RELEASE.set()


def test_a_hanging_verifier_fails_the_timeout_row() -> None:
    def hangs(*args: Any, **kwargs: Any) -> Any:
        subjects.RELEASE.wait(60)
        return examples.chain_speculative_sampling(*args, **kwargs)

    subjects.RELEASE.clear()
    try:
        with pytest.raises(AssertionError, match=r"small-vocab +timeout .*FAIL"):
            assert_lossless(
                hangs, signature="flashinfer", cases=("small-vocab",), level="quick", timeout=0.5
            )
    finally:
        subjects.RELEASE.set()


def test_a_subjects_value_error_is_a_failed_row_not_an_argument_error() -> None:
    with pytest.raises(AssertionError, match=r"small-vocab +runs .*ValueError.*FAIL"):
        assert_lossless(
            subjects.raises_value_error, signature="vllm", cases=("small-vocab",), level="quick"
        )


def test_a_report_without_rows_prints_a_table() -> None:
    """AuditReport.table() on a report with no row (every case skipped) raised TypeError."""
    assert AuditReport("fn", "verifier").table().startswith("case  check  n  result  verdict")


def test_the_filter_cases_are_the_four_binding_ones() -> None:
    from specproof.testing.lossless import CASES, FILTER_CASES

    assert FILTER_CASES == (
        "filters-order",
        "filters-min-p",
        "filters-min-p-top-p",
        "filters-min-p-temperature",
    )
    assert set(FILTER_CASES) <= set(CASES)


def test_an_engines_value_error_is_a_failed_row_not_an_argument_error() -> None:
    def target_probs(sequences: Any) -> Any:
        raise ValueError("no such layer")

    with pytest.raises(AssertionError, match=r"target_probs .*raised ValueError: no such layer"):
        assert_engine_lossless(
            engines.generate, target_probs, engines.PROMPT, num_new_tokens=2, level="quick"
        )
