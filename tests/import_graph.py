"""The project's import graph read from its source, shared by the layering tests: every Python
file of the repository under a module name, and the project modules each imports at any depth of
the file (inside functions included).

The installed packages keep their import names (``reference/`` is ``specproof.reference``,
``optimized/`` is ``specproof.optimized``); every other folder's files are named by their path
(``tests.audit.test_settings``, ``docs.findings.vllm_rejection_min_p``, ``noxfile``). A
package's ``__init__.py`` is the package's own name, except the root's, ``specproof.__init__``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE_FOLDERS = {"specproof": "specproof", "specproof.reference": "reference",
                   "specproof.optimized": "optimized"}  # fmt: skip
"""Import name -> folder of each installed package."""
SKIPPED = (".git", ".nox", "build", "dist", "__pycache__", ".hypothesis", ".mypy_cache")


def python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if not any(part in SKIPPED or part.endswith(".egg-info") for part in path.parts):
            yield path


def module_name(root: Path, path: Path) -> str:
    relative = path.relative_to(root)
    for package, folder in sorted(PACKAGE_FOLDERS.items(), key=lambda item: -len(item[1])):
        if relative.parts[0] == folder:
            parts = (*package.split("."), *relative.with_suffix("").parts[1:])
            break
    else:
        parts = relative.with_suffix("").parts
    if parts == ("specproof", "__init__"):
        return "specproof.__init__"
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    """Every Python file under ``root``, by module name."""
    found: dict[str, Path] = {}
    for path in python_files(root):
        parts = path.relative_to(root).parts
        if parts[0] == "specproof" and len(parts) > 1 and parts[1] in ("reference", "optimized"):
            continue  # links of an editable layout, if any: the real files are at the root
        found[module_name(root, path)] = path
    return found


def imported_names(module: str, path: Path, submodules: set[str] | None = None) -> set[str]:
    """Absolute names ``path`` imports: each module, and each name imported from one. A name
    that is one of ``submodules`` (``from package import submodule``) stands for itself alone,
    not for the package as well."""
    is_package = path.name == "__init__.py"
    package = module.removesuffix(".__init__") if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            names = {f"{source}.{alias.name}" for alias in node.names}
            out.update(names)
            if not submodules or names - submodules:
                out.add(source)
    return out


def graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (itself left out)."""
    return {module: set(targets) for module, targets in _graph(root, _stamp(root)).items()}


def _stamp(root: Path) -> tuple[tuple[str, int], ...]:
    """What the cached graph was read from: each file and its modification time."""
    return tuple((str(p), p.stat().st_mtime_ns) for p in python_files(root))


@functools.lru_cache(maxsize=8)
def _graph(root: Path, stamp: tuple[tuple[str, int], ...]) -> dict[str, frozenset[str]]:
    found = modules(root)
    known = set(found) | {"specproof"}
    edges: dict[str, frozenset[str]] = {}
    for name, path in found.items():
        targets = {"specproof.__init__" if t == "specproof" else t
                   for t in imported_names(name, path, known) if t in known}  # fmt: skip
        targets.discard(name)
        edges[name] = frozenset(targets)
    return edges


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
        for target in sorted(edges.get(node, ())):
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
