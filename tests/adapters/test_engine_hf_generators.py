"""transformers 5.25's new candidate generators (MTP, DFlash) and its biased ensemble
verification (``assistant_ensemble_weight``) under ``specproof audit-engine --hf``, on tiny
seeded models built from config (nothing is downloaded).

The default tests run at reduced n with alpha = 1e-3 per row, as tests/adapters/test_engine_hf.py
does (a correct engine fails one of its ~8 rows with probability <= 8e-3; seeds are fixed, so
each run is deterministic). The biased mode must fail: at w = 0.5 the first token's law is
0.5 p + 0.5 q, measured here at TV 0.44 on the exact row at n = 200 against a rejection bound
of 0.29 (p bound 3e-23), so the reduced n detects it with a wide margin. Every setting runs at
the default settings (alpha = 1e-6, power >= 0.9999 against TV >= 0.1) under ``slow``.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip(
    "transformers", reason="the HF engine audit needs the hf extra (nox -s tests installs it)"
)

from specproof.adapters.hf import ENGINE_KEYS, hf_engine
from specproof.audit.engine import audit_engine
from specproof.subjects import tiny

ALPHA = 1e-3
DELTA = 0.3


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def audit(setup, runs: int):  # type: ignore[no-untyped-def]
    report = audit_engine(
        hf_engine(*setup(), name=setup.__name__), runs=runs, alpha=ALPHA, delta=DELTA
    )
    return report, {r.check: r for r in report.results}


def test_the_ensemble_weight_reaches_generate_not_the_law() -> None:
    """The law the audit tests against is the target's (the ensemble weight changes only how
    transformers verifies), and generate really runs the ensemble path."""
    biased = hf_engine(*tiny.sample_ensemble())
    plain = hf_engine(*tiny.sample_t1())
    sequences = torch.tensor([[1, 2, 3, 4, 0]])
    torch.testing.assert_close(biased.target_probs(sequences), plain.target_probs(sequences))
    assert "assistant_ensemble_weight" in ENGINE_KEYS
    assert tiny.sample_ensemble()[2]["assistant_ensemble_weight"] == tiny.ENSEMBLE_WEIGHT


def test_the_biased_ensemble_verification_fails() -> None:
    report, rows = audit(tiny.sample_ensemble, runs=200)
    assert report.verdict == "FAIL" and rows["exact(N=2)"].verdict == "FAIL", report.table()


def test_the_biased_ensemble_verification_fails_the_greedy_row() -> None:
    """Greedy with the weight on compares drafts with argmax(w p + (1 - w) q): a token that is
    not the target's argmax is emitted at a clear margin."""
    report, rows = audit(tiny.greedy_ensemble, runs=20)
    assert rows["greedy"].verdict == "FAIL", report.table()


@pytest.mark.parametrize(
    "setup",
    [tiny.mtp_t1, tiny.mtp_eos, tiny.dflash_t1, tiny.dflash_top_k3, tiny.dflash_eos],
    ids=["mtp", "mtp-eos", "dflash", "dflash-top-k", "dflash-eos"],
)
def test_new_generators_fail_no_row_at_reduced_n(setup) -> None:  # type: ignore[no-untyped-def]
    report, _ = audit(setup, runs=100)
    # No row fails; 100 runs fall short of the goal power, so the verdict is not a pass.
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()


@pytest.mark.parametrize("setup", [tiny.mtp_greedy, tiny.dflash_greedy], ids=["mtp", "dflash"])
def test_new_generators_pass_the_greedy_row(setup) -> None:  # type: ignore[no-untyped-def]
    report, rows = audit(setup, runs=20)
    assert rows["greedy"].verdict == "pass" and report.passed, report.table()


