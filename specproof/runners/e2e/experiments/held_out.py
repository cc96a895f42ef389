"""How well a target predicts held-out text: bits per byte, the entropy of its law and the
probability of its most likely byte, per domain.

    python -m specproof.runners.e2e.experiments.held_out [WEIGHTS_DIR]

prints them for the target in ``WEIGHTS_DIR`` (the shipped one by default) on the windows the
training report and the end-to-end run use, so any other target file (an older commit's
``target.safetensors`` in a folder of its own) is measured the same way.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least, loaded
from specproof.e2e.data.corpora import load_corpora
from specproof.e2e.evaluation.prediction import held_out_statistics
from specproof.e2e.models.loading import SHIPPED_DIR, load_target

PROG = "python -m specproof.runners.e2e.experiments.held_out"


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("weights", type=Path, nargs="?", default=SHIPPED_DIR)
    parser.add_argument(
        "--batch", type=integer_at_least("--batch", 1), default=16, help="windows per batch"
    )
    parser.add_argument(
        "--window", type=integer_at_least("--window", 1), default=128, help="bytes per window"
    )
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    target = loaded(PROG, "WEIGHTS_DIR", lambda: load_target(args.weights))
    if args.window + 1 > target.config.max_len:
        parser.error(
            f"argument --window: at most {target.config.max_len - 1} for this target "
            f"(context {target.config.max_len}), got {args.window}"
        )
    statistics = held_out_statistics(target, load_corpora(), args.batch, args.window, args.seed)
    print(json.dumps(statistics, indent=1))
    return statistics


if __name__ == "__main__":
    main()
