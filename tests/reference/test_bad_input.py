"""Every bad input is refused with a ValueError that names what is wrong."""

from __future__ import annotations

from fractions import Fraction

import pytest
from specproof.reference import (
    Algorithm1,
    CallableScheduler,
    ChainRule,
    Drafter,
    FixedGamma,
    SpeculativeDecoder,
    StaticThreshold,
    TargetModel,
    exact_law,
)

HALF = (Fraction(1, 2), Fraction(1, 2))


def uniform_drafter(vocab: int = 2, confidence: object = Fraction(1, 2)) -> Drafter:
    row = tuple(Fraction(1, vocab) for _ in range(vocab))
    return Drafter(vocab, lambda ctx, d: row, lambda ctx, d: confidence, order=0)


def target_with(row: tuple[object, ...], vocab: int = 2) -> TargetModel:
    return TargetModel(vocab, lambda ctx: row, order=0)


def run(target: TargetModel, drafter: Drafter, gamma: int = 1) -> None:
    exact_law(SpeculativeDecoder(target, drafter, ChainRule(), FixedGamma(), gamma), [()], 1)


def test_negative_mass_names_the_context() -> None:
    table = {(0,): ("3/2", "-1/2"), (1,): HALF}
    with pytest.raises(ValueError, match=r"p\(\.\|\(0,\)\).*negative mass at token\(s\) \[1\]"):
        TargetModel.from_table(2, 1, table)


def test_mass_not_exactly_one() -> None:
    with pytest.raises(ValueError, match="sums to 9/10, not exactly 1"):
        run(target_with(("1/2", "2/5")), uniform_drafter())


def test_float_rows_are_refused_unless_exact() -> None:
    with pytest.raises(ValueError, match="floats convert exactly"):
        run(target_with((0.7, 0.3)), uniform_drafter())
    run(target_with((0.75, 0.25)), uniform_drafter())  # dyadic floats are exact


def test_missing_context_in_a_table() -> None:
    with pytest.raises(ValueError, match=r"context \(1,\) is missing"):
        TargetModel.from_table(2, 1, {(0,): HALF})


def test_wrong_row_length() -> None:
    with pytest.raises(ValueError, match="has 3 entries, the vocabulary has 2"):
        run(target_with(("1/3", "1/3", "1/3")), uniform_drafter())


def test_vocabulary_mismatch() -> None:
    with pytest.raises(ValueError, match="vocabulary mismatch: target has 2 tokens, drafter has 3"):
        SpeculativeDecoder(target_with(HALF), uniform_drafter(3), ChainRule(), FixedGamma(), 1)


@pytest.mark.parametrize("confidence", [Fraction(3, 2), Fraction(-1, 4), "x"])
def test_confidence_outside_unit_interval(confidence: object) -> None:
    with pytest.raises(ValueError, match="confidence"):
        run(target_with(HALF), uniform_drafter(confidence=confidence))


def test_negative_gamma() -> None:
    with pytest.raises(ValueError, match="gamma must be an integer >= 0"):
        SpeculativeDecoder(target_with(HALF), uniform_drafter(), ChainRule(), FixedGamma(), -1)
    with pytest.raises(ValueError, match="gamma must be >= 0"):
        Drafter.from_tables(2, 0, -1, {}, {})


def test_prompt_tokens_out_of_range_and_too_short() -> None:
    decoder = SpeculativeDecoder(target_with(HALF), uniform_drafter(), ChainRule(), FixedGamma(), 1)
    with pytest.raises(ValueError, match=r"token ids \[5\] are outside 0..1"):
        exact_law(decoder, [(5,)], 1)
    bigram = TargetModel.from_table(2, 1, {(0,): HALF, (1,): HALF})
    decoder = SpeculativeDecoder(bigram, uniform_drafter(), ChainRule(), FixedGamma(), 1)
    with pytest.raises(ValueError, match="prompt 0 has 0 tokens; target reads 1"):
        exact_law(decoder, [()], 1)


def test_scheduler_returning_bad_lengths() -> None:
    decoder = SpeculativeDecoder(
        target_with(HALF), uniform_drafter(), ChainRule(), CallableScheduler(lambda c, s: [5]), 1
    )
    with pytest.raises(ValueError, match=r"l_0 = 5 is not an integer in 0..1"):
        exact_law(decoder, [()], 1)


def test_algorithm1_without_sps() -> None:
    decoder = SpeculativeDecoder(target_with(HALF), uniform_drafter(), ChainRule(), Algorithm1(), 1)
    with pytest.raises(ValueError, match="needs an SPS curve"):
        exact_law(decoder, [()], 1)


def test_threshold_must_be_a_number() -> None:
    with pytest.raises(ValueError, match="cannot read 'high'"):
        StaticThreshold("high")


def test_sample_source_must_be_a_seed_or_a_uniform_source() -> None:
    from specproof.reference import sample

    decoder = SpeculativeDecoder(target_with(HALF), uniform_drafter(), ChainRule(), FixedGamma(), 1)
    for bad in (1.5, "7", True):
        with pytest.raises(ValueError, match="source must be an int seed or a UniformSource"):
            sample(decoder, [()], 1, source=bad)


def test_numpy_integer_prompt_tokens_are_accepted() -> None:
    import numpy as np
    from specproof.reference import sample

    bigram = TargetModel.from_table(2, 1, {(0,): HALF, (1,): HALF})
    decoder = SpeculativeDecoder(bigram, uniform_drafter(), ChainRule(), FixedGamma(), 1)
    plain = exact_law(decoder, [(1,)], 2)
    assert exact_law(decoder, [(np.int64(1),)], 2) == plain
    assert sample(decoder, [np.array([1])], 2, source=3) == sample(decoder, [(1,)], 2, source=3)
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        exact_law(decoder, [(np.int64(2),)], 1)
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        exact_law(decoder, [(1.0,)], 1)
