"""A DSpark drafter of another depth / Markov rank at the shipped parameter budget, trained as
the shipped one (same target, windows, steps and seeds), scored teacher-forced.

    python -m specproof.runners.e2e.sweep --layers L --rank R --d-ff F [--head H] --out DIR

The score is the mean per-slot overlap sum_v min(p, q) with the target on held-out windows, and
from it 1 + sum_k prod_{j <= k} overlap_j, a proxy for tau at T = 1 (a product of per-slot
means, not the mean of products): it ranks the sweep's points, the tables measure tau.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least, loaded
from specproof.e2e.evaluation.agreement import teacher_forced_score
from specproof.e2e.models.dspark import DSparkConfig
from specproof.e2e.models.loading import SHIPPED_DIR, load_dspark, load_target
from specproof.e2e.models.markov_heads import HEADS
from specproof.e2e.models.target import parameter_count
from specproof.e2e.plans import SHIPPED
from specproof.e2e.training.ship import POOL_FILE, train_models

PROG = "python -m specproof.runners.e2e.sweep"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(prog=PROG, description=__doc__)
    parser.add_argument("--layers", type=integer_at_least("--layers", 1), required=True)
    parser.add_argument("--rank", type=integer_at_least("--rank", 1), required=True)
    parser.add_argument("--d-ff", type=integer_at_least("--d-ff", 1), required=True)
    parser.add_argument(
        "--head", choices=HEADS, default="vanilla", help="the sequential head (markov_heads)"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="score the drafter already in --out (its own configuration is recorded; "
        "--layers, --rank, --d-ff and --head must match it)",
    )
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"argument --out: {args.out} is a file, not a folder")
    if not args.score_only:
        try:  # made before the training, so that a path that cannot be a folder costs nothing
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"argument --out: {args.out} cannot be created: {error.strerror or error}")
    torch.set_num_threads(1)
    config = DSparkConfig(
        gamma=SHIPPED.dspark.gamma,
        n_layers=args.layers,
        n_heads=4,
        d_ff=args.d_ff,
        rank=args.rank,
        head=args.head,
    )
    if args.score_only:
        target = loaded(PROG, "--out", lambda: load_target(args.out))
        drafter = loaded(PROG, "--out", lambda: load_dspark(args.out, target))
        if drafter.config.as_dict() != config.as_dict():
            parser.error(
                f"argument --score-only: the drafter in {args.out} is {drafter.config.as_dict()}, "
                f"not the {config.as_dict()} asked for"
            )
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        for name in ("target.safetensors", POOL_FILE):
            shutil.copy(SHIPPED_DIR / name, args.out / name)
        train_models(replace(SHIPPED, dspark=config), args.out, seed=0, stages=["dspark"])
        target = load_target(args.out)
        drafter = load_dspark(args.out, target)
    result = {
        "config": drafter.config.as_dict(),  # what was scored, read from its file
        "parameters": parameter_count(drafter),
        "score": teacher_forced_score(drafter),
    }
    (args.out / "sweep.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
