"""BENCHMARKS.md is the index of the results: every file of benchmarks/ is linked from it, every
link resolves, and every nox session it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "BENCHMARKS.md"


def linked(text: str) -> set[str]:
    return {target.rstrip("/") for target in re.findall(r"\]\((benchmarks/[^)#]+)\)", text)}


def unindexed(text: str, folder: Path) -> list[str]:
    return sorted(f"benchmarks/{p.name}" for p in folder.iterdir()
                  if f"benchmarks/{p.name}" not in linked(text))  # fmt: skip


def test_every_result_file_is_in_the_index() -> None:
    assert not unindexed(INDEX.read_text(), ROOT / "benchmarks")


def test_every_indexed_file_exists() -> None:
    assert not sorted(t for t in linked(INDEX.read_text()) if not (ROOT / t).exists())


def test_every_session_the_index_names_exists() -> None:
    sessions = set(re.findall(r"`nox -s ([\w-]+)", INDEX.read_text()))
    noxfile = (ROOT / "noxfile.py").read_text()
    defined = set(re.findall(r'name="([\w-]+)"', noxfile)) | set(
        re.findall(r"^def (\w+)\(session", noxfile, flags=re.M)
    )
    assert sessions and sessions <= defined, sorted(sessions - defined)


def test_a_file_missing_from_the_index_is_caught(tmp_path: Path) -> None:
    (tmp_path / "new.json").write_text("{}")
    (tmp_path / "old.json").write_text("{}")
    assert unindexed("[old](benchmarks/old.json)", tmp_path) == ["benchmarks/new.json"]
