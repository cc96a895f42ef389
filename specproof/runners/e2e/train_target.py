"""Train the target and both drafters, in stages, and write them as bf16 safetensors: the one
training path of the shipped models (fixed steps) and of ``run --from-scratch`` (a time budget).

    python -m specproof.runners.e2e.train_target [--out DIR] [--threads N] [--seed S]
                                          [--stages target pool dspark eagle] [--sequential]
                                                                              (nox -s train-target)

How it works: :mod:`specproof.e2e.training.ship`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import OneLineParser, loaded
from specproof.e2e.models.loading import SHIPPED_DIR, load_target
from specproof.e2e.plans import SHIPPED
from specproof.e2e.training.ship import DRAFTERS, STAGES, merge_report, saved_pool, train_models


def _drafters_in_parallel(
    names: Sequence[str], out: Path, seed: int, drafter_steps: int | None
) -> None:
    """Each drafter in its own child process with one thread; fails if either fails."""
    steps = [] if drafter_steps is None else ["--drafter-steps", str(drafter_steps)]
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specproof.runners.e2e.train_target",
                "--sequential",
                "--threads",
                "1",
                "--out",
                str(out),
                "--seed",
                str(seed),
                "--stages",
                name,
                *steps,
            ]
        )
        for name in names
    ]
    codes = [child.wait() for child in children]
    failed = [n for n, c in zip(names, codes, strict=True) if c != 0]
    if failed:
        raise SystemExit(f"drafter stage(s) {failed} failed; see their output above")


def check_inputs(parser: argparse.ArgumentParser, out: Path, stages: Sequence[str]) -> None:
    """Before any stage runs: ``--out`` is a folder (or can be made one) and holds what the
    stages asked for read from earlier ones (the target, the pool); one line, exit 2."""
    if out.exists() and not out.is_dir():
        parser.error(f"argument --out: {out} is a file, not a folder")
    if "target" not in stages:
        loaded(parser.prog, "--out", lambda: load_target(out))
    if "pool" not in stages and any(s in DRAFTERS for s in stages):
        loaded(parser.prog, "--out", lambda: saved_pool(out))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.train_target",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, default=SHIPPED_DIR)
    parser.add_argument("--threads", type=int, default=2, help="threads of the in-process stages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stages",
        nargs="+",
        choices=STAGES,
        default=list(STAGES),
        help="run only these stages (later stages read what earlier ones wrote to --out)",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="train the drafters one after the other in this process (default: two processes)",
    )
    parser.add_argument(
        "--drafter-steps",
        type=int,
        default=None,
        help=f"training steps of each drafter (default {SHIPPED.drafter_steps}, the shipped ones)",
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.drafter_steps is not None and args.drafter_steps < 1:
        parser.error("--drafter-steps must be at least 1")
    plan = (
        SHIPPED
        if args.drafter_steps is None
        else replace(SHIPPED, drafter_steps=args.drafter_steps)
    )
    check_inputs(parser, args.out, args.stages)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    drafters = [s for s in DRAFTERS if s in args.stages]
    parallel = not args.sequential and len(drafters) > 1
    in_process = [s for s in args.stages if not (parallel and s in drafters)]
    report = train_models(plan, args.out, args.seed, in_process) if in_process else {}
    if parallel:
        _drafters_in_parallel(drafters, args.out, args.seed, args.drafter_steps)
    seconds = round(time.perf_counter() - started)
    report = merge_report(args.out, {"command_seconds": {" ".join(args.stages): seconds}})
    print(f"stages {list(args.stages)} done in {seconds}s; weights in {args.out}")
    return report


if __name__ == "__main__":
    main()
