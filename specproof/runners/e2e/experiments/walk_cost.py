"""What Algorithm 1's walk costs the host per round, beside a fixed gamma's: the part of a
round the scheduler-clock comparison does not charge (its CPU clock is a line fitted to rounds
scheduled by a trivial schedule).

    python -m specproof.runners.e2e.experiments.walk_cost [--out FILE] [--calls N]

Confidences are drawn uniformly in [0.3, 1) for R requests and gamma = 7; SPS is a line of the
shape this machine's profiles have (round time 12 ms + 0.15 ms per verified token). Each
scheduler is called ``--calls`` times per R, alternating, and the median call time is kept.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from specproof.commands.command_rules import OneLineParser, integer_at_least, output_path_problem
from specproof.reference.schedulers import Algorithm1, FixedGamma

REQUESTS = (1, 4, 8, 16)
GAMMA = 7


def walk_costs(calls: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)

    def sps(tokens: int) -> float:
        return 1.0 / (0.012 + 0.00015 * tokens)

    out: dict[str, Any] = {}
    for requests in REQUESTS:
        times: dict[str, list[float]] = {"algorithm1": [], "fixed": []}
        schedulers = {"algorithm1": Algorithm1(), "fixed": FixedGamma()}
        for _ in range(calls):
            rows = rng.uniform(0.3, 1.0, (requests, GAMMA)).tolist()
            for name, schedule in schedulers.items():
                start = time.perf_counter()
                schedule(rows, sps)
                times[name].append(time.perf_counter() - start)
        out[str(requests)] = {
            name: float(np.median(values)) * 1e3 for name, values in times.items()
        }
        print(
            f"R={requests}: Algorithm 1 {out[str(requests)]['algorithm1']:.3f} ms, "
            f"fixed gamma {out[str(requests)]['fixed']:.4f} ms per call"
        )
    return {"milliseconds_per_call": out, "calls": calls, "load": list(os.getloadavg())}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.experiments.walk_cost", description=__doc__
    )
    parser.add_argument("--calls", type=integer_at_least("--calls", 1), default=300)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/walk_cost.json"))
    args = parser.parse_args(argv)
    if problem := output_path_problem("--out", str(args.out)):
        parser.error(problem)
    result = walk_costs(args.calls)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
