"""docs/results/optimized_speed.md's benchmark table quotes the committed bench run
(benchmarks/results.json) cell for cell, the cold validation overhead (the headline) beside the warm
one: no speed figure is typed by hand. Nothing here is timed."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def milliseconds(seconds: float) -> str:
    """specproof/runners/kernel_bench.py's format of a median."""
    return f"{seconds * 1e3:,.1f}" if seconds < 10 else f"{seconds * 1e3:,.0f}"


def expected_cells(row: dict) -> list[str]:
    times = row["median_s"]
    ratios = row["ratio_to_default"]
    cells = [row["input"], f"{row['mean_accepted']:.2f}"]
    for name in ("default", "unvalidated", "flashinfer", "vllm", "eager", "loop"):
        cells.append(f"{milliseconds(times[name])} ms" if name in times else "-")
    cells += [
        f"{milliseconds(row['bound_s'])} ms",
        f"{ratios['eager']:.1f}x",
        f"{ratios['loop']:.1f}x",
        f"{times['default'] / row['bound_s']:.1f}x",
        f"{100 * row['cold']['validation_overhead']:+.0f} %",
        f"{100 * row['validation_overhead']:+.0f} %",
    ]
    return cells


def test_page_benchmark_table_is_the_committed_run() -> None:
    report = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    assert not report["quick"]
    page = (ROOT / "docs" / "results" / "optimized_speed.md").read_text()
    section = page.split("## Benchmark (CPU)", 1)[1].split("\n## ", 1)[0]
    quoted = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("probabilities", "logits"):
            quoted[cells[0]] = cells
    head = [
        r
        for r in report["results"]
        if r["sweep"] == "headline" and r["threads"] == 1 and r["acceptance"] == "realistic"
    ]
    assert {r["input"] for r in head} == set(quoted) == {"probabilities", "logits"}
    for row in head:
        assert quoted[row["input"]] == expected_cells(row)
    assert f"{report['copy_bandwidth_bytes_per_s'] / 1e9:.2f} GB/s" in section
    assert report["date"] in section


def test_page_gpu_table_is_the_committed_gpu_run() -> None:
    """docs/results/optimized_speed.md's GPU table quotes benchmarks/gpu.json
    (:func:`specproof.runners.gpu_bench.readme_cells`'s format)."""
    from specproof.runners import gpu_bench

    report = json.loads((ROOT / "benchmarks" / "gpu.json").read_text())
    assert not report["quick"]
    page = (ROOT / "docs" / "results" / "optimized_speed.md").read_text()
    section = page.split("## Benchmark (GPU)", 1)[1].split("\n## ", 1)[0]
    quoted = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith(("| probabilities", "| logits"))
    ]
    head = [r for r in report["results"] if (r["B"], r["k"], r["V"]) == (64, 8, 128_256)]
    head = [r for r in head if r["drafts"] == "realistic"]
    assert quoted == [gpu_bench.readme_cells(r) for r in head]
    assert f"{report['copy_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s" in section


def test_page_validation_cost_table_is_the_committed_run() -> None:
    """docs/results/optimized_speed.md's table of validation's cost at small vocabularies quotes
    benchmarks/validation_cost.json (:func:`specproof.runners.validation_cost.table_cells`'s
    format)."""
    from specproof.runners import validation_cost as bench

    report = json.loads((ROOT / "benchmarks" / "validation_cost.json").read_text())
    page = (ROOT / "docs" / "results" / "optimized_speed.md").read_text()
    section = page.split("## Benchmark (CPU)", 1)[1].split("\n## ", 1)[0]
    vocabularies = {f"{row['V']:,}" for row in report["results"]}
    quoted = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and line[2:].split(" |", 1)[0] in vocabularies
    ]
    names = report["implementations"]
    assert quoted == [bench.table_cells(row, names) for row in report["results"]]
    measured = report["command"].split(" --note")[0]  # the note only describes the machine
    assert report["date"] in section and " ".join(section.split()).count(measured) == 1
