"""Learning curves of DSpark, DFlash and EAGLE-3 drafting for SmolLM2-135M-Instruct: tau on
held-out prompts of each domain, at T = 1 and T = 0, against training steps, several seeds,
resumable.

    python -m specproof.runners.e2e.experiments.smollm2_curves --out DIR
        [--plan full|smoke] [--drafters dspark dflash eagle3] [--seeds S ...]
        [--steps N ...] [--prompts N] [--threads N] [--data DIR]          (nox -s train-smollm2)

The target is the float32 folder of :mod:`specproof.models.smollm2` (its laws are the
drafters' targets). Training windows are half the target's own continuations (``--data``, the
shards of ``nox -s smollm2-data``) and half real training text
(:mod:`specproof.e2e.data.smollm2_windows`). Evaluation prompts come from the held-out
``evaluation`` halves: a math problem in the chat template, code and prose as plain text.
Training, checkpoints, measurement, the paired comparisons with Holm's correction, the JSON
and the plot are those of :mod:`.learning_curves`; a rerun with the same arguments continues.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from specproof.commands.command_rules import OneLineParser
from specproof.e2e.data.chat_prompts import chat_encoder, domain_prompts
from specproof.e2e.data.corpora import load_corpora
from specproof.e2e.data.smollm2_windows import real_text_stream, smollm2_windows
from specproof.e2e.models.llama_target import smollm2_target
from specproof.e2e.plans import SMOLLM2_PLANS, SmolLM2Plan
from specproof.e2e.training.self_distillation import distilled_streams
from specproof.models.smollm2 import float_folder

from .learning_curves import CurveData, add_run_arguments, run_arguments, run_curves

PROG = "python -m specproof.runners.e2e.experiments.smollm2_curves"
DEFAULT_DATA = Path("datasets/smollm2_self_distillation")
PROMPT_SEED = 3
TEXT_SEED = 11


def curve_data(plan: SmolLM2Plan, prompts: int, data: Path, tokenizer: Any) -> CurveData:
    """Training windows (continuations and real text) and held-out prompts per domain."""
    encode, encode_chat = chat_encoder(tokenizer)
    corpora = load_corpora()
    text = {
        d: real_text_stream(c, encode, plan.real_text_tokens, TEXT_SEED) for d, c in corpora.items()
    }
    distilled = distilled_streams(data)
    held_out = {
        d: [
            list(p.tokens)
            for p in domain_prompts(c, prompts, PROMPT_SEED, encode, encode_chat, "evaluation")
        ]
        for d, c in corpora.items()
    }
    return CurveData(train=text, prompts=held_out, windows=smollm2_windows(distilled, text))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plan", choices=sorted(SMOLLM2_PLANS), default="full")
    add_run_arguments(parser, threads=2)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    plan = SMOLLM2_PLANS[args.plan]
    seeds, steps, prompts = run_arguments(parser, args, plan)
    if not (args.data / "manifest.json").is_file():
        parser.error(f"argument --data: {args.data} has no manifest.json (nox -s smollm2-data)")
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    folder = float_folder(say=say)
    data = curve_data(plan, prompts, args.data, AutoTokenizer.from_pretrained(folder))
    target = smollm2_target(torch.float32)
    return run_curves(target, data, plan, args.drafters, seeds, steps, args.out, log=say)


if __name__ == "__main__":
    main()
