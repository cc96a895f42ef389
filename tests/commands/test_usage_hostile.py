"""Usage errors the commands refuse up front, one line, exit 2 (in-process, no work run):
non-finite and unrepresentable numbers, vocabularies too large to hold, engines built wrong,
modules that fail to import, and report paths that cannot be written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from specproof.commands.audit import main as audit_main
from specproof.commands.audit_engine import main as engine_main
from specproof.commands.cli import main as specproof_main

USAGE_ERROR = 2

MODULES = {
    "hostile_broken": "def verifier(:\n",
    "hostile_raises": "raise RuntimeError('no GPU here\\nsecond line')\n",
    "hostile_exits": "import sys\nsys.exit(0)\n",
    "hostile_engines": """
from specproof.audit.engine import Engine

def _gen(prompt, n, seed):
    return [0] * n

def _probs(sequences):
    raise AssertionError("never called")

def batch_zero():
    return Engine(name="b0", generate=_gen, target_probs=_probs, prompt=(0,),
                  generate_many=lambda *a: [], batch=0)

def batch_negative():
    return Engine(name="b-1", generate=_gen, target_probs=_probs, prompt=(0,), batch=-1)

def not_models():
    return ("a target", None, {})

def exits():
    import sys
    sys.exit(0)
""",
}


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def status_of(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """``main(argv)``'s exit status, whether returned or raised (argparse raises)."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code or 0)


def refused(capsys: pytest.CaptureFixture[str], status: int, *words: str) -> None:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == USAGE_ERROR and len(lines) == 1, err
    assert "Traceback" not in err and all(word in lines[0] for word in words), lines


VERIFIER = ["specproof.subjects.examples:chain_speculative_sampling", "--signature", "flashinfer"]


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e10", "1e400"])
def test_audit_refuses_a_timeout_that_is_not_finite_or_past_a_thread_wait(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """1e10 was accepted and overflowed the thread wait; inf ended in a C++ terminate."""
    refused(capsys, status_of(audit_main, [*VERIFIER, "--timeout", value]), "--timeout")


@pytest.mark.parametrize("option", ["--hunt-seconds", "--alpha", "--delta", "--tolerance"])
def test_audit_refuses_non_finite_float_options(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in ("inf", "nan"):
        refused(capsys, status_of(audit_main, [*VERIFIER, option, value]), option)


@pytest.mark.parametrize("value", ["inf", "nan", "1e10"])
def test_audit_engine_refuses_a_timeout_past_a_thread_wait(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """1e10 ended in OverflowError (exit 3) on the old code."""
    argv = ["--generate", "m:g", "--target-probs", "m:t", "--timeout", value]
    refused(capsys, status_of(engine_main, argv), "--timeout")


def test_audit_refuses_a_large_vocab_too_large_to_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """10^9 asked for some 30 GiB and ended in a traceback."""
    refused(
        capsys, status_of(audit_main, [*VERIFIER, "--large-vocab", str(10**9)]), "--large-vocab"
    )


@pytest.mark.parametrize(
    ("module", "words"),
    [
        ("hostile_broken", ("syntax error", "hostile_broken.py")),
        ("hostile_raises", ("RuntimeError: no GPU here",)),
        ("hostile_exits", ("sys.exit(0)",)),
    ],
)
def test_a_module_that_fails_to_import_is_a_usage_error_with_its_first_line(
    modules: Path, module: str, words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """A traceback and exit 1 ("a row failed") on the old code."""
    refused(
        capsys, status_of(audit_main, [f"{module}:verifier", "--signature", "flashinfer"]), *words
    )
    argv = ["--generate", f"{module}:g", "--target-probs", f"{module}:t"]
    refused(capsys, status_of(engine_main, argv), *words)


@pytest.mark.parametrize("fn", ["batch_zero", "batch_negative"])
def test_an_engine_with_a_batch_below_one_is_a_usage_error(
    modules: Path, fn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A traceback (exit 3) on the old code."""
    refused(capsys, status_of(engine_main, ["--engine", f"hostile_engines:{fn}"]), "batch")


def test_an_hf_function_returning_no_model_is_a_usage_error(
    modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(
        capsys, status_of(engine_main, ["--hf", "hostile_engines:not_models"]), "not a transformers"
    )


def test_an_engine_function_that_exits_is_a_usage_error(
    modules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(capsys, status_of(engine_main, ["--engine", "hostile_engines:exits"]), "sys.exit(0)")


def test_matrix_refuses_a_json_path_it_cannot_write_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A traceback after the 27 s of exact arithmetic on the old code."""
    refused(capsys, status_of(specproof_main, ["matrix", "--json", str(tmp_path)]), "is a folder")
    missing = tmp_path / "missing" / "m.json"
    refused(capsys, status_of(specproof_main, ["matrix", "--json", str(missing)]), "no folder")
