"""Seconds per training step of the sub-word plan's target and drafters, measured on a few steps
(what ``nox -s train-subword``'s time estimate is extrapolated from).

    python -m specproof.runners.e2e.experiments.step_time [--plan full|smoke] [--steps N]
        [--models target dspark dflash eagle3] [--threads N]

Each model takes one untimed warm-up step, then ``--steps`` timed steps, on random token
windows (a step's cost does not depend on the tokens), through the same step functions and
optimiser as the real training. The drafters run on an untrained target of the plan's shape.
With several ``--models`` each is timed in a fresh process of its own: timed one after
another in one process, a DSpark step measured 15-16 s where a fresh process measured 7 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least
from specproof.e2e.data.corpora import DOMAIN_WEIGHTS, WindowSampler
from specproof.e2e.models.dspark import DSparkDrafter
from specproof.e2e.models.eagle import EagleDrafter
from specproof.e2e.models.target import Target
from specproof.e2e.plans import SUBWORD_PLANS
from specproof.e2e.training.loops import (
    StepFn,
    TrainSettings,
    dspark_step,
    eagle_step,
    freeze,
    target_step,
)
from specproof.e2e.training.resumable import make_optimizer, train_steps

PROG = "python -m specproof.runners.e2e.experiments.step_time"
MODELS = ("target", "dspark", "dflash", "eagle3")
STREAM_TOKENS = 200_000


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plan", choices=sorted(SUBWORD_PLANS), default="full")
    parser.add_argument("--steps", type=integer_at_least("--steps", 1), default=3)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    args = parser.parse_args(argv)
    if len(args.models) > 1:
        return each_in_its_own_process(args.plan, args.steps, args.models, args.threads)
    plan = SUBWORD_PLANS[args.plan]
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    vocab = plan.target.vocab
    streams = {d: rng.integers(2, vocab, STREAM_TOKENS).astype(np.int32) for d in DOMAIN_WEIGHTS}
    sampler = WindowSampler(streams, DOMAIN_WEIGHTS, 0)
    torch.manual_seed(0)
    target = Target(plan.target)
    seconds: dict[str, float] = {}
    for name in args.models:
        module: torch.nn.Module
        if name == "target":
            settings = TrainSettings(0.0, plan.target_batch, plan.window, plan.target_lr, steps=100)
            module = target
            step: StepFn = target_step(target, sampler, settings, "token")
        else:
            freeze(target)
            settings = TrainSettings(
                0.0, plan.drafter_batch, plan.window, plan.drafter_lr, steps=100
            )
            if name == "eagle3":
                eagle = EagleDrafter(target, plan.eagle)
                module, step = eagle, eagle_step(eagle, sampler, settings)
            else:
                config = plan.dspark if name == "dspark" else plan.dflash
                drafter = DSparkDrafter(target, config)
                anchors = torch.Generator().manual_seed(0)
                module = drafter
                step = dspark_step(drafter, sampler, settings, plan.anchors_per_window, anchors)
        optimizer = make_optimizer(module, settings)
        quiet = lambda _: None  # noqa: E731
        train_steps(name, module, optimizer, settings, step, 0, 1, quiet)
        timed = train_steps(name, module, optimizer, settings, step, 1, 1 + args.steps, quiet)
        seconds[name] = timed["seconds"] / args.steps
        print(f"{name}: {seconds[name]:.2f} s per step", flush=True)
    result = {
        "plan": args.plan,
        "seconds_per_step": seconds,
        "timed_steps": args.steps,
        "threads": args.threads,
        "command": PROG,
    }
    print(json.dumps(result, indent=1))
    return result


def each_in_its_own_process(
    plan: str, steps: int, models: Sequence[str], threads: int
) -> dict[str, Any]:
    seconds: dict[str, float] = {}
    for name in models:
        command = [
            sys.executable,
            "-m",
            "specproof.runners.e2e.experiments.step_time",
            "--plan",
            plan,
        ]
        command += ["--steps", str(steps), "--models", name, "--threads", str(threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        text = done.stdout
        seconds[name] = json.loads(text[text.index("{") :])["seconds_per_step"][name]
        print(f"{name}: {seconds[name]:.2f} s per step (own process)", flush=True)
    result = {
        "plan": plan,
        "seconds_per_step": seconds,
        "timed_steps": steps,
        "threads": threads,
        "processes": "one per model",
        "command": PROG,
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
