"""What validation adds to chain verification where the call is small: validate=True beside
validate=False at B = 64, k = 8 and V = 128, 256, 32,000 and 128,256, probabilities and logits,
torch backend, one torch thread, realistic drafts (inputs of ``specproof/runners/kernel_bench.py``).

Timed cold and interleaved: each repeat calls every implementation once, in a fresh random order,
each timed call right after an untimed 256 MiB write that evicts the caches
(``specproof/runners/timing.py``). Reported per shape: the median and quartiles of the per-repeat
ratios validate=True / validate=False, and the median milliseconds. At small V the call is a few
milliseconds of small tensor operations, so what validation adds is operations, not bytes.

``--baseline FOLDER`` times another checkout's ``optimized/`` (e.g. ``git worktree add
/tmp/before main``) in the same repeats, loaded beside this one under another package name:
its pair gives the ratio before a change, measured under the same load. Both must emit the
same tokens at every shape (checked before timing).

Writes ``benchmarks/validation_cost.json`` and ``benchmarks/validation_cost.md`` (``--render``
rewrites the section from a JSON file, measuring nothing); prints one line per shape. Not a test:
nothing here asserts a speed."""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from specproof.optimized import chain_verify
from specproof.runners.kernel_bench import make_inputs, ratio_summary
from specproof.runners.timing import Evictor, interleaved_clocks
from specproof.sections import replace_section

ROOT = Path(__file__).resolve().parents[2]

BATCH, DRAFTS = 64, 8
VOCABULARIES = (128, 256, 32_000, 128_256)
TARGET = 0.20
"""The target: validation adds at most 20 % to validate=False."""
SECTION = "validation-cost"

Verify = Callable[..., object]


def load_baseline(folder: Path, name: str = "baseline_optimized") -> Verify:
    """``chain_verify`` of the checkout at ``folder``, its ``optimized/`` imported as the
    package ``name`` (its imports of ``specproof.reference`` resolve here)."""
    init = folder / "optimized" / "__init__.py"
    if not init.is_file():
        sys.exit(f"--baseline: no optimized/__init__.py under {folder}")
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.chain_verify


