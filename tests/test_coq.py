"""The Coq proofs (proofs/coq/): what a text check can see by default, the full gate when slow."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

COQ = Path(__file__).resolve().parent.parent / "proofs" / "coq"
UNCHECKED = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture)\b")


def check_module() -> ModuleType:
    """proofs/coq/check.py, loaded under a name of its own."""
    spec = importlib.util.spec_from_file_location("specproof_coq_check", COQ / "check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_main_files_state_no_axiom_and_admit_nothing() -> None:
    """Outside negative/, no .v file admits a step or declares an axiom or parameter."""
    files = sorted(COQ.glob("*.v"))
    assert files
    for path in files:
        assert not UNCHECKED.findall(path.read_text()), path.name


def test_every_gated_theorem_is_stated_in_its_file() -> None:
    check = check_module()
    order = check.build_order()
    for theorem in check.THEOREMS:
        assert f"{theorem.module}.v" in order, theorem.module
        text = (COQ / f"{theorem.module}.v").read_text()
        pattern = rf"^(Theorem|Lemma|Corollary) {theorem.name}\b"
        assert re.search(pattern, text, flags=re.M), theorem.name


def test_negative_variants_exist() -> None:
    """The gate's own test needs wrong variants: a compile failure and an Admitted one."""
    texts = [path.read_text() for path in sorted((COQ / "negative").glob("*.v"))]
    assert len(texts) >= 2
    assert any("Admitted." in text for text in texts)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed (Debian: coq)")
def test_coq_gate_passes_on_a_copy(tmp_path: Path) -> None:
    """``proofs/coq/check.py`` on a copy of the folder: every theorem closed, negatives fail."""
    copy = tmp_path / "coq"
    shutil.copytree(COQ, copy, ignore=shutil.ignore_patterns("*.vo*", "*.glob", ".*.aux"))
    result = subprocess.run(
        [sys.executable, str(copy / "check.py")], capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fails as expected" in result.stdout
