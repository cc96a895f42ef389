"""Every module path the docs name resolves: ``python -m specproof.X``, ``specproof audit
specproof.X:NAME``, ``specproof.X.Y`` in prose. When a module moves, a page that still names its
old home fails here, not in a reader's shell."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from specproof.testing.plugin import Checks

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "noxfile.py",
         *sorted((ROOT / "docs").rglob("*.md"))]  # fmt: skip
NAME = re.compile(r"specproof(?:\.[a-z_0-9]+)+(?::[A-Za-z_][A-Za-z_0-9.]*)?")
FIXTURE_METHODS = {name for name in vars(Checks) if name.startswith("assert_")}
"""``specproof.assert_...`` in docs/engine_ci.md is the pytest plugin's fixture, not a module."""


def named(text: str) -> set[str]:
    return {
        name
        for name in NAME.findall(text)
        if name.split(".")[1].split(":")[0] not in FIXTURE_METHODS
    }


def unresolved(name: str) -> bool:
    """True when no prefix of ``name`` is a module, or what follows it is not an attribute
    (an attribute in capitals, as in ``bugs:MODEL``, is a placeholder)."""
    module, _, attribute = name.partition(":")
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            if importlib.util.find_spec(".".join(parts[:cut])) is not None:
                break
        except ModuleNotFoundError:
            continue
    else:
        return True
    rest = parts[cut:] + ([] if not attribute or attribute.isupper() else attribute.split("."))
    target: object = importlib.import_module(".".join(parts[:cut]))
    for part in rest:
        if not hasattr(target, part):
            return True
        target = getattr(target, part)
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_path_a_page_names_resolves(page: Path) -> None:
    missing = sorted(n for n in named(page.read_text()) if unresolved(n))
    assert not missing, f"{page.relative_to(ROOT)} names what does not exist: {missing}"


def test_a_moved_module_is_caught() -> None:
    assert unresolved("specproof.audit.examples:rejection_sample")
    assert unresolved("specproof.subjects.examples:no_such_verifier")
    assert not unresolved("specproof.subjects.examples:rejection_sample")
    assert not unresolved("specproof.subjects.bugs:MODEL")
    assert named("run `python -m specproof.tables.real_audit vllm`") == {
        "specproof.tables.real_audit"
    }
