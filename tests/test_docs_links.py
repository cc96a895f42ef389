"""Every relative link in README.md and docs/**/*.md resolves (the file or folder exists; for
``page.md#anchor`` the anchor is a heading of that page, slugged as GitHub does), and every docs
page can be reached from README.md by following links."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", flags=re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The text with code blocks and code spans removed (a link there is not a link)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The heading anchors of a page; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    for match in re.finditer(r"^#{1,6} +(.+?) *#* *$", FENCE.sub("", text), flags=re.MULTILINE):
        base = slug(match.group(1))
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text())) if not re.match(r"^[a-z]+:", t)]


def broken_links(root: Path) -> list[str]:
    """``page: target (why)`` for each relative link of the pages that does not resolve."""
    broken = []
    for page in pages(root):
        for target in relative_links(page):
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not resolved.exists():
                broken.append(f"{where} (no such file)")
            elif (
                anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text())
            ):
                broken.append(f"{where} (no heading with that anchor)")
    return broken


def unreachable_pages(root: Path) -> list[str]:
    """The docs pages that no chain of links from README.md reaches."""
    reached, todo = set(), [(root / "README.md").resolve()]
    while todo:
        page = todo.pop()
        if page in reached or not page.is_file():
            continue
        reached.add(page)
        for target in relative_links(page):
            path = target.partition("#")[0]
            if path.endswith(".md"):
                todo.append((page.parent / path).resolve())
    return [str(p.relative_to(root)) for p in pages(root) if p.resolve() not in reached]


def test_every_relative_link_resolves() -> None:
    assert broken_links(ROOT) == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    assert unreachable_pages(ROOT) == []


def test_the_check_sees_a_broken_link_anchor_and_an_orphan(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Top\n\n[a](docs/a.md#the-a-page) [b](docs/a.md#nope) [c](docs/none.md)\n"
        "`[not a link](docs/none.md)`\n```\n[nor this](docs/none.md)\n```\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "# The `A` page\n\n## Same\n\n## Same\n\n[back](../README.md#top) [twin](#same-1)\n"
    )
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    assert broken_links(tmp_path) == [
        "README.md: docs/a.md#nope (no heading with that anchor)",
        "README.md: docs/none.md (no such file)",
    ]
    assert unreachable_pages(tmp_path) == ["docs/orphan.md"]


def test_slugs_follow_github() -> None:
    assert slug("Benchmark (GPU)") == "benchmark-gpu"
    assert slug("specproof in your engine's CI") == "specproof-in-your-engines-ci"
    assert slug("DSpark at EAGLE-3's drafting time, and more") == (
        "dspark-at-eagle-3s-drafting-time-and-more"
    )
