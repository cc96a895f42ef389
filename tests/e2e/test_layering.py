"""specproof.e2e reads bottom-up: each of its subpackages (and top-level modules) imports only
itself and the ones before it in ``LAYERS``, the order the package docstring gives, not even
inside a function; no two e2e modules import each other through any path; and
``specproof.stats`` never imports e2e.

Before this test, ``evaluation/tau.py`` imported ``training/sweep.py`` (evaluation below
training) and the product module ``models/toy.py`` imported ``training/loops.py``."""

from __future__ import annotations

from pathlib import Path

from import_graph import imported_names, module_name

import specproof.e2e

ROOT = Path(__file__).resolve().parents[2] / "specproof"
E2E = ROOT / "e2e"
LAYERS = [
    "data",
    "models",
    "decoding",
    "plans",
    "evaluation",
    "training",
]


def imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports, at any depth of the file."""
    return imported_names(module_name(ROOT.parent, path), path)


def e2e_modules() -> dict[str, Path]:
    return {module_name(ROOT.parent, path): path for path in E2E.rglob("*.py")}


def layer(module: str) -> str:
    """The layer of an e2e module: its subpackage, or its own name at the top level."""
    return module.removeprefix("specproof.e2e.").split(".")[0]


def test_every_e2e_subpackage_and_top_module_has_a_layer() -> None:
    found = {layer(name) for name in e2e_modules() if name != "specproof.e2e"}
    assert found == set(LAYERS)


def test_each_layer_imports_only_itself_and_the_layers_before_it() -> None:
    modules = e2e_modules()
    upward = {}
    for name, path in modules.items():
        if name == "specproof.e2e":
            continue
        rank = LAYERS.index(layer(name))
        higher = sorted(
            imported
            for imported in imports(path)
            if imported in modules and imported != "specproof.e2e"
            if LAYERS.index(layer(imported)) > rank
        )
        if higher:
            upward[name] = higher
    assert not upward


def test_no_import_circle_between_e2e_modules() -> None:
    modules = e2e_modules()
    edges = {
        name: {m for m in imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    done: set[str] = set()

    def circle_from(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return [*trail[trail.index(name) :], name]
        if name in done:
            return None
        for child in sorted(edges[name]):
            if found := circle_from(child, [*trail, name]):
                return found
        done.add(name)
        return None

    circles = [c for name in sorted(modules) if (c := circle_from(name, []))]
    assert not circles


def test_stats_never_imports_e2e() -> None:
    climbing = {
        str(path.relative_to(ROOT)): sorted(n for n in imports(path) if "specproof.e2e" in n)
        for path in (ROOT / "stats").rglob("*.py")
    }
    assert not {k: v for k, v in climbing.items() if v}


def test_the_docstring_gives_the_layers_in_order() -> None:
    doc = specproof.e2e.__doc__ or ""
    positions = [doc.index(f"``{name}") for name in LAYERS]
    assert positions == sorted(positions)
