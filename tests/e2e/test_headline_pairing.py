"""The headline's pairing: every decoder decodes the same chunks, ratios are taken chunk by
chunk, and the DSpark / EAGLE-3 ratio is the quotient of the two ratios to the target on each
chunk; the scheduler comparison's records and clock charges on the same toy decodes."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from e2e.headline_results import headline_result
from e2e.toy_models import toy_models

from specproof.e2e.decoding.rounds import DecodeResult
from specproof.e2e.evaluation.clocks import RooflineClock, verified_tokens
from specproof.e2e.evaluation.comparisons import Setting
from specproof.e2e.evaluation.paired_runs import interleaved
from specproof.e2e.plans import FAST_VERIFY
from specproof.runners.e2e.experiments.headline import (
    DSPARK,
    TARGET,
    decoders_for,
    eagle_label,
    paired_ratios,
    pick_gamma,
    verdicts,
)
from specproof.runners.e2e.experiments.scheduler_clocks import charged, drafter_of, record_rounds
from specproof.runners.e2e.report.headline_and_clocks import headline_section


@pytest.fixture(scope="module")
def toy_runs() -> dict[str, list[DecodeResult]]:
    models: Any = toy_models(drafter_steps=2)  # pairing needs decodes, not good drafts
    decoders = decoders_for(
        models, Setting(8, FAST_VERIFY), 1.0, None, lambda b: 1.0 / (1.0 + 0.1 * b), [1, 3], 0
    )
    prompts = [[65 + i, 66, 67, 10 + i] for i in range(4)]
    return interleaved(decoders, [[p] for p in prompts], seed=1)


def test_each_decoder_sees_every_chunk_once_in_a_fresh_order() -> None:
    seen: dict[str, list[int]] = {}
    orders: list[list[str]] = []

    def recorder(name: str) -> Any:
        def decode(chunk: list[list[int]], index: int) -> DecodeResult:
            seen.setdefault(name, []).append(chunk[0][0])
            if not orders or len(orders[-1]) == 3:
                orders.append([])
            orders[-1].append(name)
            return DecodeResult([[0]], [], 1.0)

        return decode

    chunks = [[[i]] for i in range(12)]
    interleaved({name: recorder(name) for name in "abc"}, chunks, seed=0)
    assert seen == {name: list(range(12)) for name in "abc"}
    assert len({tuple(order) for order in orders}) > 1  # the order changes between chunks


def test_ratios_are_per_chunk_and_consistent(toy_runs: dict[str, list[DecodeResult]]) -> None:
    result = verdicts(1.0, toy_runs, 3)
    over_target = result["dspark_over_target"]["by_chunk"]
    eagle_over_target = result["eagle_over_target"]["by_chunk"]
    over_eagle = result["dspark_over_eagle"]["by_chunk"]
    for a, b, c in zip(over_target, eagle_over_target, over_eagle, strict=True):
        assert c == pytest.approx(a / b)
    expected = [
        d.tokens_per_second / t.tokens_per_second
        for d, t in zip(toy_runs[DSPARK], toy_runs[TARGET], strict=True)
    ]
    assert over_target == pytest.approx(expected)
    tests = result["sign_tests"]
    assert tests["dspark_slower_than_eagle"]["n"] == 4
    assert (
        tests["dspark_slower_than_eagle"]["slower"]
        == sum(r < 1 for r in over_eagle)
        == 4 - tests["dspark_faster_than_eagle"]["slower"]
    )


def test_pick_gamma_takes_the_best_median_ratio(toy_runs: dict[str, list[DecodeResult]]) -> None:
    gamma, medians = pick_gamma(toy_runs)
    assert set(medians) == {"1", "3"}
    assert medians[str(gamma)] == max(medians.values())


def test_pairing_refuses_results_of_different_chunks(
    toy_runs: dict[str, list[DecodeResult]],
) -> None:
    runs = {**toy_runs, TARGET: toy_runs[TARGET][:-1]}
    with pytest.raises(ValueError, match="one result per chunk"):
        paired_ratios(runs, DSPARK, TARGET)


def test_recorded_rounds_and_their_charges(toy_runs: dict[str, list[DecodeResult]]) -> None:
    recorded = record_rounds({eagle_label(3): toy_runs[eagle_label(3)]})[eagle_label(3)]
    assert recorded["draft_width"] == 3 and recorded["drafter"] == "eagle"
    first = toy_runs[eagle_label(3)][0].rounds[0]
    assert recorded["decodes"][0][0] == {
        "l": first.scheduled,
        "a": first.accepted,
        "B": verified_tokens(first.scheduled),
    }
    assert drafter_of(TARGET) == (None, 0)
    clock = RooflineClock(requests=1, knee=4, dspark_gamma=3, dspark_share=0.5, eagle_share=0.5)
    runs = {TARGET: toy_runs[TARGET], eagle_label(3): toy_runs[eagle_label(3)]}
    retimed = charged(runs, clock, 1, 8)
    assert all(r.seconds == pytest.approx(8.0) for r in retimed[TARGET])
    decode = toy_runs[eagle_label(3)][0]
    expected = sum(max(1.0, verified_tokens(log.scheduled) / 4) + 3 * 0.5 for log in decode.rounds)
    assert retimed[eagle_label(3)][0].seconds == pytest.approx(expected)


def test_headline_section_marks_each_target_met_or_missed(
    toy_runs: dict[str, list[DecodeResult]],
) -> None:
    entry = verdicts(1.0, toy_runs, 3)
    entry.update(chunks=4, load_before=[1.0, 1.0, 1.0], load_after=[2.0, 2.0, 2.0])
    pilot = {
        "prose/T=1": {
            "eagle_gamma": 3,
            "eagle_median_ratio_to_target_by_gamma": {str(g): 1.0 for g in range(1, 8)},
        }
    }
    result = headline_result({"prose/T=1": entry}, pilot)
    row = next(
        line for line in headline_section(result, "x.json").splitlines() if "prose/T=1 |" in line
    )
    met = entry["dspark_over_target"]["median"] >= 1.2
    assert (">= 1.2: met" in row) == met and ("**missed**" in row) == (not met)
    assert f"{entry['dspark_over_eagle']['median']:.2f}" in row


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("experiments.headline", ["--chunks", "0"]),
        ("experiments.headline", ["--max-minutes", "-1"]),
        ("experiments.scheduler_clocks", ["--margin", "0.7"]),
        ("experiments.scheduler_clocks", ["--batches", "1"]),
        ("experiments.scheduler_clocks", ["--markdown", "."]),
    ],
)
def test_bad_arguments_exit_2_before_any_work(module: str, argv: list[str]) -> None:
    command = importlib.import_module(f"specproof.runners.e2e.{module}")
    with pytest.raises(SystemExit) as stop:
        command.main(argv)
    assert stop.value.code == 2
