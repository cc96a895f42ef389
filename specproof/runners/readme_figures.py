"""Re-measure every timing README.md and docs/reference/reference_decoder.md quote for the
reference and matrix.

    python -m specproof.runners.readme_figures [--repeats 3] [--budget 20] [--out PATH.json]

Writes the JSON (with the machine, the load average and the commit) and prints the Markdown the
pages quote. Three figures:

- the lossless matrix (``specproof matrix``'s computation, in process), median and range;
- one exact law, V = 4, gamma = 3, N = 4, R = 1 (dense tables, chain rule + Algorithm 1);
- the size table: for each (R, gamma, V), the largest N whose exact law finishes within the
  budget. Each exact law runs in a child process that is killed at the budget, so a size past
  it costs the budget and no more; the last N that finished is re-timed to give a median.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from specproof.runners.reference_sizes import seconds_for

SIZES = [(1, 3, 4), (1, 3, 8), (1, 3, 16), (1, 5, 4), (1, 7, 2), (2, 2, 4), (2, 3, 3), (2, 3, 4)]
MAX_TOKENS = 10


def timed(work: Callable[[], object], repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return seconds


def summary(seconds: list[float]) -> dict[str, float | int]:
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "runs": len(seconds),
    }


def _child(size: tuple[int, int, int, int], queue: multiprocessing.Queue) -> None:
    queue.put(seconds_for(*size))


def seconds_within(size: tuple[int, int, int, int], budget: float) -> float | None:
    """Seconds for one exact law of (V, gamma, N, R), or None if still running at the budget."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=_child, args=(size, queue))
    child.start()
    child.join(budget)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return float(queue.get())


def size_row(requests: int, gamma: int, vocab: int, budget: float, repeats: int) -> dict:
    tokens = 0
    for candidate in range(1, MAX_TOKENS + 1):
        if seconds_within((vocab, gamma, candidate, requests), budget) is None:
            break
        tokens = candidate
    row: dict = {"R": requests, "gamma": gamma, "V": vocab, "largest_N": tokens}
    if tokens:
        row.update(summary([seconds_for(vocab, gamma, tokens, requests) for _ in range(repeats)]))
    return row


def machine() -> dict[str, object]:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(figures: dict) -> str:
    budget = figures["budget_s"]
    lines = [
        f"| R | gamma | V | largest N within {budget:g} s | median seconds at that N (range) |",
        "|---|---|---|---|---|",
    ]
    for row in figures["sizes"]:
        at = (
            f"{row['median_s']:.1f} ({row['min_s']:.1f}-{row['max_s']:.1f})"
            if row["largest_N"]
            else "-"
        )
        lines.append(f"| {row['R']} | {row['gamma']} | {row['V']} | {row['largest_N']} | {at} |")
    return "\n".join(lines)


def _seconds(figure: dict) -> str:
    low, high = figure["min_s"], figure["max_s"]
    return f"{figure['median_s']:.2g} s (median of {figure['runs']}, range {low:.2g}-{high:.2g} s)"


def quoted_timings(figures: dict) -> list[str]:
    """The sentences quoted word for word: the matrix's in README.md, the exact law's in
    docs/reference/reference_decoder.md."""
    return [
        f"The matrix takes {_seconds(figures['matrix'])}",
        f"takes {_seconds(figures['exact_law_v4_g3_n4_r1'])}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per exact law")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/readme_figures.json"))
    args = parser.parse_args()
    if args.repeats < 1 or args.budget <= 0:
        parser.error("--repeats must be >= 1 and --budget > 0")
    args.out.parent.mkdir(parents=True, exist_ok=True)

    from specproof.matrix import compute_matrix

    figures: dict = {"machine": machine(), "commit": commit(), "budget_s": args.budget}
    print("timing the lossless matrix ...", file=sys.stderr, flush=True)
    figures["matrix"] = summary(timed(lambda: compute_matrix(progress=None), args.repeats))
    print("timing one exact law (V=4, gamma=3, N=4, R=1) ...", file=sys.stderr, flush=True)
    figures["exact_law_v4_g3_n4_r1"] = summary(
        [seconds_for(4, 3, 4, 1) for _ in range(max(args.repeats, 5))]
    )
    figures["sizes"] = []
    for requests, gamma, vocab in SIZES:
        print(f"size table: R={requests} gamma={gamma} V={vocab} ...", file=sys.stderr, flush=True)
        figures["sizes"].append(size_row(requests, gamma, vocab, args.budget, args.repeats))
    figures["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps({k: figures[k] for k in ("matrix", "exact_law_v4_g3_n4_r1")}, indent=2))
    print(markdown(figures))
    print("\n".join(quoted_timings(figures)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
