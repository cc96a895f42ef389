"""The headline's and the scheduler clocks' t-intervals, Holm families and prompt ids, on toy
decodes and hand-built results; the prompts' stored ids recut the very prompts."""

from __future__ import annotations

import math
from typing import Any

import pytest
from e2e.headline_results import headline_result
from e2e.toy_models import toy_models

from specproof.e2e.data.corpora import load_corpora, prompt_starts, prompts_from, split_prompts
from specproof.e2e.decoding.rounds import DecodeResult
from specproof.e2e.evaluation.comparisons import Setting
from specproof.e2e.evaluation.paired_runs import interleaved
from specproof.e2e.plans import FAST_VERIFY
from specproof.runners.e2e.experiments import headline, scheduler_clocks
from specproof.runners.e2e.report.headline_and_clocks import clocks_holm_lines, headline_section


@pytest.fixture(scope="module")
def toy_runs() -> dict[str, list[DecodeResult]]:
    models: Any = toy_models(drafter_steps=2)
    decoders = headline.decoders_for(
        models, Setting(8, FAST_VERIFY), 1.0, None, lambda b: 1.0 / (1.0 + 0.1 * b), [3], 0
    )
    prompts = [[65 + i, 66, 67, 10 + i] for i in range(4)]
    return interleaved(decoders, [[p] for p in prompts], seed=1)


def test_prompt_starts_are_where_the_prompts_are_cut() -> None:
    stream = load_corpora()["math"].stream("calibration")
    starts = prompt_starts(stream, 5, 32, 7)
    prompts = prompts_from(stream, 5, 32, 7)
    assert prompts == [[int(b) for b in stream[s : s + 32]] for s in starts]


def test_split_prompts_are_prompts_from_with_their_starts() -> None:
    """What the headline and the scheduler clocks decode and what they store as prompt ids
    come from one cut: the prompts are prompts_from's, the ids recut them."""
    corpora = load_corpora()
    prompts, starts = split_prompts(corpora, "evaluation", 6, 32, 13)
    for domain, corpus in corpora.items():
        stream = corpus.stream("evaluation")
        assert prompts[domain] == prompts_from(stream, 6, 32, 13)
        assert prompts[domain] == [[int(b) for b in stream[s : s + 32]] for s in starts[domain]]


def toy_headline_result(toy_runs: dict[str, list[DecodeResult]]) -> dict[str, Any]:
    settings = {}
    for key in ("prose/T=1", "math/T=1"):
        entry = headline.verdicts(1.0, toy_runs, 3)
        entry.update(chunks=4, load_before=[1.0, 1.0, 1.0], load_after=[2.0, 2.0, 2.0])
        settings[key] = entry
    return headline_result(settings, {}, interval="t", holm=headline.holm_families(settings))


def test_headline_t_tests_and_holm_families(toy_runs: dict[str, list[DecodeResult]]) -> None:
    result = toy_headline_result(toy_runs)
    entry = result["settings"]["prose/T=1"]
    ratios = entry["dspark_over_eagle"]["by_chunk"]
    summary = entry["t_tests"]["dspark_over_eagle"]
    assert summary["geometric_mean"] == pytest.approx(
        math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    )
    families = result["holm"]
    assert set(families) == set(headline.FAMILIES)
    # Two settings, each with a 'slower' and a 'faster' sign test: a family of four.
    sign = families["sign_tests_against_eagle"]
    assert len(sign["p_values"]) == 4
    smallest = min(sign["p_values"].values())
    assert min(sign["adjusted"].values()) == pytest.approx(min(1.0, 4 * smallest))
    assert families["t_tests_against_eagle"]["p_values"] == {
        key: s["t_tests"]["dspark_over_eagle"]["p_value"] for key, s in result["settings"].items()
    }
    text = headline_section(result, "x.json")
    assert "Holm-adjusted below" in text and sign["family"] in text


def test_one_chunk_settings_leave_the_t_families_out(
    toy_runs: dict[str, list[DecodeResult]],
) -> None:
    one = {label: results[:1] for label, results in toy_runs.items()}
    entry = headline.verdicts(1.0, one, 3)
    assert entry["t_tests"] is None
    assert set(headline.holm_families({"prose/T=1": entry})) == {"sign_tests_against_eagle"}


def clocks_test(p_faster: float, p_t: float | None, p_non: float | None) -> dict[str, Any]:
    test: dict[str, Any] = {
        "reference": "DSpark, fixed gamma=3",
        "faster": {"p_value": p_faster},
        "faster_t": None
        if p_t is None
        else {"p_value": p_t, "geometric_mean": 1.1, "interval_95": [1.0, 1.2]},
    }
    if p_non is not None:
        test["non_inferior"] = {"p_value": p_non}
    return test


def test_clocks_holm_families_run_across_batch_sizes() -> None:
    batches = {
        "4": {
            "clocks": {"cpu": {"tests": {"whole": {"best_fixed": clocks_test(0.01, 0.02, 0.03)}}}}
        },
        "8": {
            "clocks": {
                "cpu": {"tests": {"whole": {"best_fixed": clocks_test(0.04, 0.01, 0.5)}}},
                "knee 16": {"tests": {"whole": {"best_fixed": clocks_test(0.2, 0.3, None)}}},
            }
        },
    }
    families = scheduler_clocks.holm_families(batches)
    faster = families["faster_sign_tests"]
    assert faster["family"] == scheduler_clocks.FAMILIES["faster_sign_tests"]
    # sorted 0.01, 0.04, 0.2 over three tests: 0.03, max(0.03, 0.08), max(0.08, 0.2)
    assert faster["adjusted"] == pytest.approx(
        {
            "B=4 cpu whole best_fixed": 0.03,
            "B=8 cpu whole best_fixed": 0.08,
            "B=8 knee 16 whole best_fixed": 0.2,
        }
    )
    assert len(families["non_inferior_sign_tests"]["p_values"]) == 2  # CPU clock only
    lines = clocks_holm_lines({"interval": "t", "holm": families, "batches": batches})
    assert any("B=8" not in line and "| 8 | knee 16 |" in line for line in lines)
    # A test without a t-interval (one chunk) leaves the t-test family out.
    batches["4"]["clocks"]["cpu"]["tests"]["whole"]["best_fixed"]["faster_t"] = None
    assert "faster_t_tests" not in scheduler_clocks.holm_families(batches)
