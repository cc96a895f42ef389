"""Every package has its room, and rooms are stacked: a module imports (at any depth of the
file, inside functions included) only modules of its own layer or a lower one, and no group of
modules imports itself around a circle. Within ``specproof.audit`` and ``specproof.e2e`` the
finer reading orders of ``tests/audit/test_layering.py`` and ``tests/e2e/test_layering.py``
hold as well.

A newcomer adding a signature, an engine, a bug or an experiment finds its room here: the
machinery (``audit``) never knows its subjects, adapters or result tables."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"specproof": ROOT / "specproof", "specproof.reference": ROOT / "reference",
           "specproof.optimized": ROOT / "optimized"}  # fmt: skip

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("reference", ("specproof.reference",)),
    ("optimized", ("specproof.optimized",)),
    ("command rules", ("specproof.command_rules", "specproof.sections", "specproof.callables")),
    ("statistics", ("specproof.stats",)),
    ("audit machinery", ("specproof.audit",)),
    ("models", ("specproof.models",)),
    ("end to end", ("specproof.e2e",)),
    ("subjects", ("specproof.subjects",)),
    ("adapters", ("specproof.adapters",)),
    ("tables", ("specproof.tables",)),
    ("forms for engine CI", ("specproof.golden", "specproof.parity", "specproof.testing")),
    ("commands", ("specproof.cli", "specproof.matrix", "specproof.audit.cli",
                  "specproof.audit.engine.cli", "specproof.engines_command",
                  "specproof.__init__")),
]  # fmt: skip
"""Lowest first. A prefix names a module or a package; the longest matching prefix decides."""


def modules() -> Iterator[tuple[str, Path]]:
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "specproof" and parts[0] in ("reference", "optimized"):
                continue
            if package == "specproof" and parts == ("__init__",):
                yield "specproof.__init__", path
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules ``path`` imports (a name imported from a package counts as its
    submodule when there is one)."""
    is_package = path.name == "__init__.py"
    package = module.removesuffix(".__init__") if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            names = [source] + [f"{source}.{alias.name}" for alias in node.names]
        for name in names:
            if name in known:
                out.add(name)
    out.discard(module)
    return out


def graph() -> dict[str, set[str]]:
    found = dict(modules())
    known = set(found) | {m.removesuffix(".__init__") for m in found}
    return {m: imported(m, p, known) for m, p in found.items()}


def test_every_module_has_a_layer() -> None:
    homeless = [m for m in graph() if layer_of(m) is None]
    assert not homeless, f"modules outside every layer of tests/test_layering.py: {homeless}"


def test_no_module_imports_a_higher_layer() -> None:
    upward = {
        module: sorted(
            f"{target} ({LAYERS[layer_of(target) or 0][0]})"
            for target in targets
            if (layer_of(target) or 0) > (layer_of(module) or 0)
        )
        for module, targets in graph().items()
        if module not in PACKAGES
    }
    upward = {k: v for k, v in upward.items() if v}
    assert not upward, f"imports that climb a layer: {upward}"


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    """Package ``__init__`` re-exports are left out: they are façades, not rooms."""
    edges = {
        m: {t for t in targets if not t.endswith("__init__") and t not in PACKAGES}
        for m, targets in graph().items()
        if m not in PACKAGES and not m.endswith("__init__")
    }
    assert not circles(edges)


PACKAGES = {m.removesuffix(".__init__") for m, p in modules() if p.name == "__init__.py"}


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_circle_finder_finds_circles(
    edges: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert circles(edges) == expected


def test_the_layer_rule_sees_a_climbing_import() -> None:
    """A module of the machinery importing a subject would be caught."""
    assert (layer_of("specproof.subjects.examples") or 0) > (layer_of("specproof.audit.run") or 0)
    assert layer_of("specproof.audit.engine.cli") == len(LAYERS) - 1
    assert layer_of("specproof.audit.engine.audit") == layer_of("specproof.audit.run")
