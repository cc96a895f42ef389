"""replace_section rewrites one marked section of a Markdown file and refuses markers it cannot
rewrite, naming the problem, rather than rewriting the wrong span."""

from __future__ import annotations

from pathlib import Path

import pytest

from specproof.sections import markers_problem, replace_section, section_markers


def test_a_section_is_appended_then_replaced_and_the_others_kept(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Page\n\nintro\n")
    replace_section(page, "a", "first")
    replace_section(page, "b", "other")
    replace_section(page, "a", "second")
    begin, end = section_markers("a")
    text = page.read_text()
    assert text.startswith("# Page\n\nintro\n")
    assert f"{begin}\nsecond\n{end}\n" in text and "first" not in text
    assert "other" in text and text.index("second") < text.index("other")


@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        ("{begin}\nx\n{end}\n{begin}\ny\n{end}\n", "appear more than once"),
        ("{begin}\nx\n", "a begin marker only"),
        ("{end}\nx\n{begin}\n", "end marker comes before"),
    ],
)
def test_markers_that_cannot_be_rewritten_are_refused(
    tmp_path: Path, layout: str, problem: str
) -> None:
    begin, end = section_markers("a")
    page = tmp_path / "page.md"
    text = "# Page\n\n" + layout.format(begin=begin, end=end)
    page.write_text(text)
    assert problem in (markers_problem(text, "a") or "")
    with pytest.raises(ValueError, match=problem):
        replace_section(page, "a", "new")
    assert page.read_text() == text
