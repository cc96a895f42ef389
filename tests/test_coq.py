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


def test_every_negative_variant_names_its_failure() -> None:
    check = check_module()
    for path in sorted((COQ / "negative").glob("*.v")):
        expected = check.expected_failure(path.read_text())
        assert expected, f"{path.name} has no single (* expect: TEXT *) line"


def test_expected_failure_needs_exactly_one_line() -> None:
    check = check_module()
    assert check.expected_failure("(* expect: Error: No applicable tactic. *)\n") == (
        "Error: No applicable tactic."
    )
    assert check.expected_failure("(* a comment *)\nTheorem t : True.\n") is None
    assert check.expected_failure("(* expect: a *)\n(* expect: b *)\n") is None


def test_negative_verdict_rejects_another_failure() -> None:
    """A variant failing for another reason (here a misspelt lemma) is not the expected failure."""
    check = check_module()
    expected = "line 17, characters 0-76: Error: The LHS of sum_excess"
    as_named = "does not compile: File x.v, line 17, characters 0-76: Error: The LHS of sum_excess"
    misspelt = (
        "does not compile: File x.v, line 16, characters 8-17: Error: The reference subr_gt00"
        " was not found in the current environment."
    )
    assert check.negative_verdict(expected, as_named) is None
    verdict = check.negative_verdict(expected, misspelt)
    assert verdict is not None and "not as expected" in verdict and "subr_gt00" in verdict
    assert "PASSED" in check.negative_verdict(expected, None)
    assert "names no expected failure" in check.negative_verdict(None, misspelt)


def test_statement_file_pins_exactly_the_main_theorems() -> None:
    check = check_module()
    statements = check.read_statements()
    assert sorted(statements) == sorted(theorem.key for theorem in check.THEOREMS)
    for theorem in check.THEOREMS:
        assert statements[theorem.key] not in ("", "True"), theorem.key


def test_statement_comparison_ignores_whitespace_only() -> None:
    check = check_module()
    committed = check.read_statements()["Step.T1_one_step"]
    rewrapped = "\n   ".join(committed.split(" "))
    assert check.statement_failure("Step.T1_one_step", committed, rewrapped) is None
    dropped = committed.replace("dist (R:=R) (V:=V) q ->", "", 1)
    assert dropped != committed
    assert check.statement_failure("Step.T1_one_step", committed, dropped) is not None


def test_statement_replaced_by_true_is_named_with_expected_and_actual() -> None:
    check = check_module()
    committed = check.read_statements()["Step.T1_one_step"]
    message = check.statement_failure("Step.T1_one_step", committed, "True")
    assert message is not None
    assert "statement of Step.T1_one_step differs" in message
    assert "expected:" in message and "actual:\n    True" in message
    missing = check.statement_failure("Step.T1_one_step", None, "True")
    assert missing is not None and "no statement" in missing


def test_statement_file_round_trips(tmp_path: Path) -> None:
    check = check_module()
    statements = check.read_statements()
    copy = tmp_path / "statements.txt"
    check.write_statements(statements, copy)
    assert check.read_statements(copy) == statements
    assert copy.read_text() == (COQ / "statements.txt").read_text()


def test_write_flag_is_not_the_gate_default() -> None:
    """nox -s coq runs the check without --write-statements; the flag must be asked for."""
    check = check_module()
    assert check.parse_arguments([]).write_statements is False
    assert check.parse_arguments(["--write-statements"]).write_statements is True
    noxfile = (COQ.parent.parent / "noxfile.py").read_text()
    call = re.search(r'session\.run\(sys\.executable, "proofs/coq/check\.py"[^\n]*', noxfile)
    assert call is not None and "--write" not in call.group(0)


def copy_proofs(destination: Path) -> Path:
    """The proofs folder without build outputs, under ``destination``."""
    copy = destination / "coq"
    shutil.copytree(COQ, copy, ignore=shutil.ignore_patterns("*.vo*", "*.glob", ".*.aux"))
    return copy


def run_gate(copy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(copy / "check.py")], capture_output=True, text=True, timeout=900
    )


needs_coq = pytest.mark.skipif(
    shutil.which("coqc") is None, reason="coqc not installed (Debian: coq)"
)


@pytest.mark.slow
@needs_coq
def test_coq_gate_passes_on_a_copy(tmp_path: Path) -> None:
    """``proofs/coq/check.py`` on a copy of the folder: every theorem closed and as committed,
    negatives fail as they name."""
    result = run_gate(copy_proofs(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("statement as committed") == 23
    assert result.stdout.count("fails as expected") == len(list((COQ / "negative").glob("*.v")))


WEAKENED = "T7_drafted_path"  # in the last file of _CoqProject: nothing else uses it
TYPO = ("subr_gt0 lt_neqAle", "subr_gt00 lt_neqAle")  # ResidualFromP.v, before its expected error


@pytest.fixture(scope="module")
def broken_gate(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """The gate on a copy where one main theorem states ``True`` and one negative has a typo."""
    copy = copy_proofs(tmp_path_factory.mktemp("broken"))
    source = copy / "DraftedPath.v"
    text = source.read_text()
    start = text.index(f"Theorem {WEAKENED} :")
    end = text.index("Qed.", start) + len("Qed.")
    weakened = f"Theorem {WEAKENED} : True.\nProof. exact I. Qed."
    source.write_text(text[:start] + weakened + text[end:])
    negative = copy / "negative" / "ResidualFromP.v"
    assert negative.read_text().count(TYPO[0]) == 1
    negative.write_text(negative.read_text().replace(*TYPO))
    return run_gate(copy)


@pytest.mark.slow
@needs_coq
def test_gate_fails_a_statement_replaced_by_true(
    broken_gate: subprocess.CompletedProcess[str],
) -> None:
    out = broken_gate.stdout
    assert broken_gate.returncode == 1, out + broken_gate.stderr
    assert "0 theorem(s) not closed, 1 statement(s) differ" in out  # closed, yet refused
    assert f"FAIL statement of DraftedPath.{WEAKENED} differs from statements.txt" in out
    assert "  actual:\n    True\n" in out
    expected = out.split(f"statement of DraftedPath.{WEAKENED}")[1].split("actual:")[0]
    assert "accp (R:=rat_realFieldType)" in expected  # the committed statement is shown


@pytest.mark.slow
@needs_coq
def test_gate_fails_a_negative_test_with_a_typo(
    broken_gate: subprocess.CompletedProcess[str],
) -> None:
    out = broken_gate.stdout
    assert broken_gate.returncode == 1, out + broken_gate.stderr
    assert "1 negative test(s) not failing as expected" in out
    line = next(ln for ln in out.splitlines() if "ResidualFromP.v" in ln)
    assert "FAIL ResidualFromP.v: fails, but not as expected" in line
    assert "subr_gt00" in out and "was not found" in out
