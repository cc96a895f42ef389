"""Write SmolLM2-135M-Instruct's own continuations of the domains' prompts, in shards, resumably.

    python -m specproof.runners.e2e.smollm2_data [--out DIR] [--shards N]
        [--sequences-per-shard N] [--new-tokens N] [--temperature T] [--dtype float32|bfloat16]
        [--threads N] [--seed S]                                         (nox -s smollm2-data)

Rerun with the same settings to continue after the last complete shard; other settings in a
folder that has shards are refused. How it works: :mod:`specproof.e2e.training.self_distillation`
(shards and manifest), :mod:`specproof.e2e.data.chat_prompts` (which prompts, chat or plain).
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least
from specproof.e2e.data.chat_prompts import Prompt, chat_encoder, mixed_prompts
from specproof.e2e.data.corpora import DOMAIN_WEIGHTS, load_corpora
from specproof.e2e.models.llama_target import smollm2_target
from specproof.e2e.training.self_distillation import DistillSettings, generate_shards
from specproof.models.smollm2 import float_folder

PROG = "python -m specproof.runners.e2e.smollm2_data"
DEFAULT_OUT = Path("datasets/smollm2_self_distillation")
STOP_TOKENS = (0, 2)
"""``<|endoftext|>`` and ``<|im_end|>``: either ends a continuation."""


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--shards", type=integer_at_least("--shards", 1), default=8)
    parser.add_argument(
        "--sequences-per-shard", type=integer_at_least("--sequences-per-shard", 1), default=16
    )
    parser.add_argument("--new-tokens", type=integer_at_least("--new-tokens", 1), default=192)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=2)
    parser.add_argument("--seed", type=integer_at_least("--seed", 0), default=0)
    args = parser.parse_args(argv)
    if args.temperature < 0:
        parser.error("argument --temperature: must be at least 0")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"argument --out: {args.out} is not a folder")
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    folder = float_folder(say=say)
    encode, encode_chat = chat_encoder(AutoTokenizer.from_pretrained(folder))
    corpora = load_corpora()
    domains = tuple(sorted(corpora))
    settings = DistillSettings(
        seed=args.seed,
        sequences_per_shard=args.sequences_per_shard,
        new_tokens=args.new_tokens,
        temperature=args.temperature,
        dtype=args.dtype,
        stop_tokens=STOP_TOKENS,
        domains=domains,
        weights=tuple(DOMAIN_WEIGHTS[d] for d in domains),
    )
    target = smollm2_target(getattr(torch, args.dtype))

    def prompts_of_shard(index: int) -> list[Prompt]:
        seed = args.seed * 1_000_003 + index
        return mixed_prompts(
            corpora, DOMAIN_WEIGHTS, args.sequences_per_shard, seed, encode, encode_chat
        )

    extra = {
        "model": str(folder),
        "command": f"{PROG} " + " ".join(sys.argv[1:] if argv is None else argv),
        "torch": torch.__version__,
        "threads": args.threads,
        "machine": platform.platform(),
    }
    return generate_shards(args.out, target, prompts_of_shard, settings, args.shards, extra, say)


if __name__ == "__main__":
    main()