def checkout(folder: Path) -> str | None:
    """The commit checked out at ``folder`` (with "+ changes" when its tracked files differ),
    or None outside git."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        changed = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{commit} + changes" if changed else commit


def pair_calls(
    verifiers: dict[str, Verify], vocab: int, logits: bool
) -> dict[str, Callable[[], object]]:
    """validate=True and validate=False of each verifier on one set of inputs; the verifiers
    must agree on the tokens."""
    target, draft, tokens = make_inputs(
        BATCH, DRAFTS, vocab, True, logits, torch.device("cpu"), seed=BATCH + DRAFTS
    )
    flags = {"target_is_logits": logits, "draft_is_logits": logits, "backend": "torch"}
    calls: dict[str, Callable[[], object]] = {}
    outputs = []
    for name, verify in verifiers.items():
        for validate in (True, False):

            def call(verify: Verify = verify, validate: bool = validate) -> object:
                return verify(target, draft, tokens, seed=1, validate=validate, **flags)

            calls[f"{name}, validate={validate}"] = call
            outputs.append(call().tokens)  # type: ignore[attr-defined]
    if not all(torch.equal(outputs[0], out) for out in outputs[1:]):
        sys.exit(f"V = {vocab}, logits = {logits}: the implementations' tokens differ")
    return calls


def measure(verifiers: dict[str, Verify], vocabularies: tuple[int, ...], repeats: int) -> list:
    evictor = Evictor(torch.device("cpu"))
    rows = []
    for vocab in vocabularies:
        for logits in (False, True):
            calls = pair_calls(verifiers, vocab, logits)
            clocks = interleaved_clocks(
                calls, torch.device("cpu"), repeats, seed=vocab + logits, evict=evictor
            )
            row: dict = {
                "B": BATCH,
                "k": DRAFTS,
                "V": vocab,
                "input": "logits" if logits else "probabilities",
                "median_ms": {
                    clock: {name: 1e3 * statistics.median(t) for name, t in times.items()}
                    for clock, times in clocks.items()
                },
                "validated_over_unvalidated": {
                    clock: {
                        name: ratio_summary(
                            times[f"{name}, validate=True"], times[f"{name}, validate=False"]
                        )
                        for name in verifiers
                    }
                    for clock, times in clocks.items()
                },
            }
            rows.append(row)
            print(summary_line(row), flush=True)
    return rows


def percent(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.0f} %"


def overhead(ratio: dict) -> str:
    """A ratio summary as an overhead: median (quartiles)."""
    return f"{percent(ratio['median'])} ({percent(ratio['q1'])} to {percent(ratio['q3'])})"


def summary_line(row: dict) -> str:
    parts = []
    for name, ratio in row["validated_over_unvalidated"]["cpu"].items():
        wall = row["validated_over_unvalidated"]["wall"][name]
        unvalidated = row["median_ms"]["cpu"][f"{name}, validate=False"]
        parts.append(
            f"{name}: CPU {overhead(ratio)}, wall {overhead(wall)}, "
            f"{unvalidated:.2f} CPU ms unvalidated"
        )
    return f"V = {row['V']:>7,} {row['input']:13s} " + "; ".join(parts)


def markdown(report: dict) -> str:
    names = list(report["implementations"])
    load = report["other_load"] or "other load not noted"
    lines = [
        "## Validation's cost at small vocabularies (chain verification, torch backend)",
        "",
        f"Written by `{report['command']}` (`benchmarks/validation_cost.json`), run "
        f"{report['date']}: B = {BATCH}, k = {DRAFTS}, realistic drafts, torch backend on the "
        f"CPU, {report['threads']} torch thread, torch {report['torch']}, "
        f"{report['cpu_count']} cores ({load}; load average "
        f"{report['load_average_start'][0]:.1f} at the start, "
        f"{report['load_average_end'][0]:.1f} at the end). Cold, interleaved: each of "
        f"{report['repeats']} repeats calls every implementation once in a fresh random order, "
        "each timed call after an untimed 256 MiB write. Overhead: the median (quartiles) of "
        "the per-repeat ratios validate=True / validate=False, minus 1, on two clocks around "
        "the same calls: the thread's CPU time (the call's own work; preemption by other jobs "
        "left out) and wall time."
        + (
            f" `{names[1]}` is the checkout at `{report['baseline']}` (commit "
            f"{report['baseline_checkout']}), loaded beside this one (commit "
            f"{report['checkout']}) and timed in the same repeats; both emit the same tokens at "
            "every shape."
            if len(names) > 1
            else ""
        ),
        "",
        "| V | input | "
        + " | ".join(
            f"{name}: validate=False, CPU ms | {name}: overhead, CPU | {name}: overhead, wall"
            for name in names
        )
        + " |",
        "|---|---|" + "---|---|---|" * len(names),
    ]
    lines += ["| " + " | ".join(table_cells(row, names)) + " |" for row in report["results"]]
    return "\n".join(lines) + "\n"


def table_cells(row: dict, names: list[str]) -> list[str]:
    """One shape's cells (benchmarks/validation_cost.md's table, and
    docs/results/optimized_speed.md's, which quotes it): V, input, then for each implementation its
    validate=False CPU milliseconds and the overhead on the CPU and wall clocks."""
    cells = [f"{row['V']:,}", row["input"]]
    for name in names:
        cells.append(f"{row['median_ms']['cpu'][f'{name}, validate=False']:,.2f}")
        for clock in ("cpu", "wall"):
            cells.append(overhead(row["validated_over_unvalidated"][clock][name]))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41, help="interleaved repeats per shape")
    parser.add_argument("--vocab", type=int, nargs="+", default=list(VOCABULARIES))
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to time")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "validation_cost.json")
    parser.add_argument("--quick", action="store_true", help="V = 128, 3 repeats; writes nothing")
    parser.add_argument("--render", type=Path, default=None, help="rewrite the section only")
    parser.add_argument("--note", default="", help="what else ran on the machine, for the JSON")
    args = parser.parse_args()
    if args.render is not None:
        replace_section(
            ROOT / "benchmarks" / "validation_cost.md",
            SECTION,
            markdown(json.loads(args.render.read_text())),
        )
        return
    torch.set_num_threads(1)
    verifiers: dict[str, Verify] = {"this checkout": chain_verify}
    if args.baseline is not None:
        verifiers["baseline"] = load_baseline(args.baseline.resolve())
    vocabularies = (128,) if args.quick else tuple(args.vocab)
    repeats = 3 if args.quick else args.repeats
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.UTC)
    results = measure(verifiers, vocabularies, repeats)
    command = shlex.join(["python", "-m", "specproof.runners.validation_cost", *sys.argv[1:]])
    report = {
        "date": started.isoformat(timespec="seconds"),
        "command": command,
        "threads": torch.get_num_threads(),
        "repeats": repeats,
        "shapes": [[BATCH, DRAFTS, vocab] for vocab in vocabularies],
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "other_load": args.note,
        "implementations": list(verifiers),
        "checkout": checkout(ROOT),
        "baseline": None if args.baseline is None else str(args.baseline),
        "baseline_checkout": None if args.baseline is None else checkout(args.baseline),
        "results": results,
    }
    if not args.quick:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        replace_section(ROOT / "benchmarks" / "validation_cost.md", SECTION, markdown(report))


if __name__ == "__main__":
    main()
