"""The audit package reads top-down: each module (or subpackage, such as ``signatures``) imports
only modules before it in the order the package docstring gives, and ``specproof.stats`` (which
the audit builds on) never imports the audit, not even inside a function."""

from __future__ import annotations

from pathlib import Path

from import_graph import imported_names, module_name

import specproof.audit

ROOT = Path(__file__).resolve().parents[2] / "specproof"
ORDER = [
    "settings",
    "requests",
    "errors",
    "ids",
    "guard",
    "problems",
    "drafting",
    "structure",
    "signatures",
    "audit_settings",
    "rounds",
    "laws",
    "filters",
    "adversarial",
    "cases",
    "report",
    "nonfinite",
    "calls",
    "drafters",
    "run",
    "hunt",
    "by_path",
]
ELSEWHERE = {"engine"}
"""Subpackages with their own reading order (not yet checked here)."""


def _files(name: str) -> list[Path]:
    """The files of the audit module or subpackage ``name``."""
    package = ROOT / "audit" / name
    return sorted(package.glob("*.py")) if package.is_dir() else [ROOT / "audit" / f"{name}.py"]


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, at any depth of the file."""
    return imported_names(module_name(ROOT.parent, path), path)


def test_stats_never_imports_the_audit() -> None:
    climbing = {
        str(path.relative_to(ROOT)): sorted(n for n in _imports(path) if "specproof.audit" in n)
        for path in (ROOT / "stats").glob("*.py")
    }
    assert not {k: v for k, v in climbing.items() if v}


def test_each_audit_module_imports_only_modules_before_it() -> None:
    backwards = {}
    for index, name in enumerate(ORDER):
        imported = set().union(*(_imports(path) for path in _files(name)))
        later = [m for m in ORDER[index:] if f"specproof.audit.{m}" in imported]
        if later:
            backwards[name] = later
    assert not backwards


def test_the_order_is_the_packages_and_the_docstrings() -> None:
    modules = {p.stem for p in (ROOT / "audit").glob("*.py")} - {"__init__"}
    modules |= {p.parent.name for p in (ROOT / "audit").glob("*/__init__.py")} - ELSEWHERE
    assert modules == set(ORDER)
    doc = specproof.audit.__doc__ or ""
    positions = [doc.index(f"``{name}``") for name in ORDER]
    assert positions == sorted(positions)
