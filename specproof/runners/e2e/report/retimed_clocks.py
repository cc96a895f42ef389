"""The results page (benchmarks/e2e_scheduler_clocks_retimed.md) of
``experiments.scheduler_clocks_retimed``: Algorithm 1 against the best fixed gamma on the measured
chunks and against the pilot-chosen one, under each clock named plainly, with the wall-clock ratios
where a wall clock was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specproof.e2e.evaluation.clocks import WALL_CLOCK
from specproof.runners.e2e.report.headline_and_clocks import ratio_cell
from specproof.runners.e2e.report.table import table
from specproof.sections import replace_section

SECTION = "scheduler-clocks-retimed"
NOT_MEASURED = "not measured"
HINDSIGHT = "best fixed gamma on the measured chunks (hindsight)"
PILOT = "fixed gamma chosen on the 3 pilot chunks"
WALL_PILOT = "fixed gamma chosen on the e2e run's pilot chunks (other prompts)"
MEASURE_NAMES = {"whole": "whole decode", "full_batch": "full-batch rounds"}


def cell(entry: dict[str, Any], gamma: int) -> str:
    faster = entry["faster"]
    return f"{ratio_cell(entry)} ({faster['slower']}/{faster['n']}; gamma {gamma})"


def summary_rows(run: dict[str, Any], wall: dict[str, Any], batches: list[str]) -> list[list[str]]:
    rows = []
    for measure, measure_name in MEASURE_NAMES.items():
        rows.append([WALL_CLOCK, measure_name, HINDSIGHT, *(NOT_MEASURED for _ in batches)])
        walled = []
        for batch in batches:
            entry = wall["by_batch"].get(batch)
            walled.append(
                NOT_MEASURED
                if entry is None
                else cell(entry["measures"][measure], entry["pilot_gamma"])
                + f", {entry['chunks']} chunks"
            )
        rows.append([WALL_CLOCK, measure_name, WALL_PILOT, *walled])
    first = run["batches"][batches[0]]
    for clock in first["clocks"]:
        for measure, measure_name in MEASURE_NAMES.items():
            for role, name in (("hindsight", HINDSIGHT), ("pilot", PILOT)):
                cells = []
                for batch in batches:
                    entry = run["batches"][batch]["clocks"][clock]["measures"][measure][role]
                    cells.append(cell(entry["ratio"], entry["gamma"]))
                rows.append([first["clocks"][clock]["label"], measure_name, name, *cells])
    return rows


def gamma_rows(run: dict[str, Any], batches: list[str]) -> list[list[str]]:
    rows = []
    for batch in batches:
        entry = run["batches"][batch]
        uniform = []
        for clock, by_clock in entry["clocks"].items():
            check = by_clock["algorithm1"]
            if check["uniform_gamma"] is None:
                continue
            same = check.get("identical_to_fixed_decode")
            note = "" if same is None else f", identical to the fixed-gamma decode: {same}"
            uniform.append(f"{clock}: {check['uniform_gamma']} in every round{note}")
        rows.append(
            [
                batch,
                ", ".join(map(str, entry["fixed_gammas_decoded"])),
                ", ".join(map(str, entry["fixed_gammas_not_decoded"])) or "-",
                "; ".join(uniform) or "-",
            ]
        )
    return rows


def line_rows(wall: dict[str, Any]) -> list[list[str]]:
    rows = []
    for batch, entry in wall["by_batch"].items():
        intercept, slope = entry["round_against_line"]["line_ms"]
        for domain, by_label in entry["round_against_line"]["domains"].items():
            for label, row in by_label.items():
                rows.append(
                    [
                        batch,
                        f"{intercept:.2f} + {slope:.3f} B",
                        domain,
                        label,
                        f"{row['mean_B']:.1f}",
                        f"{row['round_ms']:.2f}",
                        f"{row['target_pass_ms']:.2f}",
                        f"{row['line_ms']:.2f}",
                        f"{row['measured_over_line']:.3f}",
                    ]
                )
    return rows


def width_rows(run: dict[str, Any], batches: list[str]) -> list[list[str]]:
    rows = []
    for batch in batches:
        for label, widths in run["batches"][batch]["verify_widths"].items():
            if "Algorithm 1 (cpu" in label or "fixed gamma" in label:
                rows.append(
                    [
                        batch,
                        label,
                        f"{widths['rounds_per_decode']:.1f}",
                        f"{widths['mean_B']:.1f}",
                        f"{widths['mean_padded']:.1f}",
                    ]
                )
    return rows


def test_rows(run: dict[str, Any], batches: list[str]) -> list[list[str]]:
    """Per batch size, clock and measure, against the hindsight reference: the sign test
    "faster" (raw and Holm-adjusted) and, on the CPU line, "non-inferior" (raw)."""
    adjusted = run["holm"]["faster_than_hindsight_sign_tests"]["adjusted"]
    rows = []
    for batch in batches:
        for clock, by_clock in run["batches"][batch]["clocks"].items():
            for measure, entry in by_clock["measures"].items():
                ratio = entry["hindsight"]["ratio"]
                faster = ratio["faster"]
                holm = adjusted.get(f"B={batch} {clock} {measure} hindsight")
                non_inferior = ratio.get("non_inferior")
                rows.append(
                    [
                        batch,
                        by_clock["label"],
                        MEASURE_NAMES[measure],
                        f"{faster['slower']}/{faster['n']}",
                        f"{faster['p_value']:.3g}",
                        "- (all tied)" if holm is None else f"{holm:.3g}",
                        "-" if non_inferior is None else f"{non_inferior['p_value']:.3g}",
                    ]
                )
    return rows


def retimed_section(result: dict[str, Any], source: str) -> str:
    wall = result["wall_clock"]
    lines = [
        "## Algorithm 1 against the best fixed gamma on the measured chunks (recorded rounds "
        "re-timed)",
        "",
        f"Generated by `{' '.join([result['command'], *result['argv']])}` (raw numbers in "
        f"`{source}`), {result['seconds']:.1f} s: no decoding; the "
        "recorded rounds of the runs below are charged again under the clocks each run stored.",
        "",
        "The clocks, by what they are:",
        "",
        f"- **{WALL_CLOCK}**: paired wall-clock tokens/s of Algorithm 1 and of the fixed "
        f"gamma its pilot chose, from the e2e run (`{wall['source']}`, 'Schedulers at larger "
        "batches'): other prompts, other chunks and another SPS profile than the runs below. "
        "The scheduler-clock runs timed their decodes but did not store the wall times (their "
        "rounds files hold l, a and B per round), so their own wall clock is "
        f"'{NOT_MEASURED}', and so is the wall clock of a best fixed gamma on measured chunks "
        "(each e2e chunk was decoded at one fixed gamma only).",
        "- **CPU line fitted to measured rounds (modelled)**: a DSpark round costs "
        "intercept + slope * B, the line fitted to the run's SPS profile (whole DSpark rounds "
        "at uniform lengths, timed at the start of each batch size), applied to the recorded "
        "rounds: a model of this CPU, not wall time.",
        "- **memory-bound model, knee K (modelled)**: share * max(1, n / K) target steps per "
        "pass (no GPU measured).",
        "",
        "References: the best fixed gamma on the measured chunks is the gamma whose decodes of "
        "the very chunks Algorithm 1 is judged on have the most tokens per clock-second, pooled "
        "(a hindsight oracle: a reference, not a schedule one could run, and one that tends to "
        "favour the reference); beside it, labelled as such, the fixed gamma the run chose on its "
        "3 pilot (sweep) chunks, as the run reported it. Only the gammas some clock's sweep "
        "chose were decoded on the measured chunks (table after the results); the oracle "
        "chooses among those (the best pooled rate over all of 1..7 could only be higher or "
        "equal). Cells: median per-chunk ratio Algorithm 1 / reference [95 % order-statistic "
        "interval] (chunks on which Algorithm 1 is faster / untied chunks; the reference's "
        "gamma).",
        "",
    ]
    for name, run in result["runs"].items():
        batches = sorted(run["batches"], key=int)
        lines += [
            f"### `{name}` (rounds in `{run['rounds_file']}`)",
            "",
            *table(
                ["clock", "measure", "Algorithm 1 against", *(f"B = {b}" for b in batches)],
                summary_rows(run, wall, batches),
            ),
            "",
            "Fixed gammas decoded on the measured chunks, and where Algorithm 1 verified one "
            "length in every round (its decode is then that fixed-gamma decode):",
            "",
            *table(
                ["B", "decoded", "not decoded", "Algorithm 1 uniform under"],
                gamma_rows(run, batches),
            ),
            "",
            "Against the hindsight reference: exact one-sided sign tests at alpha "
            f"{result['alpha']}; Holm's correction over the family: "
            + run["holm"]["faster_than_hindsight_sign_tests"]["family"]
            + ". Non-inferiority on the CPU line only, as the run tested it:",
            "",
            *table(
                [
                    "B",
                    "clock",
                    "measure",
                    "chunks faster",
                    "p (faster)",
                    "Holm p (faster)",
                    f"p (non-inferior, margin {run['margin']:g})",
                ],
                test_rows(run, batches),
            ),
            "",
            "Verify widths of the recorded rounds (mean per round): B = sum(l + 1) over the "
            "active requests, which the modelled clocks charge, and R * (max l + 1), the width "
            "of a dense block padded to the longest request:",
            "",
            *table(
                ["B (batch)", "decoder", "rounds per decode", "mean B", "mean R * (max l + 1)"],
                width_rows(run, batches),
            ),
            "",
        ]
    lines += [
        "### The wall clock against the CPU line in the e2e run",
        "",
        "Per domain, the e2e run's measured mean round (wall clock) against its own SPS line at "
        "the decoder's mean verify width B (rounds = decode seconds / mean round; mean B = "
        "request-rounds * (mean verified drafts + 1) / rounds), in ms:",
        "",
        *table(
            [
                "B (batch)",
                "line (ms)",
                "domain",
                "decoder",
                "mean B",
                "measured round",
                "of which target pass",
                "line at mean B",
                "measured / line",
            ],
            line_rows(wall),
        ),
    ]
    return "\n".join(lines) + "\n"


def write_section(result: dict[str, Any], source: Path, markdown: Path) -> None:
    replace_section(markdown, SECTION, retimed_section(result, str(source)))


MAIN_RUN = "benchmarks/scheduler_clocks.json"


def docs_table(result: dict[str, Any], run_name: str = MAIN_RUN) -> str:
    """docs/results/e2e_scheduler_clocks.md's table of one run: per clock and measure, Algorithm 1
    over the best fixed gamma on the measured chunks, with the pilot-chosen gamma's ratio beside
    it; the wall clock's row from the e2e run (its pilot-chosen gamma; no hindsight reference
    measured)."""
    run = result["runs"][run_name]
    wall = result["wall_clock"]["by_batch"]
    batches = sorted(run["batches"], key=int)
    rows = []
    for measure, measure_name in MEASURE_NAMES.items():
        cells = []
        for batch in batches:
            entry = wall.get(batch)
            cells.append(
                NOT_MEASURED
                if entry is None
                else f"hindsight {NOT_MEASURED}; e2e run (other prompts), pilot gamma "
                f"{entry['pilot_gamma']}: {ratio_cell(entry['measures'][measure])}"
            )
        rows.append([WALL_CLOCK, measure_name, *cells])
    first = run["batches"][batches[0]]
    for clock in first["clocks"]:
        for measure, measure_name in MEASURE_NAMES.items():
            cells = []
            for batch in batches:
                entry = run["batches"][batch]["clocks"][clock]["measures"][measure]
                best, pilot = entry["hindsight"], entry["pilot"]
                faster = best["ratio"]["faster"]
                cells.append(
                    f"{ratio_cell(best['ratio'])} ({faster['slower']}/{faster['n']}; gamma "
                    f"{best['gamma']}); pilot gamma {pilot['gamma']}: "
                    f"{pilot['ratio']['median']:.2f}"
                )
            rows.append([first["clocks"][clock]["label"], measure_name, *cells])
    return "\n".join(table(["clock", "measure", *(f"B = {b}" for b in batches)], rows))
