"""DSpark's depth at EAGLE-3's drafting time: drafting milliseconds per round at batch 1 of
DSpark drafters of several depths (the shipped width, d_ff and Markov rank) and of the shipped
EAGLE-3 at gamma = 7, measured side by side on the shipped target; the deepest DSpark whose
drafting time is at most EAGLE-3's is the one the equal-time comparison trains.

    python -m specproof.runners.e2e.experiments.depth_draft_time [--depths 1 2 3 4 5 6] [--prompts
        N]
    [--repeats N] [--out FILE]

Drafting time does not depend on the weights' values, so the DSpark drafters are freshly
initialised (seeded); EAGLE-3 is the shipped one. Every prompt (held-out code, batch 1, T = 1,
the full block of 7) is decoded by each drafter in turn (:func:`.draft_time.median_draft_ms`),
with one torch thread; the system load average is recorded before and after, since the machine
is shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import (
    OneLineParser,
    integer_at_least,
    loaded,
    output_path_problem,
    write_result,
)
from specproof.e2e.data.corpora import load_corpora, prompts_from
from specproof.e2e.decoding.rounds import Drafter
from specproof.e2e.models.dspark import DSparkDrafter
from specproof.e2e.models.loading import SHIPPED_DIR, load_eagle, load_target
from specproof.e2e.models.target import Target, parameter_count
from specproof.e2e.plans import SHIPPED
from specproof.runners.e2e.experiments.draft_time import median_draft_ms

PROG = "python -m specproof.runners.e2e.experiments.depth_draft_time"
EAGLE = "eagle3_gamma7"


def dspark_of_depth(target: Target, depth: int, seed: int = 0) -> DSparkDrafter:
    """A freshly initialised DSpark drafter of the shipped plan with ``depth`` layers."""
    torch.manual_seed(seed + depth)
    return DSparkDrafter(target, replace(SHIPPED.dspark, n_layers=depth)).eval()


def deepest_within(draft_ms: dict[int, float], budget_ms: float) -> int | None:
    """The largest depth whose drafting time is at most ``budget_ms`` (None if none is)."""
    fitting = [depth for depth, ms in draft_ms.items() if ms <= budget_ms]
    return max(fitting) if fitting else None


def depth_table(
    target: Target,
    eagle: Drafter,
    depths: Sequence[int],
    prompts: int,
    repeats: int,
    new_tokens: int = SHIPPED.new_tokens,
) -> dict[str, Any]:
    dsparks = {d: dspark_of_depth(target, d) for d in depths}
    drafters: dict[str, Drafter] = {f"dspark_{d}_layers": dsparks[d] for d in depths}
    drafters[EAGLE] = eagle
    chosen_prompts = prompts_from(
        load_corpora()["code"].stream("evaluation"), prompts, SHIPPED.prompt_length, 1
    )
    load_before = os.getloadavg()
    started = time.perf_counter()
    times = median_draft_ms(target, drafters, chosen_prompts, repeats, new_tokens)
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()
    dspark_ms = {d: times[f"dspark_{d}_layers"] for d in depths}
    chosen = deepest_within(dspark_ms, times[EAGLE])
    assert isinstance(eagle, torch.nn.Module)
    return {
        "draft_ms_per_round": {
            **{
                f"dspark_{d}_layers": {
                    "ms": dspark_ms[d],
                    "ratio_to_eagle": dspark_ms[d] / times[EAGLE],
                    "parameters": parameter_count(dsparks[d]),
                }
                for d in depths
            },
            EAGLE: {"ms": times[EAGLE], "parameters": parameter_count(eagle)},
        },
        "chosen_depth": chosen,
        "dspark_config_except_depth": SHIPPED.dspark.as_dict(),
        "shape": "batch 1, T = 1, gamma = 7, held-out code prompts of "
        f"{SHIPPED.prompt_length} bytes, {new_tokens} new tokens",
        "statistic": "median over decodes of each decode's mean draft-phase ms per round",
        "prompts": prompts,
        "repeats": repeats,
        "threads": torch.get_num_threads(),
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "seconds": seconds,
        "platform": platform.platform(),
        "torch": torch.__version__,
        "command": PROG,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--depths", type=integer_at_least("--depths", 1), nargs="+", default=[1, 2, 3, 4, 5, 6]
    )
    parser.add_argument("--prompts", type=integer_at_least("--prompts", 1), default=12)
    parser.add_argument("--repeats", type=integer_at_least("--repeats", 1), default=3)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    args = parser.parse_args(argv)
    if args.out is not None and (problem := output_path_problem("--out", str(args.out))):
        parser.error(problem)
    torch.set_num_threads(1)
    target = loaded(PROG, "weights", lambda: load_target(SHIPPED_DIR))
    eagle = loaded(PROG, "weights", lambda: load_eagle(SHIPPED_DIR, target))
    result = depth_table(target, eagle, sorted(set(args.depths)), args.prompts, args.repeats)
    print(write_result(result, args.out))
    return result


if __name__ == "__main__":
    main()
