"""The timing table's row selection (``--only``) and its merge of a partial rerun."""

from __future__ import annotations

import pytest

from specproof.runners.verifier_timing import markdown, matches, parse_only, row_key


def test_only_reads_shape_dtype_drafts_and_sampling() -> None:
    assert parse_only("256,4,32000") == (256, 4, 32000, None, None, None)
    assert parse_only("16,3,32000,float32,accepted,1") == (
        16, 3, 32000, "float32", "T=0.7 top-k 50 top-p 0.9", "accepted",
    )  # fmt: skip
    row = {"batch": 16, "k": 3, "vocab": 32000, "dtype": "float32",
           "sampling": "T=1", "drafts": "accepted"}  # fmt: skip
    assert matches(row_key(row), parse_only("16,3,32000,float32"))
    assert not matches(row_key(row), parse_only("16,3,32000,bfloat16"))
    assert not matches(row_key(row), parse_only("16,3,32000,float32,accepted,1"))


@pytest.mark.parametrize(
    "text",
    [
        "16,3",
        "16,3,999",
        "16,3,32000,float16",
        "16,3,32000,float32,some",
        "1,3,32000,float32,accepted,2",
    ],
)
def test_only_refuses_a_row_the_table_does_not_have(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected|is not one of|must be"):
        parse_only(text)


def test_a_generate_only_table_is_written_without_step_rows() -> None:
    """Regression: ``--no-step`` without ``--merge`` (no step rows at all) crashed while
    writing the table, after the JSON."""
    quartile = {"q1": 1.0, "median": 2.0, "q3": 3.0}
    result = {
        "step": [],
        "generate": {
            "engine": "draft model k=3", "requests": 64, "tokens_per_request": 24, "pairs": 3,
            "vllm_tokens_per_s": quartile, "specproof_tokens_per_s": quartile,
            "time_ratio": quartile,
        },
        "machine": {"date": "d", "machine": "m", "torch": "t", "threads": 2, "vllm": "v",
                    "load_before": [0.0], "load_after": [0.0]},
    }  # fmt: skip
    table = markdown(result)
    assert "`LLM.generate`" in table
    assert "Largest median step ratio" not in table
