"""Every module path the docs name resolves: ``python -m specproof.X``, ``specproof audit
specproof.X:NAME``, ``specproof.X.Y`` in prose. When a module moves, a page that still names its
old home fails here, not in a reader's shell."""

from __future__ import annotations

import ast
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
"""``specproof.assert_...`` in docs/guide/ci_integration.md is the pytest plugin's fixture, not a
module."""


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
    assert named("run `python -m specproof.runners.real_audit vllm`") == {
        "specproof.runners.real_audit"
    }


# Docstrings: every name a docstring of the package gives resolves, read from the source (an
# optional engine need not be installed): ``specproof.X.Y`` and Sphinx roles, absolute or
# relative (``:mod:`.real_models```, looked up from the module's package and each one above).

ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|exc|obj):`~?([.\w]+)`")


def _sources() -> dict[str, Path]:
    from import_graph import modules

    found = modules(ROOT)
    return {name.removesuffix(".__init__"): path for name, path in found.items()
            if name.startswith("specproof")}  # fmt: skip


SOURCES = _sources()


def _top_level_names(tree: ast.AST) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names[leaf.id] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.If | ast.Try):
            names.update(_top_level_names(node))
    return names


def resolves_in_source(name: str) -> bool:
    """``name`` (dotted) is a module of the package, or a module followed by names defined in
    it (a class's members included)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in SOURCES:
            break
    else:
        return False
    node: ast.AST = ast.parse(SOURCES[module].read_text())
    for part in parts[cut:]:
        names = _top_level_names(node)
        if part not in names:
            return False
        node = names[part]
    return True


def docstring_names(module: str, path: Path) -> list[tuple[str, list[str]]]:
    """(name as written, the absolute names it may mean) for each name a docstring gives."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        text = ast.get_docstring(node, clean=False) or ""
        for written in ROLE.findall(text):
            if written.startswith("."):
                scopes = [module, *(".".join(package.split(".")[:n])
                                    for n in range(package.count(".") + 1, 0, -1))]  # fmt: skip
                found.append((written, [f"{s}{written}" for s in scopes]))
            elif written.startswith("specproof."):
                found.append((written, [written]))
        for written in NAME.findall(text):
            if ":" not in written and written.split(".")[1] not in FIXTURE_METHODS:
                found.append((written, [written]))
    return found


def test_every_name_a_docstring_gives_resolves() -> None:
    missing = sorted(
        f"{SOURCES[module].relative_to(ROOT)}: {written}"
        for module in SOURCES
        for written, meanings in docstring_names(module, SOURCES[module])
        if not any(resolves_in_source(m) for m in meanings)
    )
    assert not missing, "docstrings name what does not exist:\n" + "\n".join(missing)


def test_a_dangling_docstring_name_is_caught() -> None:
    assert resolves_in_source("specproof.audit.settings.ErrorRates")
    assert resolves_in_source("specproof.audit.settings.ErrorRates.alpha")
    assert not resolves_in_source("specproof.audit.settings.ErrorRates.gamma")
    assert not resolves_in_source("specproof.audit.real_audit")
    assert not resolves_in_source("specproof.audit.settings.NoSuchName")


def listed_modules(init: Path) -> tuple[list[str], list[str]]:
    """(the package's modules and subpackages, those its docstring names)."""
    folder = init.parent
    found = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
    found |= {p.parent.name for p in folder.glob("*/__init__.py")}
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    named = [m for m in sorted(found)
             if re.search(rf"``{m}\b|:\w+:`~?[\w.]*\.{m}\b|\b{m}\.py\b|``{m}/", doc)]  # fmt: skip
    return sorted(found), named


@pytest.mark.parametrize(
    "init",
    [
        p
        for top in ("specproof", "reference", "optimized")
        for p in (ROOT / top).rglob("__init__.py")
    ],
    ids=lambda p: str(p.parent.relative_to(ROOT)),
)
def test_a_package_docstring_lists_all_its_modules_or_none(init: Path) -> None:
    found, named = listed_modules(init)
    assert not named or named == found, f"not listed: {sorted(set(found) - set(named))}"


def test_an_incomplete_module_list_is_caught(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("")
    (tmp_path / "two.py").write_text("")
    (tmp_path / "__init__.py").write_text('"""Modules: ``one``."""\n')
    assert listed_modules(tmp_path / "__init__.py") == (["one", "two"], ["one"])
