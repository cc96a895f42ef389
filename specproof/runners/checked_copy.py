"""The checked copy side by side with the torch copy it replaced: chain verification at the
headline shape (B = 64, k = 8, V = 128,256; ``--batch`` another B; probabilities, realistic
drafts, one thread),
validate=True and validate=False, each with the C copy that keeps row sums and minima
(``optimized/torch_backend/fused_gather.py``) and with torch's ``index_select`` plus separate
``sum`` / ``amin`` passes (the code before it, and the fallback without a C compiler).

All four run interleaved in one process, cold (an untimed 256 MiB write before each timed call)
and warm (an untimed call of the same before each), as in ``specproof/runners/kernel_bench.py``;
medians per call and
medians (quartiles) of per-repeat ratios. Writes ``benchmarks/checked_copy.json`` and prints a
table. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from specproof.optimized import chain_verify
from specproof.optimized.torch_backend import fused_gather
from specproof.runners.kernel_bench import HEADLINE, make_inputs, ratio_summary
from specproof.runners.timing import Evictor, interleaved_times

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def torch_copy() -> Iterator[None]:
    """Chain verification as without a C compiler: torch's copy and separate reductions."""
    native = fused_gather.native
    fused_gather.native = lambda: None
    try:
        yield
    finally:
        fused_gather.native = native


def calls(batch: int, n: int, vocab: int) -> dict[str, Callable[[], object]]:
    target, draft, tokens = make_inputs(
        batch, n, vocab, True, False, torch.device("cpu"), seed=batch + n
    )

    def checked(validate: bool) -> Callable[[], object]:
        return lambda: chain_verify(
            target, draft, tokens, seed=1, backend="torch", validate=validate
        )

    def unchecked(validate: bool) -> Callable[[], object]:
        def call() -> object:
            with torch_copy():
                return chain_verify(
                    target, draft, tokens, seed=1, backend="torch", validate=validate
                )

        return call

    return {
        "checked copy, validate=True": checked(True),
        "checked copy, validate=False": checked(False),
        "torch copy, validate=True": unchecked(True),
        "torch copy, validate=False": unchecked(False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--batch", type=int, default=HEADLINE[0], help="B (k and V: headline)")
    parser.add_argument("--quick", action="store_true", help="a small shape, to test the script")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report (default benchmarks/checked_copy.json, or checked_copy_B<B>.json)",
    )
    args = parser.parse_args()
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    name = "checked_copy.json" if args.batch == HEADLINE[0] else f"checked_copy_B{args.batch}.json"
    out = args.out or ROOT / "benchmarks" / name
    if fused_gather.native() is None:
        sys.exit("no C compiler here: nothing to compare")
    torch.set_num_threads(1)
    shape = (8, 4, 4096) if args.quick else (args.batch, *HEADLINE[1:])
    implementations = calls(*shape)
    evictor = Evictor(torch.device("cpu"))
    load_start = os.getloadavg()
    report: dict = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "shape": list(shape),
        "threads": 1,
        "repeats": args.repeats,
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
    }
    for mode in ("cold", "warm"):
        times = interleaved_times(
            implementations,
            torch.device("cpu"),
            args.repeats,
            seed=11,
            evict=evictor if mode == "cold" else None,
        )
        base = times["torch copy, validate=False"]
        report[mode] = {
            "median_s": {name: statistics.median(t) for name, t in times.items()},
            "ratio_to_torch_copy_unvalidated": {
                name: ratio_summary(t, base) for name, t in times.items()
            },
            "validation_overhead": {
                copy: ratio_summary(
                    times[f"{copy} copy, validate=True"], times[f"{copy} copy, validate=False"]
                )
                for copy in ("checked", "torch")
            },
        }
    report["load_average_start"] = load_start
    report["load_average_end"] = os.getloadavg()
    if not args.quick:
        out.write_text(json.dumps(report, indent=2) + "\n")
    for mode in ("cold", "warm"):
        print(f"{mode} (B, k, V = {shape}, 1 thread, {args.repeats} repeats):")
        for name, median in report[mode]["median_s"].items():
            ratio = report[mode]["ratio_to_torch_copy_unvalidated"][name]
            print(
                f"  {name:30s} {median * 1e3:8.2f} ms  x{ratio['median']:.3f} "
                f"({ratio['q1']:.3f} to {ratio['q3']:.3f}) of torch copy, validate=False"
            )
        for copy, summary in report[mode]["validation_overhead"].items():
            print(
                f"  validation overhead, {copy} copy: {100 * (summary['median'] - 1):+.1f} % "
                f"(quartiles {100 * (summary['q1'] - 1):+.1f} to {100 * (summary['q3'] - 1):+.1f})"
            )
    end = report["load_average_end"][0]
    print(f"load average {load_start[0]:.1f} at the start, {end:.1f} at the end")


if __name__ == "__main__":
    main()
