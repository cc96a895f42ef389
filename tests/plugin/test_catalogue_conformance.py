"""The plugin catches what the audit catches: every record of the bug catalogue
(``specproof.subjects.bugs``) that the default ``specproof audit`` catches on a law row fails
``assert_lossless`` at level full with the plugin's defaults (its cases, the repeated-call rows
on); each record the plugin leaves to the command is listed here by name with the reason, and a
record added to the catalogue must land on one side or the other.

Level full: every statistical row has false-fail rate <= 1e-6 and power >= 0.99 against TV >=
0.1; the rounds are seeded (seed 0), so each verdict below is reproducible. A record that passes
fails this test. Five records (the public classes the plugin's defaults missed before: vLLM PR
10863's mixed batch, TensorRT-LLM issue 19487's fixed stream on every call and PR 17599's
ignored request seed, and the two min-p orders) run in the default session, about 2 s each; the
rest are slow (about 55 s together, ``pytest -m slow``)."""

from __future__ import annotations

import time

import pytest

from specproof.subjects import bugs
from specproof.subjects.bugs import BUGS, Bug
from specproof.testing import assert_lossless
from specproof.testing.lossless import LARGE_CASES, signature_cases

LEFT_TO_THE_COMMAND = {
    "uniform-grid-le": "a rare event (rate 2^-16 per round on zero-target-draft): only the "
    "hunt's millions of rounds show it",
    "threshold-tiny-eps": "a rare event (rate 1e-6 per round on zero-target-draft): only the "
    "hunt shows it",
    "uniform-float32-le": "a rare event (rate 2^-24 per round on zero-target-draft): only the "
    "hunt shows it",
    "nan-target-emits-vocab-size": "a robustness row (an all-NaN target row), not a law the "
    "plugin tests; `specproof audit` runs the non-finite rows",
    "nan-draft-recovers-rejected": "a robustness row (an all-NaN draft row), not a law the "
    "plugin tests; `specproof audit` runs the non-finite rows",
    "draft-bf16-logits": "a drafter bug: `specproof audit --drafter` audits drafters",
    "draft-greedy-report-softmax": "a drafter bug: `specproof audit --drafter` audits drafters",
    "draft-top-k-report-raw": "a drafter bug: `specproof audit --drafter` audits drafters",
    "sequence-drift": "an engine bug of TV 0.015 per position: `specproof audit-engine "
    "--sequence 64` catches it, not the default audit",
    "pq-fallback-draft": "equivalent in law: no row of any audit can catch it",
    "residual-by-acceptance": "equivalent in law: no row of any audit can catch it",
}
DEFAULT_SESSION = {
    "mixed-generator-noise",
    "identical-streams",
    "request-seed-ignored",
    "min-p-after-top-p",
    "min-p-before-temperature",
}
CAUGHT = [bug for bug in BUGS if bug.name not in LEFT_TO_THE_COMMAND]


def test_every_record_is_caught_by_the_plugin_or_left_to_the_command_by_name() -> None:
    names = {bug.name for bug in BUGS}
    assert set(LEFT_TO_THE_COMMAND) <= names
    for bug in CAUGHT:
        assert bug.caught is not None and bug.subject == "verifier", bug.name
        assert bug.caught.check != "hunt" and bug.caught.case != "nonfinite", bug.name
    assert {bug.name for bug in CAUGHT} >= DEFAULT_SESSION


def _param(bug: Bug) -> object:
    return pytest.param(bug, marks=() if bug.name in DEFAULT_SESSION else pytest.mark.slow)


@pytest.mark.parametrize("bug", [_param(b) for b in CAUGHT], ids=lambda b: b.name)
def test_the_plugin_at_level_full_catches_the_record(bug: Bug) -> None:
    trigger = bug.caught
    assert trigger is not None
    large = trigger.case in LARGE_CASES  # the large vocabulary: the plugin runs it when asked
    start = time.perf_counter()
    with pytest.raises(AssertionError, match="is not lossless") as raised:
        assert_lossless(
            bugs.subject(bug),
            signature=trigger.signature,
            level="full",
            filter_order=trigger.filter_order,
            cases=signature_cases(trigger.signature) + LARGE_CASES if large else None,
        )
    print(f"TIMING {bug.name}: {time.perf_counter() - start:.1f} s")
    assert trigger.case in str(raised.value)
