"""The sequence rows (``audit-engine --sequence``) check their long runs as the 4-token rows do:
the runs' layout before any statistics, every answer of ``target_probs`` in the target's
simulation through the guard (a FAIL row, never a traceback), and every argument combination
before any run.

Nothing here is statistical: the layout and failure rows are exact (alpha = 0), and the runs
are too few for the stop and length rows to have power (their verdicts are not asserted)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from specproof.audit.engine import audit_engine
from specproof.audit.engine.sequence import timed_sequence_rows
from specproof.audit.engine.subject import Engine
from specproof.audit.guard import settle
from specproof.audit.settings import ErrorRates
from specproof.commands.audit_engine import main
from specproof.subjects.sequence_examples import EOS, PROMPT, TARGET, VOCAB, target_probs

TOKENS = 16
SETTINGS = {"rates": ErrorRates(alpha=1e-6, beta=1e-4, delta=0.5, tolerance=0.0)}


CDF = np.cumsum(TARGET.float().double().numpy(), axis=-1)
"""The law :func:`target_probs` gives after (previous, last) token, as a CDF."""


def sample(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    """A correct plain sampler of :func:`target_probs` (whose law after a context depends on
    its last two tokens), token by token, ending at EOS."""
    rng = np.random.default_rng(seed)
    previous, last = prompt[-2], prompt[-1]
    out: list[int] = []
    for _ in range(num_new_tokens):
        cdf = CDF[previous, last]
        token = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), VOCAB - 1)
        out.append(token)
        previous, last = last, token
        if token == EOS:
            break
    return out


def engine(
    generate: Callable[[Sequence[int], int, int], list[int]] = sample,
    probs: Callable[[torch.Tensor], torch.Tensor] = target_probs,
) -> Engine:
    return Engine(name="long", generate=generate, target_probs=probs, prompt=PROMPT, eos=EOS)


def rows_of(subject: Engine, runs: int = 6, tokens: int = TOKENS) -> list:
    rows, _ = timed_sequence_rows(subject, tokens, runs, **SETTINGS)  # type: ignore[arg-type]
    return rows


# Layout of the long runs --------------------------------------------------------------------


def _never_ends(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    """Runs without EOS, so a corruption at any position is reached."""
    return [1 + (seed + k) % (VOCAB - 2) for k in range(num_new_tokens)]


def after_eos(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    return [*_never_ends(prompt, 5, seed), EOS, 2]


def outside_from_8(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    run = _never_ends(prompt, num_new_tokens, seed)
    return [*run[:8], *(VOCAB + t for t in run[8:])]


def too_long(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    return _never_ends(prompt, num_new_tokens + 3, seed)


@pytest.mark.parametrize(
    ("generate", "reason"),
    [
        (after_eos, "token after EOS"),
        (outside_from_8, f"outside 0..{VOCAB - 1}"),
        (too_long, f"{TOKENS + 3} tokens for {TOKENS} asked"),
    ],
)
def test_long_runs_out_of_layout_fail_the_layout_row(
    generate: Callable[[Sequence[int], int, int], list[int]], reason: str
) -> None:
    """Before, such runs went straight into the stop and length rows and could pass."""
    rows = rows_of(engine(generate))
    assert [(r.check, r.verdict) for r in rows] == [("layout", "FAIL")], rows
    assert reason in rows[0].summary and rows[0].case == f"long ({TOKENS} tokens)"


def test_well_formed_long_runs_pass_the_layout_row_first() -> None:
    rows = rows_of(engine())
    assert [r.check for r in rows] == ["layout", "stop", "length"]
    assert rows[0].verdict == "pass"


CORRUPTIONS = ("none", "after-eos", "outside", "extra", "short")


@st.composite
def runs_and_corruption(draw: st.DrawFn) -> tuple[int, int, str, int, int]:
    tokens = draw(st.integers(2, 40))
    runs = draw(st.integers(1, 5))
    corruption = draw(st.sampled_from(CORRUPTIONS))
    victim = draw(st.integers(0, runs - 1))
    seed = draw(st.integers(0, 2**16))
    return tokens, runs, corruption, victim, seed


def corrupted(corruption: str, victim: int) -> Callable[[Sequence[int], int, int], list[int]]:
    """The correct sampler, with run ``victim`` broken as ``corruption`` says (run i is called
    with seed + i by the audit, so the victim is recognised by its index in call order)."""
    calls: list[int] = []

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
        index = len(calls)
        calls.append(seed)
        run = sample(prompt, num_new_tokens, seed)
        if index != victim or corruption == "none":
            return run
        if corruption == "after-eos":  # EOS placed early, a token after it
            return [*run[: max(len(run) - 2, 0)], EOS, 1][: num_new_tokens + 1]
        if corruption == "outside":
            return [*run[:-1], VOCAB + 3]
        if corruption == "extra":
            kept = [t for t in run if t != EOS]
            return kept + [1] * (num_new_tokens + 1 - len(kept))
        return [t for t in run[: num_new_tokens - 1] if t != EOS]  # short, without EOS

    return generate


@given(runs_and_corruption())
def test_layout_row_flags_exactly_the_broken_runs(case: tuple[int, int, str, int, int]) -> None:
    """Over lengths, run counts, EOS placements and corruptions: the layout row fails iff one
    run is broken, names that run, and the stop and length rows follow only a well-formed
    layout. ("after-eos" on a one-token budget leaves an EOS then one token: still broken.)"""
    tokens, runs, corruption, victim, seed = case
    rows, _ = timed_sequence_rows(
        engine(corrupted(corruption, victim)),
        tokens,
        runs,
        seed=seed,
        **SETTINGS,  # type: ignore[arg-type]
    )
    layout = rows[0]
    assert layout.check == "layout"
    if corruption == "none":
        assert layout.verdict == "pass" and [r.check for r in rows[1:]] == ["stop", "length"]
    else:
        assert layout.verdict == "FAIL" and len(rows) == 1, (corruption, layout.summary)
        assert layout.summary.startswith(f"run {victim}:"), layout.summary


# target_probs in the simulation --------------------------------------------------------------

LONG_CONTEXT = len(PROMPT) + 12


def only_short_contexts(
    misbehave: Callable[[torch.Tensor], torch.Tensor],
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The target, misbehaving only on contexts longer than 12 new tokens (which only the
    sequence simulation asks for)."""

    def probs(sequences: torch.Tensor) -> torch.Tensor:
        if sequences.shape[1] > LONG_CONTEXT:
            return misbehave(sequences)
        return target_probs(sequences)

    return probs


