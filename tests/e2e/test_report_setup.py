"""The setup lines of the e2e tables say where the weights came from."""

from __future__ import annotations

import json
from pathlib import Path

from specproof.runners.e2e.report.speed import setup_lines

RESULTS = Path(__file__).parents[2] / "benchmarks" / "e2e.json"


def test_weights_from_another_folder_are_neither_shipped_nor_trained_here() -> None:
    results = json.loads(RESULTS.read_text())
    assert "nox -s train-target" in "\n".join(setup_lines(results))
    results["weights"] = "/elsewhere/weights"
    text = "\n".join(setup_lines(results))
    assert "/elsewhere/weights" in text
    assert "trained here" not in text and "nox -s train-target" not in text
