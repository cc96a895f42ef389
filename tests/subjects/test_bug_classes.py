"""The one catalogue of bugs (``specproof.subjects.bugs``): each record's flags, switched on in
the one flagged verifier, are caught by the row its trigger names, on the case the default
command runs with its defaults (alpha = 1e-6 per row, power 1 - 1e-4 against TV >= 0.05;
fidelity rows against TV >= 0.025; exact rows alpha = 0; a hunt for 2^20 rounds, or for a rare
bug of exact rate r the rounds that show it with probability 1 - 1e-6); the flag-free verifier
passes the same rows (each statistical row false-fails with probability <= 1e-6, exact rows
never); every flag is one record's; docs/guide/auditing_a_verifier.md's table is what the module
prints."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from specproof.subjects import bugs
from specproof.subjects.bugs import BUGS, CLASSES, Bug, catching_rows
from specproof.subjects.flagged import CORRECT, BugFlags

DEFAULT_SESSION = {
    "uniform-grid-le",
    "draft-bf16-logits",
    "always-greedy",
    "mixed-generator-noise",
    "nan-target-emits-vocab-size",
    "threshold-eps",
    "zero-length-dropped",
}
"""One bug per kind of catching row (hunt, fidelity, round, support, nonfinite, layout) runs in
the default session; every bug runs in `nox -s thorough`."""

OTHERS = [b for b in BUGS if b.public is None and b.caught is not None]
"""The catalogue's bugs that are no public class and that a row can catch."""


def _param(bug: Bug) -> object:
    return pytest.param(bug, marks=() if bug.name in DEFAULT_SESSION else pytest.mark.slow)


def _assert_caught(bug: Bug) -> None:
    assert bug.caught is not None
    rows = catching_rows(bug)
    failed = [r for r in rows if not r.passed]
    assert any(r.check.startswith(bug.caught.check) for r in failed), [
        (r.case, r.check, r.result()) for r in rows
    ]


@pytest.mark.parametrize("bug", [_param(b) for b in CLASSES], ids=lambda b: b.public.model)
def test_bug_class_is_caught(bug: Bug) -> None:
    _assert_caught(bug)


@pytest.mark.parametrize("bug", [_param(b) for b in OTHERS], ids=lambda b: b.name)
def test_mutant_is_caught_at_its_trigger(bug: Bug) -> None:
    _assert_caught(bug)


def _triggers() -> list[object]:
    """One bug per distinct catching case (subject kind, signature, case, filter order)."""
    seen: dict[tuple[object, ...], Bug] = {}
    for bug in BUGS:
        if bug.caught is not None:
            key = (bug.subject, bug.caught.signature, bug.caught.case, bug.caught.filter_order)
            seen.setdefault(key, bug)
    fast = {"nan-target-emits-vocab-size", "always-greedy"}
    return [
        pytest.param(b, marks=() if b.name in fast else pytest.mark.slow) for b in seen.values()
    ]


@pytest.mark.parametrize("bug", _triggers(), ids=lambda b: b.name)
def test_the_flag_free_verifier_passes_the_trigger(bug: Bug) -> None:
    """The same case and settings with every flag off (the engine class: the correct engine)
    pass every row, the catching one included."""
    rows = catching_rows(bug, flags=CORRECT)
    assert rows and all(r.passed for r in rows), [(r.case, r.check, r.result()) for r in rows]


def test_each_flag_is_one_bug_of_the_catalogue() -> None:
    """Every flag of the flagged verifier is switched on by exactly one record, and each record
    names flags that exist (``BugFlags.of`` refuses an unknown name)."""
    named = [bug.switched for bug in BUGS if bug.subject != "engine"]
    on = [flag for flags in named for flag in flags.on()]
    switches = {f.name.replace("_", "-") for f in fields(BugFlags)} - {"filter-order"}
    assert sorted(on) == sorted(switches)
    orders = sorted(str(flags.filter_order) for flags in named if flags.filter_order)
    assert orders == ["llama.cpp", "sequential", "vllm"]  # one record per order that differs
    assert len({bug.name for bug in BUGS}) == len(BUGS)
    with pytest.raises(KeyError, match="no bug flag named"):
        BugFlags.of("no-such-bug")


def test_the_equivalent_mutants_name_no_trigger() -> None:
    equivalent = {bug.name for bug in BUGS if bug.caught is None}
    assert equivalent == {"pq-fallback-draft", "residual-by-acceptance"}
    assert all(bugs.bug(name).mutant for name in equivalent)


def test_the_audit_page_table_is_the_modules() -> None:
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "guide" / "auditing_a_verifier.md").read_text()
    assert bugs.markdown() in page


def test_the_models_are_importable_by_the_command() -> None:
    from specproof.audit import load_callable

    for bug in CLASSES:
        assert bug.public is not None
        assert callable(load_callable(f"specproof.subjects.bugs:{bug.public.model}"))
    assert bugs.command(CLASSES[0]).startswith("specproof audit specproof.subjects.bugs:")