def _raises(sequences: torch.Tensor) -> torch.Tensor:
    raise RuntimeError("context too long")


def _nan(sequences: torch.Tensor) -> torch.Tensor:
    return torch.full((*sequences.shape, VOCAB), float("nan"))


def _wider(sequences: torch.Tensor) -> torch.Tensor:
    rows = target_probs(sequences)
    return torch.cat([rows, torch.zeros(*rows.shape[:2], 1)], dim=-1)


@pytest.mark.parametrize(
    ("misbehave", "reason"),
    [
        (_raises, "raised RuntimeError: context too long"),
        (_nan, "negative or non-finite mass"),
        (_wider, f"vocabulary changed from {VOCAB} to {VOCAB + 1}"),
    ],
)
def test_target_probs_misbehaving_in_the_simulation_is_a_fail_row(
    misbehave: Callable[[torch.Tensor], torch.Tensor], reason: str
) -> None:
    """Before, the simulation called the raw target_probs: a traceback out of audit_engine
    (exit 3 from the command)."""
    report = audit_engine(
        engine(probs=only_short_contexts(misbehave)),
        runs=20,
        delta=0.9,
        sequence_tokens=64,
    )
    failed = [r for r in report.results if r.verdict == "FAIL"]
    assert [(r.case, r.check) for r in failed] == [("long (64 tokens)", "target_probs")]
    assert reason in failed[0].summary, failed[0].summary
    assert report.verdict == "FAIL"


def test_target_probs_hanging_in_the_simulation_fails_the_timeout_row() -> None:
    """A target that hangs on long contexts: the audit's time limit (3 s here; the 4-token
    rows and the engine runs take well under a second) ends it with a timeout row."""
    release = threading.Event()

    def hangs(sequences: torch.Tensor) -> torch.Tensor:
        release.wait(60)
        return target_probs(sequences)

    try:
        report = audit_engine(
            engine(probs=only_short_contexts(hangs)),
            runs=20,
            delta=0.9,
            sequence_tokens=64,
            timeout=3.0,
        )
    finally:
        release.set()
        assert settle(10.0)
    failed = [r for r in report.results if r.verdict == "FAIL"]
    assert [(r.case, r.check) for r in failed] == [("long (64 tokens)", "timeout")], failed


# Arguments, before any run -------------------------------------------------------------------

CALLS: list[int] = []


def counted(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    CALLS.append(seed)
    return sample(prompt, num_new_tokens, seed)


def counting_engine() -> Engine:
    return engine(counted)


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (["--sequence", "3000", "--delta", "0.3"], "must stay below delta 0.3"),
        (["--sequence", str(10**9)], "must stay below delta 0.1"),
        (["--sequence", str(10**9), "--tolerance", "0"], "GiB of ids"),
    ],
)
def test_sequence_arguments_are_refused_before_any_run(
    options: list[str], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the 4-token audit ran first, then a traceback (or 10**9 was accepted)."""
    CALLS.clear()
    status = main(["--engine", f"{__name__}:counting_engine", "--quiet", *options])
    err = capsys.readouterr().err.strip()
    assert status == 2 and CALLS == []
    assert len(err.splitlines()) == 1 and err.startswith("specproof audit-engine: --sequence")
    assert reason in err, err


def test_audit_engine_refuses_the_same_combinations_before_any_run() -> None:
    from specproof.audit.engine.runs import SetupError

    CALLS.clear()
    with pytest.raises(SetupError, match="must stay below delta"):
        audit_engine(counting_engine(), delta=0.3, sequence_tokens=3000)
    assert CALLS == []


def test_a_target_too_wide_for_the_simulation_is_refused_before_any_run() -> None:
    """One run's rows at V = 2^26 over 70 positions exceed the 4 GiB the simulation may hold."""
    from specproof.audit.engine.sequence import simulation_batch, simulation_problem

    assert simulation_batch(3, 64, VOCAB) == 512
    assert simulation_batch(3, 64, 2**20) == 4096 // (67 * 8)
    assert simulation_problem(3, 67, 2**22) == ""
    assert "for a single run" in simulation_problem(3, 67, 2**26)
