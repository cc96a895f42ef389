"""The tau comparison of both drafters: its paired bootstrap and its counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specproof.e2e.decoding.rounds import DecodeResult, RoundLog
from specproof.e2e.evaluation.measurements import mean_accepted_length
from specproof.e2e.experiments.tau import paired_difference, tau_table
from specproof.e2e.models.loading import SHIPPED_DIR, load_models


def test_paired_difference_is_the_ratio_of_totals_with_an_interval_over_chunks() -> None:
    first = np.array([[10.0, 2.0], [6.0, 2.0]])  # tau 16 / 4 = 4; a resample gives 3, 4 or 5
    second = np.array([[4.0, 2.0], [4.0, 2.0]])  # tau 2 in every resample
    result = paired_difference(first, second, resamples=500, seed=0)
    assert result["difference"] == 2.0
    assert 1.0 <= result["low"] <= 2.0 <= result["high"] <= 3.0
    # The drafters move together across chunks (first = second + 1 per round): a paired
    # resample keeps the difference at 1 exactly, an unpaired one would spread it.
    moving = np.array([[8.0, 2.0], [4.0, 2.0]])
    shifted = moving + np.array([2.0, 0.0])
    paired = paired_difference(shifted, moving, resamples=500, seed=0)
    assert paired == {"difference": 1.0, "low": 1.0, "high": 1.0}
    same = paired_difference(first, first, resamples=50, seed=0)
    assert same == {"difference": 0.0, "low": 0.0, "high": 0.0}


def test_paired_difference_refuses_one_chunk_or_unpaired_arrays() -> None:
    with pytest.raises(ValueError):
        paired_difference(np.ones((1, 2)), np.ones((1, 2)), 10, 0)
    with pytest.raises(ValueError):
        paired_difference(np.ones((3, 2)), np.ones((2, 2)), 10, 0)


def test_tau_table_rows_pair_both_drafters_on_the_same_chunks() -> None:
    torch.set_num_threads(1)
    models = load_models(SHIPPED_DIR)
    table = tau_table(models, prompts=8, new_tokens=8)
    assert set(table["tau"]) == {f"{d}/T={t}" for d in ("code", "prose", "math") for t in (1, 0)}
    for row in table["tau"].values():
        assert row["chunks"] == 2
        assert row["dspark_minus_eagle"]["difference"] == pytest.approx(
            row["dspark"] - row["eagle"]
        )
        assert 1.0 <= row["dspark"] <= 8.0 and 1.0 <= row["eagle"] <= 8.0
    assert table["drafter_steps"] == {"dspark": 1000, "eagle": 1000}


def test_accepted_totals_count_each_request_round_with_its_bonus_token() -> None:
    rounds = [RoundLog([3, 3], [2, 0], None), RoundLog([4], [4], None)]
    result = DecodeResult(tokens=[[], []], rounds=rounds)
    assert result.accepted_totals == (3 + 1 + 5, 3)
    assert mean_accepted_length([result, DecodeResult([[]])]) == 9 / 3
