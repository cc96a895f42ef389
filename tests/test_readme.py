"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "the README has no Python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_reference_timings_are_the_committed_measurement() -> None:
    """Every reference timing the README quotes is the one `tools/readme_figures.py` wrote."""
    import json
    import sys

    sys.path.insert(0, str(README.parent / "tools"))
    from readme_figures import markdown, quoted_timings

    figures = json.loads((README.parent / "benchmarks" / "readme_figures.json").read_text())
    text = README.read_text()
    assert markdown(figures) in text
    for sentence in quoted_timings(figures):
        assert sentence in text, sentence
