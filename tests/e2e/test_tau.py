"""The tau comparison of both drafters: its per-chunk rows, t-intervals, Holm family and counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from specproof.e2e.decoding.rounds import DecodeResult, RoundLog
from specproof.e2e.evaluation.chunk_intervals import chunk_tau
from specproof.e2e.evaluation.measurements import mean_accepted_length
from specproof.e2e.models.loading import SHIPPED_DIR, load_models
from specproof.runners.e2e.experiments.tau import DOCS_ROWS, TAU_FAMILY, tau_table, verdict_table


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
        # The stored per-chunk rows recompute the pooled tau and the per-chunk differences.
        for name in ("dspark", "eagle"):
            emitted, rounds = np.array(row["by_chunk"][name]).sum(axis=0)
            assert emitted / rounds == pytest.approx(row[name])
        differences = chunk_tau(np.array(row["by_chunk"]["dspark"], dtype=float)) - chunk_tau(
            np.array(row["by_chunk"]["eagle"], dtype=float)
        )
        difference = row["dspark_minus_eagle"]
        assert difference["mean_chunk_difference"] == pytest.approx(differences.mean())
        low, high = difference["interval_95"]
        assert low <= difference["mean_chunk_difference"] <= high
    assert table["holm"]["family"] == TAU_FAMILY
    assert set(table["holm"]["adjusted"]) == set(table["tau"])
    assert "t-interval" in table["interval"]
    assert table["drafter_steps"] == {"dspark": 1000, "eagle": 1000}


def test_accepted_totals_count_each_request_round_with_its_bonus_token() -> None:
    rounds = [RoundLog([3, 3], [2, 0], None), RoundLog([4], [4], None)]
    result = DecodeResult(tokens=[[], []], rounds=rounds)
    assert result.accepted_totals == (3 + 1 + 5, 3)
    assert mean_accepted_length([result, DecodeResult([[]])]) == 9 / 3


def test_docs_quote_the_committed_32_chunk_verdicts() -> None:
    """docs/results/e2e_drafters.md's table of the shipped drafters' tau at 32 chunks is the one
    verdict_table renders from benchmarks/tau_shipped_32_chunks.json."""
    root = Path(__file__).resolve().parents[2]
    result = json.loads((root / "benchmarks" / "tau_shipped_32_chunks.json").read_text())
    assert all(row["dspark_minus_eagle"]["chunks"] == 32 for row in result["tau"].values())
    assert verdict_table(result) in (root / "docs" / "results" / "e2e_drafters.md").read_text()


def test_a_verdict_follows_holm_and_the_sign() -> None:
    differences = dict(zip(DOCS_ROWS, (-0.5, 0.4, -0.1, 0.2, -0.3, 0.05), strict=True))
    rejected = dict(zip(DOCS_ROWS, (True, True, False, False, True, True), strict=True))
    result = {
        "tau": {
            key: {"dspark": 3.0, "eagle": 3.0 - d,
                  "dspark_minus_eagle": {"difference": d, "interval_95": [d - 0.1, d + 0.1]}}
            for key, d in differences.items()
        },
        "holm": {"adjusted": dict.fromkeys(DOCS_ROWS, 0.01), "rejected": rejected},
    }  # fmt: skip
    verdicts = [line.rsplit("|", 2)[1].strip() for line in verdict_table(result).splitlines()[2:]]
    assert verdicts == [
        "DSpark below", "DSpark above", "no difference shown", "no difference shown",
        "DSpark below", "DSpark above",
    ]  # fmt: skip
