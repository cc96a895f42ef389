"""The re-timing of recorded scheduler-clock rounds: the hindsight best fixed gamma is the
argmin of the re-timed cost on the measured chunks, the re-timing reproduces the committed
ratios, the renderer names every clock plainly, and the committed BENCHMARKS.md section and
docs table are the renderer's output from the committed JSON. Deterministic (no sampling
assertions): no false-fail rate to state."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

from specproof.e2e.evaluation.clocks import CPU_LINE, WALL_CLOCK, MeasuredClock, RooflineClock
from specproof.e2e.evaluation.recorded_rounds import (
    clock_from_description,
    hindsight_best_gamma,
    retime_recorded,
    uniform_gamma,
)
from specproof.runners.e2e.experiments import scheduler_clocks_retimed
from specproof.runners.e2e.report.retimed_clocks import (
    NOT_MEASURED,
    SECTION,
    docs_table,
    retimed_section,
)
from specproof.sections import section_markers

ROOT = Path(__file__).resolve().parents[2]
RETIMED = ROOT / "benchmarks" / "scheduler_clocks_retimed.json"


def synthetic_decode(
    rng: random.Random, requests: int, gamma: int, new_tokens: int
) -> list[dict[str, Any]]:
    """Rounds of a fixed-gamma decode: each request accepts a random prefix until it has
    ``new_tokens``; finished requests leave the round."""
    produced = [0] * requests
    rounds = []
    while any(p < new_tokens for p in produced):
        active = [r for r in range(requests) if produced[r] < new_tokens]
        accepted = [rng.randint(0, gamma) for _ in active]
        for r, a in zip(active, accepted, strict=True):
            produced[r] += a + 1
        lengths = [gamma] * len(active)
        rounds.append({"l": lengths, "a": accepted, "B": sum(x + 1 for x in lengths)})
    return rounds


def brute_force_best(
    records: dict[int, list[list[dict[str, Any]]]],
    intercept: float,
    slope: float,
    requests: int,
    new_tokens: int,
    measure: str,
) -> int:
    """Argmin over gamma of clock-seconds per token, summed by hand over every round."""
    cost_per_token = {}
    for gamma, decodes in records.items():
        seconds = tokens = 0.0
        for decode in decodes:
            for entry in decode:
                if measure == "full_batch" and len(entry["l"]) < requests:
                    continue
                seconds += intercept + slope * sum(x + 1 for x in entry["l"])
                if measure == "full_batch":
                    tokens += sum(a + 1 for a in entry["a"])
            if measure == "whole":
                tokens += requests * new_tokens
        cost_per_token[gamma] = seconds / tokens
    low = min(cost_per_token.values())
    return min(g for g, c in cost_per_token.items() if c == low)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("measure", ["whole", "full_batch"])
def test_hindsight_best_gamma_is_the_argmin_of_the_retimed_cost(seed: int, measure: str) -> None:
    rng = random.Random(seed)
    requests, new_tokens = 3, 12
    intercept, slope = rng.uniform(0.001, 0.03), rng.uniform(1e-4, 3e-3)
    records = {
        g: [synthetic_decode(rng, requests, g, new_tokens) for _ in range(3)] for g in range(1, 6)
    }
    clock = MeasuredClock(requests, intercept, slope, 0.01)
    timed = {
        g: [
            retime_recorded(d, lambda b: clock.round_seconds("dspark", b, 0), requests, new_tokens)
            for d in decodes
        ]
        for g, decodes in records.items()
    }
    best, rates = hindsight_best_gamma(timed, measure)
    assert best == brute_force_best(records, intercept, slope, requests, new_tokens, measure)
    assert set(rates) == set(records)


def test_a_recorded_round_whose_width_disagrees_with_its_lengths_is_refused() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        retime_recorded([{"l": [2, 3], "a": [0, 1], "B": 4}], lambda b: 1.0, 2, 4)


def test_uniform_gamma_needs_one_length_in_every_round() -> None:
    assert uniform_gamma([[{"l": [7, 7]}, {"l": [7]}], [{"l": [7]}]]) == 7
    assert uniform_gamma([[{"l": [7, 6]}]]) is None


def test_clocks_are_rebuilt_from_their_descriptions() -> None:
    measured = MeasuredClock(4, 0.01, 3e-4, 0.008, {1: -0.002, 2: 0.001})
    roofline = RooflineClock(8, 64.0, 7, 0.2, 0.19)
    for clock in (measured, roofline):
        rebuilt = clock_from_description(clock.describe())
        for tokens in (4, 40, 200):
            assert rebuilt.round_seconds("dspark", tokens, 0) == clock.round_seconds(
                "dspark", tokens, 0
            )


def committed() -> dict[str, Any]:
    return json.loads(RETIMED.read_text())


def test_the_retiming_reproduces_the_committed_ratios_to_the_pilot_gamma() -> None:
    for run in committed()["runs"].values():
        for entry in run["batches"].values():
            for clock in entry["clocks"].values():
                for measure in clock["measures"].values():
                    assert measure["pilot"]["largest_difference_from_committed_ratios"] < 1e-12


def test_knee_64_small_batches_reference_gamma_7_as_algorithm_1_chose_it() -> None:
    """The finding: at knee 64 and B <= 8 Algorithm 1 verified 7 drafts in every round, so on
    full-batch rounds its decode is fixed gamma 7's and the hindsight reference is 7 (ratio 1),
    where the 3 pilot chunks had chosen 5 (B = 4) and 6 (B = 8)."""
    run = committed()["runs"]["benchmarks/scheduler_clocks.json"]
    for batch, pilot in (("4", 5), ("8", 6)):
        clock = run["batches"][batch]["clocks"]["knee 64"]
        assert clock["algorithm1"]["uniform_gamma"] == 7
        full = clock["measures"]["full_batch"]
        assert full["hindsight"]["gamma"] == 7 and full["pilot"]["gamma"] == pilot
        assert full["hindsight"]["ratio"]["median"] == 1.0
    assert run["batches"]["4"]["clocks"]["knee 64"]["algorithm1"]["identical_to_fixed_decode"]


def test_the_renderer_names_every_clock_and_says_not_measured_without_a_wall_clock() -> None:
    result = committed()
    del result["wall_clock"]["by_batch"]["8"]
    text = retimed_section(result, "x.json")
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    labels = {row.split(" | ")[0].lstrip("| ") for row in rows}
    assert {
        WALL_CLOCK,
        CPU_LINE,
        "memory-bound model, knee 16 (modelled)",
        "memory-bound model, knee 64 (modelled)",
    } <= labels
    wall_rows = [row.split(" | ") for row in rows if row.startswith(f"| {WALL_CLOCK} |")]
    header = next(row for row in rows if row.startswith("| clock | measure |")).split(" | ")
    column_8 = header.index("B = 8")
    assert wall_rows and all(NOT_MEASURED in row[column_8] for row in wall_rows)
    assert "(modelled)" not in WALL_CLOCK and "(measured)" not in CPU_LINE


def test_benchmarks_section_is_rendered_from_the_committed_json() -> None:
    begin, end = section_markers(SECTION)
    text = (ROOT / "benchmarks" / "e2e_scheduler_clocks_retimed.md").read_text()
    body = text.split(begin, 1)[1].split(end, 1)[0].strip()
    source = "benchmarks/scheduler_clocks_retimed.json"
    assert body == retimed_section(committed(), source).strip()


def test_docs_table_is_rendered_from_the_committed_json() -> None:
    docs = (ROOT / "docs" / "results" / "e2e_scheduler_clocks.md").read_text()
    assert docs_table(committed()) in docs


def test_a_rounds_file_without_a_batch_size_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rounds = tmp_path / "r.json.gz"
    with gzip.open(rounds, "wt") as handle:
        json.dump({"4": {}}, handle)
    run = tmp_path / "run.json"
    run.write_text(
        json.dumps(
            {"batches": {"8": {}}, "rounds_file": str(rounds), "new_tokens": 4, "margin": 0.05}
        )
    )
    argv = ["--runs", str(run), "--out", str(tmp_path / "o.json")]
    with pytest.raises(SystemExit) as stopped:
        scheduler_clocks_retimed.main([*argv, "--markdown", str(tmp_path / "b.md")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no rounds of batch sizes ['8']" in err[0]
