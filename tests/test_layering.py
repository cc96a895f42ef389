"""Every Python file of the repository has its room, and rooms are stacked: a module imports (at
any depth of the file, inside functions included) only modules of its own layer or a lower one,
and no group of modules imports itself around a circle. Package ``__init__`` files are modules
like any other: a façade that imports a command is a climbing import. Within ``specproof.audit``
and ``specproof.e2e`` the finer reading orders of ``tests/audit/test_layering.py`` and
``tests/e2e/test_layering.py`` hold as well; the three tests read imports with one reader,
``tests/import_graph.py``.

A newcomer adding a signature, an engine, a bug or an experiment finds its room here: the
machinery (``audit``) never knows its subjects, adapters or runners, and every argparse front is
a command (``specproof.commands``) or a runner (``specproof.runners``), above all of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_graph import circles, graph, imported_names, modules

ROOT = Path(__file__).resolve().parents[1]

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("reference", ("specproof.reference",)),
    ("optimized", ("specproof.optimized",)),
    ("foundations", ("specproof.__init__", "specproof.exit_status", "specproof.value_limits",
                     "specproof.sections", "specproof.callables")),
    ("statistics", ("specproof.stats", "specproof.matrix")),
    ("audit machinery", ("specproof.audit",)),
    ("models", ("specproof.models",)),
    ("end to end", ("specproof.e2e",)),
    ("subjects", ("specproof.subjects",)),
    ("adapters", ("specproof.adapters",)),
    ("forms for engine CI", ("specproof.golden", "specproof.parity", "specproof.testing")),
    ("commands and runners", ("specproof.commands", "specproof.runners")),
    ("users of the package", ("tests", "docs", "examples", "notebooks", "proofs", "noxfile")),
]  # fmt: skip
"""Lowest first. A prefix names a module or a package; the longest matching prefix decides."""


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def homeless(edges: dict[str, set[str]]) -> list[str]:
    return sorted(m for m in edges if layer_of(m) is None)


def climbing(edges: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module -> the modules of a higher layer it imports."""
    upward = {
        module: sorted(
            f"{target} ({LAYERS[layer_of(target) or 0][0]})"
            for target in targets
            if (layer_of(target) or 0) > (layer_of(module) or 0)
        )
        for module, targets in edges.items()
    }
    return {k: v for k, v in upward.items() if v}


def test_every_module_has_a_layer() -> None:
    assert not homeless(graph(ROOT)), "modules outside every layer of tests/test_layering.py"


def test_every_python_file_git_tracks_is_read() -> None:
    """Every tracked ``*.py`` file is a module of the graph (a folder the reader skipped, or a
    file it names twice, would be missing here)."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                            text=True, check=False)  # fmt: skip
    if listed.returncode:
        pytest.skip("not a git checkout: no list of tracked files to compare with")
    tracked = {(ROOT / line).resolve() for line in listed.stdout.split()}
    read = {path.resolve() for path in modules(ROOT).values()}
    assert tracked and not sorted(str(p.relative_to(ROOT)) for p in tracked - read)


def test_no_module_imports_a_higher_layer() -> None:
    assert not climbing(graph(ROOT)), "imports that climb a layer"


def test_no_import_circle() -> None:
    assert not circles(graph(ROOT))


def test_no_argparse_outside_the_commands_and_runners() -> None:
    """Argument parsing is the commands' and runners' work (``specproof.commands``,
    ``specproof.runners``); the pytest plugin reads its options with pytest's own parser. The
    one other front is the GPU compile check, run on a device by ``specproof/runners/gpu.sh``
    without the rest of the package."""
    top = layer_of("specproof.commands")
    fronts = sorted(
        module
        for module, path in modules(ROOT).items()
        if module.startswith("specproof") and layer_of(module) != top
        if imported_names(module, path) & {"argparse", "specproof.commands.command_rules"}
    )
    assert fronts == ["specproof.optimized.kernels.compile_check"]


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


@pytest.fixture(scope="module")
def copy_of_the_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    into = tmp_path_factory.mktemp("tree")
    for folder in ("specproof", "reference", "optimized"):
        skipped = shutil.ignore_patterns("*.pt", "*.safetensors", "*.json*", "__pycache__")
        shutil.copytree(ROOT / folder, into / folder, ignore=skipped)
    return into


def test_a_planted_back_arrow_is_caught(copy_of_the_tree: Path) -> None:
    """The statistics importing a command (inside a function, as a lazy import would) and a
    package façade importing one both climb; the untouched copy passes first."""
    assert not climbing(graph(copy_of_the_tree))
    stats = copy_of_the_tree / "specproof" / "stats" / "intervals.py"
    stats.write_text(
        stats.read_text() + "\n\ndef _late():\n    from specproof.commands import cli\n"
    )
    facade = copy_of_the_tree / "specproof" / "audit" / "__init__.py"
    facade.write_text(facade.read_text() + "\nfrom specproof.commands.audit import main\n")
    found = climbing(graph(copy_of_the_tree))
    assert set(found) == {"specproof.stats.intervals", "specproof.audit"}
    assert found["specproof.stats.intervals"] == ["specproof.commands.cli (commands and runners)"]


def test_a_planted_circle_is_caught(copy_of_the_tree: Path) -> None:
    settings = copy_of_the_tree / "specproof" / "audit" / "settings.py"
    original = settings.read_text()
    try:
        settings.write_text(original + "\nfrom specproof.audit import run\n")
        assert any(
            "specproof.audit.settings" in group for group in circles(graph(copy_of_the_tree))
        )
    finally:
        settings.write_text(original)
