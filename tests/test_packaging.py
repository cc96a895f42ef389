"""Every Python package folder of the clone is in pyproject.toml's explicit package list, so a
built wheel (not only an editable install) holds it: `specproof.subjects.mutants` was missing, and
docs/guide/auditing_a_verifier.md's `specproof audit specproof.subjects.mutants.verifier:...`
commands failed from a wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_folders(package_dir: dict[str, str]) -> dict[str, Path]:
    """Each listed package name with the folder the package-dir mapping gives it."""
    folders = {}
    for name in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in package_dir:
                folders[name] = ROOT / package_dir[prefix] / Path(*parts[cut:])
                break
    return folders


def test_every_package_folder_is_listed() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(package_folders(setuptools["package-dir"]).values())
    on_disk = {
        init.parent
        for top in ("specproof", "reference", "optimized")
        for init in (ROOT / top).rglob("__init__.py")
    }
    missing = sorted(str(folder.relative_to(ROOT)) for folder in on_disk - listed)
    assert not missing, f"package folders missing from pyproject.toml's packages: {missing}"
    assert listed <= on_disk, "a listed package maps to a folder without __init__.py"
