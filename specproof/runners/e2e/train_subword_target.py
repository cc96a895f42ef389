"""Train the sub-word target, resumably, and write it where the learning curves read it.

    python -m specproof.runners.e2e.train_subword_target --out DIR [--plan full|smoke]
                                                   [--checkpoint-every N] [--threads N] [--seed S]
                                                                          (nox -s train-subword)

How it works: :mod:`specproof.e2e.training.subword_target`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least
from specproof.e2e.data.corpora import load_corpora
from specproof.e2e.data.subword import SubwordTokenizer
from specproof.e2e.plans import SUBWORD_PLANS
from specproof.e2e.training.subword_target import PROG, train_subword_target


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plan", choices=sorted(SUBWORD_PLANS), default="full")
    parser.add_argument(
        "--checkpoint-every", type=integer_at_least("--checkpoint-every", 1), default=500
    )
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"argument --out: {args.out} is not a folder")
    plan = SUBWORD_PLANS[args.plan]
    torch.set_num_threads(args.threads)
    tokenizer = SubwordTokenizer()
    if tokenizer.vocab_size != plan.target.vocab:
        parser.error(
            f"the tokenizer has {tokenizer.vocab_size} tokens, the plan {plan.target.vocab}"
        )
    corpora = load_corpora()
    train = {d: tokenizer.stream(c, "train") for d, c in corpora.items()}
    held_out = {d: tokenizer.stream(c, "calibration") for d, c in corpora.items()}
    args.out.mkdir(parents=True, exist_ok=True)
    return train_subword_target(plan, train, held_out, args.out, args.seed, args.checkpoint_every)


if __name__ == "__main__":
    main()
