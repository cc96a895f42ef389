"""A setting travels as a value, not as a loose parameter: no function of the audit or of the
adapters takes ``max_batch``, ``marker``, ``alpha``, ``beta``, ``delta`` or ``tolerance`` by
name, except the documented keyword fronts that build the value from them (an AST scan)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("specproof/audit", "specproof/adapters")
LOOSE = frozenset({"max_batch", "marker", "alpha", "beta", "delta", "tolerance"})
FRONTS = frozenset(
    {
        ("specproof/audit/run.py", "audit_verifier"),
        ("specproof/audit/engine/audit.py", "audit_engine"),
        ("specproof/audit/audit_settings.py", "AuditSettings.of"),
    }
)
"""The public keyword API (docs/audit.md, README.md, their docstrings) and the one
constructor it goes through."""


def loose_parameters(source: str, path: str) -> Iterator[tuple[str, str, int, list[str]]]:
    """(path, qualified function name, line, loose parameter names) for each function of
    ``source`` that takes a setting by name and is not a front."""

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, str, int, list[str]]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                arguments = child.args
                given = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                loose = sorted({a.arg for a in given} & LOOSE)
                if loose and (path, name) not in FRONTS:
                    yield path, name, child.lineno, loose
                yield from visit(child, f"{name}.")
            else:
                yield from visit(child, prefix)

    yield from visit(ast.parse(source), "")


def scanned_files() -> Iterator[Path]:
    for folder in SCANNED:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_the_scan_reads_the_audit_and_the_adapters() -> None:
    files = {path.relative_to(ROOT).as_posix() for path in scanned_files()}
    assert {"specproof/audit/run.py", "specproof/audit/hunt.py"} <= files
    assert any(name.startswith("specproof/adapters/") for name in files)
    assert {path for path, _ in FRONTS} <= files


def test_no_function_but_the_fronts_takes_a_loose_setting() -> None:
    found = [
        hit
        for path in scanned_files()
        for hit in loose_parameters(path.read_text(), path.relative_to(ROOT).as_posix())
    ]
    assert not found, found


def test_the_fronts_still_take_their_documented_keywords() -> None:
    """The scan's exceptions are real: each front is there and takes its keywords."""
    for path, name in FRONTS:
        tree = ast.parse((ROOT / path).read_text())
        functions = {
            f"{cls.name}.{fn.name}" if cls is not None else fn.name: fn
            for cls in [None, *[n for n in tree.body if isinstance(n, ast.ClassDef)]]
            for fn in (tree.body if cls is None else cls.body)
            if isinstance(fn, ast.FunctionDef)
        }
        assert name in functions, (path, name)
        taken = {a.arg for a in functions[name].args.kwonlyargs}
        assert {"alpha", "beta", "delta", "tolerance"} <= taken, (path, name, taken)


def test_the_scan_catches_a_planted_loose_parameter() -> None:
    """Negative control: a function taking ``max_batch`` (at module level, as a method, nested)
    is found, and a front's name in another module is no exception."""
    planted = (
        "def call(fn, *, max_batch=4):\n    pass\n"
        "class Shape:\n    def call(self, fn, marker):\n        pass\n"
        "def outer():\n    def inner(delta):\n        pass\n"
        "def audit_verifier(fn, alpha=None):\n    pass\n"
        "def fine(fn, settings):\n    pass\n"
    )
    found = {(name, tuple(loose)) for _, name, _, loose in loose_parameters(planted, "x.py")}
    assert found == {
        ("call", ("max_batch",)),
        ("Shape.call", ("marker",)),
        ("outer.inner", ("delta",)),
        ("audit_verifier", ("alpha",)),
    }
    front = "def audit_verifier(fn, alpha=None):\n    pass\n"
    assert not list(loose_parameters(front, "specproof/audit/run.py"))
