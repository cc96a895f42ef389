"""STS's claims judged from a run's held-out ECE check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specproof.runners.e2e.experiments import sts_claims


def row(position: int, low: float, high: float) -> dict[str, float]:
    return {
        "position": position,
        "change": (low + high) / 2,
        "change_low": low,
        "change_high": high,
    }


def test_verdicts_and_power_by_hand() -> None:
    held_out = {
        "1": {"blocks": 10, "by_position": [row(1, -0.0049, 0.0049), row(2, 0.0, 0.0101)]},
        "0": {
            "blocks": 10,
            "by_position": [row(1, 0.0, 0.0), row(2, -0.02, -0.001), row(3, -0.01, 0.001)],
        },
    }
    result = sts_claims.judged(held_out)
    hot = result["T=1 non-inferior"]["by_position"]
    assert [r["pass"] for r in hot] == [True, False]
    assert not result["T=1 non-inferior"]["every_position"]
    # se = 0.0098 / 3.92 = 0.0025: Phi(0.01 / 0.0025 - 1.96) = Phi(2.04) = 0.9793.
    assert hot[0]["power_at_no_change"] == pytest.approx(0.9793, abs=1e-4)
    greedy = result["T=0 lower at 2-7"]["by_position"]
    assert [r["position"] for r in greedy] == [2, 3]  # position 1 is not part of the claim
    assert [r["pass"] for r in greedy] == [True, False]


def test_committed_run_as_the_readme_states_it(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/results/e2e_sts.md: non-inferior at every position at T = 1; at T = 0
    shown lower at positions 3-7, not at 2."""
    result = sts_claims.main([])
    assert result["T=1 non-inferior"]["every_position"]
    greedy = result["T=0 lower at 2-7"]["by_position"]
    assert [r["position"] for r in greedy if r["pass"]] == [3, 4, 5, 6, 7]
    assert "shown at [3, 4, 5, 6, 7]" in capsys.readouterr().out


def test_unreadable_json_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"no": "sts"}))
    with pytest.raises(SystemExit) as exit_info:
        sts_claims.main(["--json", str(path)])
    assert exit_info.value.code == 2
    assert "--json" in capsys.readouterr().err