def test_the_drafters_draft_and_are_sometimes_accepted_in_full() -> None:
    """The rounds really speculate: DFlash drafts its block less the anchor (2 tokens) and is
    accepted in full now and then; MTP drafts one token per round and is accepted sometimes."""
    _, dflash = audit(tiny.dflash_t1, runs=100)
    assert dflash["coverage"].verdict == "pass", dflash["coverage"].detail
    _, mtp = audit(tiny.mtp_t1, runs=100)
    detail = mtp["coverage"].result()
    assert "drafted 0:" in detail and " 1:" in detail.split("accepted")[1], detail


HEAD_DIGEST = """
import hashlib
from transformers.modeling_layers import MtpModel
from specproof.subjects import tiny
weights = MtpModel.from_pretrained(tiny.mtp_target()).state_dict().values()
print(hashlib.sha1(b"".join(w.float().numpy().tobytes() for w in weights)).hexdigest())
"""


def test_the_mtp_head_is_a_seeded_draw_not_uninitialised_memory() -> None:
    """transformers reloads the MTP head from the checkpoint at every generate call, and an
    MtpModel built from config leaves its experts' weights as uninitialised memory (NaN or
    values near 1e38 in some processes): every weight of the loaded head is finite and of the
    size of a draw at std SCALE (|w| < 8 SCALE: a normal exceeds 8 sigma with probability
    1e-15 per weight)."""
    from transformers.modeling_layers import MtpModel

    head = MtpModel.from_pretrained(tiny.mtp_target())
    for name, weight in head.state_dict().items():
        if "norm" not in name:
            assert torch.isfinite(weight).all() and weight.abs().max() < 8 * tiny.SCALE, name


@pytest.mark.slow
def test_the_mtp_head_is_the_same_in_every_process() -> None:
    """The head's weights hash the same in two fresh processes (about a minute)."""
    import subprocess
    import sys

    digests = [
        subprocess.run(
            [sys.executable, "-c", HEAD_DIGEST], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert digests[0] == digests[1] and len(digests[0]) == 40


@pytest.mark.slow
@pytest.mark.parametrize("name", list(tiny.NEW_GENERATORS))
def test_every_new_generator_passes_at_the_default_settings(name: str) -> None:
    report = audit_engine(hf_engine(*tiny.NEW_GENERATORS[name](), name=name))
    assert report.passed, report.table()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(tiny.BIASED))
def test_the_biased_mode_fails_at_the_default_settings(name: str) -> None:
    report = audit_engine(hf_engine(*tiny.BIASED[name](), name=name))
    assert report.verdict == "FAIL", report.table()


@pytest.mark.parametrize(
    ("setup", "runs", "status"),
    [("dflash_t1", 60, 4), ("mtp_t1", 60, 4), ("sample_ensemble", 200, 1)],
    ids=["dflash", "mtp", "ensemble"],
)
def test_cli_audits_the_new_settings(setup: str, runs: int, status: int) -> None:
    """``specproof audit-engine --hf`` takes a DFlash drafter (no ``generate`` of its own) and
    MTP (no assistant); 60 runs fall short of the goal power (exit 4, no row failed), and the
    biased mode fails (exit 1) at 200 runs, alpha = 1e-3 per row, delta 0.3 (the margin
    measured in :func:`test_the_biased_ensemble_verification_fails`)."""
    from specproof.commands.audit_engine import main

    args = ["--hf", f"specproof.subjects.tiny:{setup}", "--runs", str(runs), "--quiet"]
    assert main([*args, "--alpha", "1e-3", "--delta", "0.3"]) == status


def test_the_sequence_table_audits_both_block_generators_with_their_eos() -> None:
    """``sequence_table --subjects hf`` runs DFlash and MTP on their EOS settings: each engine
    it builds stops at an EOS, which the sequence rows need."""
    from specproof.runners.sequence_table import SUBJECTS

    subjects = SUBJECTS["hf"]()
    assert {name.split(", ")[1] for name in subjects} == {"DFlash eos", "MTP eos"}
    for expected, factory in subjects.values():
        assert expected == "PASS" and factory().eos_ids
