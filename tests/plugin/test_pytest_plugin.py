"""The pytest plugin used the way an engine uses it: inner test files run by pytester.

Each inner check runs at level quick on one or two cases: false-fail rate <= rows x 1e-6 per
call (a handful of rows), power >= 0.9 against TV >= 0.2 in every row. The broken verifier
(residual drawn from p instead of max(p - q, 0)) and the shifted twin differ from the exact law
by far more than 0.2 on small-vocab, so they fail with probability >= 0.9 each, and in practice
always at these seeds.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

# Imported here so that pytester's in-process runs reuse them (numpy cannot load twice).
import plugin.engines  # noqa: F401
import pytest

import specproof.subjects.examples
import specproof.testing.lossless  # noqa: F401

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "specproof.testing.plugin"

VERIFIER_TEST = """
from specproof.subjects import examples

def test_verifier(specproof):
    specproof.assert_lossless(
        examples.{name}, signature="{signature}", cases=("small-vocab",)
    )
"""


@pytest.fixture(autouse=True)
def explicit_plugin_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs load the plugin by ``-p`` only: where specproof is installed, its entry point
    would register the same module a second time."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def run_inner(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest_inprocess("-p", PLUGIN, "-s", "--specproof-level=quick", *args)


def test_a_correct_verifier_passes_and_its_twin_fails(pytester: pytest.Pytester) -> None:
    source = VERIFIER_TEST.format(name="chain_speculative_sampling", signature="flashinfer")
    result = run_inner(pytester, source)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*false-fail rate <= 5 rows x alpha 1e-06*power >= 0.9 against TV >= 0.2*",
            "*small-vocab*round*pass*",
            "*calls*repeat*seeded rows reproduced exactly*pass*",
            "*must-fail twin (target rows shifted by one token id): FAIL as required*",
        ]
    )


def test_a_broken_verifier_fails_with_the_row_table(pytester: pytest.Pytester) -> None:
    source = VERIFIER_TEST.format(name="biased_chain_speculative_sampling", signature="flashinfer")
    result = run_inner(pytester, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: biased_chain_speculative_sampling is not lossless*",
            "*case*check*n*result*verdict*",
            "*small-vocab*round*TV estimate*>= bound*FAIL*",
        ]
    )


def test_a_twin_that_passes_makes_the_call_error(pytester: pytest.Pytester) -> None:
    """A mocked subject: the twin factory replaced by one that returns the subject untouched
    (what a verifier that ignores the target it is handed looks like to the check)."""
    source = """
import specproof.testing.lossless as lossless
from specproof.subjects import examples

def test_mocked(specproof, monkeypatch):
    monkeypatch.setattr(lossless, "shifted_target_twin", lambda fn, signature: fn)
    specproof.assert_lossless(
        examples.rejection_sample, signature="vllm", cases=("small-vocab",)
    )
"""
    result = run_inner(pytester, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*must-fail twin (target rows shifted by one token id): PASSED*",
            "*TwinPassedError: the must-fail twin of rejection_sample*passed the same check*",
        ]
    )


ENGINE_TEST = """
from plugin import engines

def test_engine(specproof):
    specproof.assert_engine_lossless(
        engines.{factory}, engines.target_probs, engines.PROMPT, num_new_tokens=3
    )
"""


def test_a_correct_engine_passes_and_its_twin_fails(pytester: pytest.Pytester) -> None:
    result = run_inner(pytester, ENGINE_TEST.format(factory="generate"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*must-fail twin (target law shifted by one token id): FAIL as required*"]
    )


def test_a_broken_engine_fails_with_the_row_table(pytester: pytest.Pytester) -> None:
    result = run_inner(pytester, ENGINE_TEST.format(factory="generate_residual_from_target"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*generate_residual_from_target is not lossless*",
            "*case*check*n*result*verdict*",
            "*FAIL*",
        ]
    )


def test_an_engine_twin_that_passes_makes_the_call_error(pytester: pytest.Pytester) -> None:
    """The engine twin mocked into the engine checked against the true law: it passes."""
    source = """
import specproof.testing.lossless as lossless
from plugin import engines

def test_mocked(specproof, monkeypatch):
    monkeypatch.setattr(lossless, "shifted_target_probs", lambda probs: probs)
    specproof.assert_engine_lossless(
        engines.generate, engines.target_probs, engines.PROMPT, num_new_tokens=3
    )
"""
    result = run_inner(pytester, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*must-fail twin (target law shifted by one token id): PASSED*",
            "*TwinPassedError: the must-fail twin of generate*passed the same check*",
        ]
    )


def test_the_level_option_is_checked_and_shown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="def test_nothing():\n    pass\n")
    shown = pytester.runpytest_inprocess("-p", PLUGIN, "--specproof-level=quick")
    shown.stdout.fnmatch_lines(["specproof: level quick (power 0.9 against TV 0.2)"])
    pytester.makeini("[pytest]\nspecproof_level = slow\n")
    refused = pytester.runpytest_inprocess("-p", PLUGIN)
    assert refused.ret != 0
    refused.stderr.fnmatch_lines(["*specproof_level must be one of full, quick, got 'slow'*"])


def test_loading_the_plugin_imports_neither_torch_nor_the_audit() -> None:
    code = (
        "import sys, specproof.testing.plugin, specproof.testing; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('specproof.audit')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"specproof": PLUGIN}
    setuptools = project["tool"]["setuptools"]
    assert "specproof.testing" in setuptools["packages"]
    assert setuptools["package-dir"]["specproof.testing"] == "specproof/testing"
