"""The built wheel, installed without the clone, runs a documented command from each package
pyproject.toml lists, and holds the package data (the shipped weights).

The wheel is built from a copy of the files it is made of (the clone gets no build/ or
egg-info), installed with ``pip install --no-deps --target DIR``, and every command runs from a
temporary folder outside the clone with ``PYTHONPATH=DIR``: dependencies come from this
interpreter's site-packages, and ``specproof`` itself must come from DIR (checked: an editable
install of the clone in the same site-packages would otherwise hide a package the wheel lacks).
The tests that need the wheel are slow (``nox -s thorough``): about 3 minutes on two shared cores
(a 15 MB wheel built and installed, then some twenty interpreters started, most importing torch);
the check that every listed package has a command runs in the default session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
PACKAGES: list[str] = SETUPTOOLS["packages"]

WHERE = "import importlib, sys; print(importlib.import_module(sys.argv[1]).__file__)"
"""Prints the file a module is imported from (the import check)."""
OPTIMIZED_CALL = (
    "import torch; from specproof.optimized import chain_verify; "
    "target = torch.full((2, 3, 4), 0.25); draft = torch.full((2, 2, 4), 0.25); "
    "tokens = torch.zeros(2, 2, dtype=torch.int64); "
    "print(chain_verify(target, draft, tokens, seed=7, backend='torch').num_accepted.tolist())"
)
"""A chain verification on CPU: p = q, so every draft is accepted."""
SHIPPED_WEIGHTS = (
    "from specproof.e2e.models.loading import SHIPPED_DIR, load_models; "
    "print(SHIPPED_DIR, type(load_models(SHIPPED_DIR).target).__name__)"
)
"""The shipped weights loaded from the installed package data."""

COMMANDS: dict[str, list[tuple[str, ...]]] = {
    "specproof": [("specproof", "--help")],
    "specproof.reference": [("python", "-c", WHERE, "specproof.reference.rules")],
    "specproof.optimized": [("python", "-c", OPTIMIZED_CALL)],
    "specproof.optimized.checks": [("python", "-c", WHERE, "specproof.optimized.checks.streams")],
    "specproof.optimized.kernels": [
        ("python", "-m", "specproof.optimized.kernels.compile_check", "--help")
    ],
    "specproof.optimized.torch_backend": [
        ("python", "-c", WHERE, "specproof.optimized.torch_backend.chain_verify")
    ],
    "specproof.stats": [("python", "-c", WHERE, "specproof.stats.gof")],
    "specproof.audit": [("specproof", "audit", "--help")],
    "specproof.audit.signatures": [("python", "-c", WHERE, "specproof.audit.signatures.registry")],
    "specproof.audit.engine": [("specproof", "audit-engine", "--help")],
    "specproof.subjects": [("python", "-c", WHERE, "specproof.subjects.bugs")],
    "specproof.subjects.mutants": [
        ("python", "-c", WHERE, "specproof.subjects.mutants.verifier"),
    ],
    "specproof.models": [("python", "-c", WHERE, "specproof.models.smollm2")],
    "specproof.adapters": [
        ("python", "-c", WHERE, "specproof.adapters.hf"),
        ("specproof", "engines"),
    ],
    "specproof.runners": [
        ("python", "-m", "specproof.runners.audit_bench", "--help"),
        ("python", "-m", "specproof.runners.mutant_table", "--help"),
        ("python", "-m", "specproof.runners.real_audit", "--help"),
        ("python", "-m", "specproof.runners.bug_table", "--markdown"),
        ("python", "-m", "specproof.runners.adversarial_search", "--help"),
        ("python", "-m", "specproof.runners.smollm2", "--help"),
    ],
    "specproof.testing": [("python", "-c", WHERE, "specproof.testing.plugin")],
    "specproof.golden": [("specproof", "golden", "--out", "golden")],
    "specproof.parity": [("specproof", "parity-report", "--help")],
    "specproof.e2e": [("python", "-m", "specproof.runners.e2e.run", "--help")],
    "specproof.e2e.data": [("python", "-c", WHERE, "specproof.e2e.data.corpora")],
    "specproof.e2e.models": [("python", "-c", SHIPPED_WEIGHTS)],
    "specproof.e2e.training": [("python", "-c", WHERE, "specproof.e2e.training.ship")],
    "specproof.e2e.decoding": [("python", "-c", WHERE, "specproof.e2e.decoding.rounds")],
    "specproof.e2e.evaluation": [("python", "-c", WHERE, "specproof.e2e.evaluation.agreement")],
    "specproof.runners.e2e": [("python", "-m", "specproof.runners.e2e.train_target", "--help")],
    "specproof.runners.e2e.experiments": [
        ("python", "-m", "specproof.runners.e2e.experiments.headline", "--help")
    ],
    "specproof.runners.e2e.report": [("python", "-m", "specproof.runners.e2e.report", "--help")],
    "specproof.commands": [("specproof", "--help")],
}
"""A documented command per listed package ("specproof": the wheel's console script; "python":
this interpreter); a package with nothing to run maps to an import check (:data:`WHERE`)."""


class Installed(NamedTuple):
    wheel: Path
    target: Path
    """The folder the wheel was installed into (``pip install --target``)."""


def source_copy(into: Path) -> Path:
    """The files the wheel is built from: pyproject.toml, its readme and each top folder of
    the package-dir mapping, without caches."""
    source = into / "source"
    source.mkdir()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for name in ("pyproject.toml", project["readme"]):
        shutil.copy2(ROOT / name, source / name)
    for top in sorted({Path(folder).parts[0] for folder in SETUPTOOLS["package-dir"].values()}):
        caches = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
        shutil.copytree(ROOT / top, source / top, ignore=caches)
    return source


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    work = tmp_path_factory.mktemp("wheel")
    assert not work.resolve().is_relative_to(ROOT), "the wheel must be tried outside the clone"
    source = source_copy(work)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(work / "dist"), str(source)],
        check=True, cwd=work,
    )  # fmt: skip
    (wheel,) = (work / "dist").glob("specproof-*.whl")
    target = work / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True, cwd=work,
    )  # fmt: skip
    yield Installed(wheel, target)


def run_installed(installed: Installed, command: tuple[str, ...], cwd: Path) -> str:
    """Run ``command`` from ``cwd`` with only the installed wheel on PYTHONPATH; its stdout."""
    program, *arguments = command
    executable = {"python": sys.executable, "specproof": str(installed.target / "bin" / program)}
    env = {**os.environ, "PYTHONPATH": str(installed.target)}
    done = subprocess.run(
        [executable[program], *arguments], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode} from the installed wheel:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def test_every_listed_package_has_a_command() -> None:
    missing = [name for name in PACKAGES if name not in COMMANDS]
    assert not missing, (
        f"{missing} listed in pyproject.toml's packages but without a command in "
        "tests/test_wheel.py's COMMANDS: add a documented command (or an import check)"
    )
    stale = sorted(set(COMMANDS) - set(PACKAGES))
    assert not stale, f"COMMANDS names packages pyproject.toml does not list: {stale}"


@pytest.mark.slow
def test_specproof_comes_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    """Every listed package is imported from the install folder, none from the clone."""
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n" + (
        "    print(importlib.import_module(name).__file__)"
    )
    files = run_installed(installed, ("python", "-c", script, *PACKAGES), tmp_path).split()
    assert len(files) == len(PACKAGES)
    outside = [
        (name, file)
        for name, file in zip(PACKAGES, files, strict=True)
        if not Path(file).resolve().is_relative_to(installed.target.resolve())
    ]
    assert not outside, f"imported from outside the installed wheel: {outside}"


@pytest.mark.slow
@pytest.mark.parametrize("package", [name for name in PACKAGES if name in COMMANDS])
def test_documented_command_runs_from_the_wheel(
    installed: Installed, tmp_path: Path, package: str
) -> None:
    for command in COMMANDS[package]:
        out = run_installed(installed, command, tmp_path)
        if command[:3] == ("python", "-c", WHERE):
            where = Path(out.strip()).resolve()
            assert where.is_relative_to(installed.target.resolve()), f"{command}: {where}"
    if package == "specproof.golden":
        assert (tmp_path / "golden" / "chain_vectors.json").stat().st_size > 0
    if package == "specproof.optimized":
        assert out.strip() == "[2, 2]"  # p = q: every draft accepted


@pytest.mark.slow
def test_wheel_holds_every_module_of_the_clone(installed: Installed) -> None:
    """Every .py file under the clone's package folders is in the wheel, whatever the package
    list says (a package left off it, as specproof.subjects.mutants once was, is caught here)."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        held = set(wheel.namelist())
    tops = {
        name: ROOT / folder
        for name, folder in SETUPTOOLS["package-dir"].items()
        if len(Path(folder).parts) == 1
    }
    missing = sorted(
        name
        for package, folder in tops.items()
        for module in folder.rglob("*.py")
        if "__pycache__" not in module.parts
        and (name := (Path(*package.split(".")) / module.relative_to(folder)).as_posix())
        not in held
    )
    assert not missing, f"modules of the clone missing from the wheel: {missing[:10]}"


@pytest.mark.slow
def test_wheel_holds_the_package_data(installed: Installed) -> None:
    """Each package-data pattern matches files in the clone, and the wheel holds each, whole."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        sizes = {info.filename: info.file_size for info in wheel.infolist()}
    mapping = SETUPTOOLS["package-dir"]
    for package, patterns in SETUPTOOLS["package-data"].items():
        folder = ROOT / mapping[package]
        inside = Path(*package.split("."))
        for pattern in patterns:
            files = sorted(folder.glob(pattern))
            assert files, f"package-data pattern {package}: {pattern} matches no file"
            for file in files:
                name = (inside / file.relative_to(folder)).as_posix()
                assert sizes.get(name) == file.stat().st_size, f"{name} missing or cut in wheel"
