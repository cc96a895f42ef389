"""Shared setup for the optimized package's tests: the device, the
support module on the path, and the report of how often the float32 margin rule fired."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import optimized_support


@pytest.fixture
def device() -> str:
    return optimized_support.DEVICE


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = optimized_support.MARGIN_COUNTS
    if counts["decisions"]:
        terminalreporter.write_line(
            f"specproof.optimized margin rule: {counts['decisions']} requests compared with "
            f"float32 logits; {counts['near']} had a decision within the margin; the rule "
            f"excused {counts['fired']} disagreement(s)"
        )
