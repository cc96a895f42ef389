"""PNG plots of the position tables; matplotlib is imported here, on first use, only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .positions import PositionTable

MISSING = (
    "matplotlib is not installed, so report.md has the position tables but no plots "
    "(pip install matplotlib, then rerun for the PNG files)"
)


class PlotsUnavailable(RuntimeError):
    """matplotlib cannot be imported; the message says how to get the plots."""


def write_plots(tables: Sequence[PositionTable], out: Path, stem: str) -> list[Path]:
    """One PNG per position: observed frequency (bar, interval as error bar) and the exact
    probability (marker) of each token."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise PlotsUnavailable(MISSING) from error
    written = []
    for table in tables:
        figure, axes = plt.subplots(figsize=(max(4.0, 0.5 * len(table.tokens) + 2), 3))
        x = list(range(len(table.tokens)))
        frequency = [c / max(table.n, 1) for c in table.observed]
        below = [f - lo for f, lo in zip(frequency, table.low, strict=True)]
        above = [hi - f for f, hi in zip(frequency, table.high, strict=True)]
        axes.bar(x, frequency, color="#8fb3d9", label=f"observed (n = {table.n})")
        axes.errorbar(x, frequency, yerr=[below, above], fmt="none", ecolor="#1f3b57", capsize=3)
        axes.scatter(x, table.expected, color="#c0392b", zorder=3, label="exact law")
        axes.set_xticks(x, [str(t) for t in table.tokens])
        axes.set_xlabel("token id")
        axes.set_ylabel("probability")
        axes.set_title(f"{stem}: position {table.position}")
        axes.legend(fontsize=7)
        figure.tight_layout()
        path = out / f"{stem}-position-{table.position}.png"
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written
