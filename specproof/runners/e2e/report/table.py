"""The one Markdown table helper of the e2e renderers: tables, and numbers and intervals
formatted alike."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: None as "-", a float to ``digits`` places (tiny ones in 2 significant
    digits), anything else (text already formatted, an int) as ``str`` gives it."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value != 0 and abs(value) < 10**-digits:
            return f"{value:.2g}"
        return f"{value:.{digits}f}"
    return str(value)


def interval(entry: dict[str, Any], digits: int = 2) -> str:
    """``entry["interval_95"]`` as "[low, high]"; an end that is None (too few chunks) as "-"."""
    ends = ("-" if end is None else f"{end:.{digits}f}" for end in entry["interval_95"])
    return "[" + ", ".join(ends) + "]"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The lines of a Markdown table, each cell through :func:`fmt`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return lines
