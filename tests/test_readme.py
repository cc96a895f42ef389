"""The Python examples of the README and of the docs pages run as written, and the reference
timings they quote are the committed measurement."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REFERENCE_PAGE = ROOT / "docs" / "reference" / "reference_decoder.md"
# The pages whose Python examples run here; docs/findings/ holds engine findings whose examples
# need the engine installed.
PAGES = [
    README,
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "findings" not in p.parts),
]


def test_python_blocks_run() -> None:
    ran = 0
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)
        for block in blocks:
            exec(compile(block, str(page), "exec"), {})
        ran += len(blocks)
    assert re.search(r"```python\n", REFERENCE_PAGE.read_text()), (
        "docs/reference/reference_decoder.md lost its examples"
    )
    assert ran, "no page has a Python example"


def test_reference_timings_are_the_committed_measurement() -> None:
    """Every reference timing the README and docs/reference/reference_decoder.md quote is the one
    `specproof/runners/readme_figures.py` wrote: the matrix's in the README, the exact law's and
    the size
    table on the reference page."""
    import json

    from specproof.runners.readme_figures import markdown, quoted_timings

    figures = json.loads((ROOT / "benchmarks" / "readme_figures.json").read_text())
    matrix_sentence, exact_law_sentence = quoted_timings(figures)
    assert matrix_sentence in README.read_text(), matrix_sentence
    reference = REFERENCE_PAGE.read_text()
    assert markdown(figures) in reference
    assert exact_law_sentence in reference, exact_law_sentence


def test_the_readme_engine_result_is_the_engine_pages() -> None:
    """The README's audit-engine result (the historical transformers table) is quoted row for
    row from docs/results/engine_audit.md, so the two copies cannot drift apart."""
    rows = [line for line in README.read_text().splitlines() if line.startswith("| 4.4")]
    assert len(rows) == 2, rows
    engine_page = (ROOT / "docs" / "results" / "engine_audit.md").read_text().splitlines()
    assert all(row in engine_page for row in rows), rows
