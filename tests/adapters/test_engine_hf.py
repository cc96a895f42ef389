"""``specproof audit-engine --hf`` on the installed transformers (tiny seeded models built from
config; nothing is downloaded) and on glue mutants of its assisted generation.

The default tests run at reduced n with alpha = 1e-3 per row (a correct engine fails one of
its ~8 rows with probability <= 8e-3; seeds are fixed, so each run is deterministic). The
mutants chosen for the default session are the ones whose discrepancy the reduced n detects:
two fail an exact row (alpha = 0), and two measured a TV estimate of 0.28 and 0.39 on their
exact row at n = 400, where a row of 37 cells at n = 200-300 rejects from about 0.2-0.25.
Every mutant, and every setting of the installed version, runs at the default settings under
``slow``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip(
    "transformers", reason="the HF engine audit needs the hf extra (nox -s tests installs it)"
)

from specproof.adapters.hf import hf_engine
from specproof.adapters.recipe import batched_engine
from specproof.audit.engine import audit_engine
from specproof.commands.audit_engine import main
from specproof.subjects import hf_mutants, tiny

ALPHA = 1e-3
DELTA = 0.3


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def verdicts(setup, runs: int):  # type: ignore[no-untyped-def]
    report = audit_engine(
        hf_engine(*setup(), name=setup.__name__), runs=runs, alpha=ALPHA, delta=DELTA
    )
    return report, {r.check: r.verdict for r in report.results}


def test_target_probs_is_the_law_generate_samples_from() -> None:
    """The teacher-forced law equals the processed scores transformers' own sampling loop
    reports (no assistant), at T = 0.7, top-k 3, top-p 0.9 and a repetition penalty."""
    target, _, _ = tiny.assisted()
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 3, "top_p": 0.9}
    kwargs["repetition_penalty"] = 1.3
    engine = hf_engine(target, None, kwargs)
    prompt = torch.tensor([[1, 2, 3]])
    torch.manual_seed(0)
    out = target.generate(
        prompt, max_new_tokens=3, output_scores=True, return_dict_in_generate=True, **kwargs
    )
    ours = engine.target_probs(out.sequences)[0, 2:5]
    theirs = torch.softmax(torch.stack(out.scores)[:, 0], dim=-1)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("setup", [tiny.sample_t07, tiny.sample_top_k3], ids=["t0.7", "top-k"])
def test_installed_transformers_assisted_sampling_passes(setup) -> None:  # type: ignore[no-untyped-def]
    report, _ = verdicts(setup, runs=100)
    # No row fails; 100 runs fall short of the goal power, so the verdict is not a pass.
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()


def test_installed_transformers_assisted_greedy_passes_the_greedy_row() -> None:
    report, checks = verdicts(tiny.greedy, runs=20)
    assert checks["greedy"] == "pass" and report.passed, report.table()


@pytest.mark.parametrize(
    ("mutant", "row"),
    [
        (hf_mutants.processors_on_assistant_only, "support"),
        (hf_mutants.greedy_cache_not_rolled_back, "greedy"),
    ],
)
def test_exact_rows_fail_glue_mutants(mutant, row: str) -> None:  # type: ignore[no-untyped-def]
    _, checks = verdicts(mutant, runs=40)
    assert checks[row] == "FAIL"


@pytest.mark.parametrize(
    ("mutant", "runs"),
    [(hf_mutants.greedy_assistant_softmax_q, 300), (hf_mutants.target_cache_not_rolled_back, 200)],
    ids=["greedy-assistant-softmax-q", "target-cache-not-rolled-back"],
)
def test_statistical_rows_fail_glue_mutants(mutant, runs: int) -> None:  # type: ignore[no-untyped-def]
    report, _ = verdicts(mutant, runs=runs)
    assert not report.passed, report.table()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(hf_mutants.MUTANTS))
def test_every_glue_mutant_fails_at_the_default_settings(name: str) -> None:
    """alpha = 1e-6 per row, n for power >= 0.9999 against TV >= 0.1 (about 8 min each)."""
    report = audit_engine(hf_engine(*hf_mutants.MUTANTS[name](), name=name))
    assert not report.passed, report.table()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(tiny.CONFIGS))
def test_every_installed_config_passes_at_the_default_settings(name: str) -> None:
    report = audit_engine(hf_engine(*tiny.CONFIGS[name](), name=name))
    assert report.passed, report.table()


def test_hf_assistant_defaults_leave_long_drafts_untested() -> None:
    """transformers' assistant_confidence_threshold = 0.4 cuts this weak assistant's bursts
    short: the coverage row says so, while our settings (threshold 0) reach the longest draft."""
    defaults = audit_engine(hf_engine(*tiny.hf_defaults()), runs=40, alpha=ALPHA, delta=DELTA)
    coverage = defaults.results[-1]
    assert coverage.verdict == "warn"
    assert "no draft of the configured length 3" in coverage.detail
    ours = audit_engine(hf_engine(*tiny.sample_t1()), runs=40, alpha=ALPHA, delta=DELTA)
    assert "configured length" not in ours.results[-1].detail


def test_cli_fails_a_mutant_with_exit_status_1_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(
        [
            "--hf",
            "specproof.subjects.hf_mutants:processors_on_assistant_only",
            "--runs",
            "30",
            "--quiet",
            "--json",
            str(out),
        ]
    )
    assert code == 1
    report = json.loads(out.read_text())
    assert not report["passed"]
    assert "support" in capsys.readouterr().out
    # A token the target's processed law gives mass 0: the exact support row (alpha 0) fails.
    verdicts = {row["check"]: row["verdict"] for row in report["results"]}
    assert verdicts["layout"] == "pass" and verdicts["support"] == "FAIL"


def test_gpu_recipe_glue_on_a_cpu_engine() -> None:
    """The recipe's batched engine, with transformers' plain sampling loop standing in for
    vLLM's batch generate (one request per prompt, each seeded), fails no row (100 runs fall
    short of the goal power, so the verdict is inconclusive, not a pass)."""
    target, _, _ = tiny.assisted()
    sampling = {"do_sample": True, "temperature": 0.7}

    def generate_batch(prompts, num_new_tokens: int, seeds: list[int]):  # type: ignore[no-untyped-def]
        out = []
        for prompt, seed in zip(prompts, seeds, strict=True):
            torch.manual_seed(seed)
            ids = torch.tensor([list(prompt)])
            tokens = target.generate(ids, max_new_tokens=num_new_tokens, **sampling)
            out.append(tokens[0, len(prompt) :].tolist())
        return out

    engine = batched_engine("recipe", generate_batch, target, sampling, tiny.PROMPT, batch=50)
    report = audit_engine(engine, runs=100, alpha=ALPHA, delta=DELTA)
    assert not report.failed and report.verdict == "INCONCLUSIVE", report.table()


def test_cli_refuses_generate_without_target_probs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--generate", "specproof.subjects.tiny:greedy"]) == 2
    assert "--target-probs" in capsys.readouterr().err


def test_the_law_follows_the_model_generation_config() -> None:
    """``generate`` samples with the model's own generation config under the call's kwargs;
    the audited law must too: a model that ships do_sample and temperature 0.7 is sampled at
    0.7 even when the call passes nothing, and a call's kwargs still win."""
    from specproof.adapters.hf import hf_target_probs

    target, _ = tiny.tiny_models()
    target.generation_config.do_sample = True
    target.generation_config.temperature = 0.7
    sequences = torch.tensor([[1, 2, 3, 4]])
    shipped = hf_engine(target, None, {})
    assert not shipped.greedy
    expected = hf_target_probs(target, {"do_sample": True, "temperature": 0.7})(sequences)
    assert torch.equal(shipped.target_probs(sequences), expected)
    overridden = hf_engine(target, None, {"temperature": 1.3})
    expected = hf_target_probs(target, {"do_sample": True, "temperature": 1.3})(sequences)
    assert torch.equal(overridden.target_probs(sequences), expected)
    assert not torch.equal(shipped.target_probs(sequences), expected)
