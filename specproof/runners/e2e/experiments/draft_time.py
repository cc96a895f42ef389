"""Drafting time per round of several DSpark drafters on one target, measured side by side:
what a deeper drafter of the sweep costs at batch 1.

    python -m specproof.runners.e2e.experiments.draft_time DIR [DIR ...] [--prompts N] [--repeats N]

Each DIR holds a ``dspark.safetensors`` trained on the shipped target (what
``python -m specproof.runners.e2e.sweep`` writes). Every prompt (held-out code, batch 1,
temperature 1, the full block) is decoded by each drafter in turn, ``--repeats`` times; the figure
is the median over decodes of the mean "draft" phase per round, in milliseconds.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from specproof.commands.command_rules import OneLineParser, loaded
from specproof.e2e.data.corpora import load_corpora, prompts_from
from specproof.e2e.decoding.rounds import Drafter
from specproof.e2e.evaluation.comparisons import Setting, phase_breakdown, speculative_decoder
from specproof.e2e.models.loading import load_dspark, load_target
from specproof.e2e.models.target import Target
from specproof.e2e.plans import FAST_VERIFY, SHIPPED
from specproof.reference.schedulers import FixedGamma


def median_draft_ms(
    target: Target,
    drafters: Mapping[str, Drafter],
    prompts: Sequence[list[int]],
    repeats: int,
    new_tokens: int = SHIPPED.new_tokens,
) -> dict[str, float]:
    """Median over decodes of each drafter's mean drafting milliseconds per round."""
    setting = Setting(new_tokens, FAST_VERIFY)
    decoders = {
        name: speculative_decoder(target, drafter, setting, 1.0, FixedGamma(), 0)
        for name, drafter in drafters.items()
    }
    times: dict[str, list[float]] = {name: [] for name in drafters}
    for _ in range(repeats):
        for index, prompt in enumerate(prompts):
            for name, decode in decoders.items():
                times[name].append(phase_breakdown([decode([prompt], index)])["draft"])
    return {name: float(np.median(values)) for name, values in times.items()}


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.experiments.draft_time",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.prompts < 1 or args.repeats < 1:
        parser.error("--prompts and --repeats must be at least 1")
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"FOLDER {folder}: not a folder")
    first = args.folders[0]
    torch.set_num_threads(1)
    # The target the drafters were trained against: the one in the folders given (each holds
    # a copy; they must agree), never the shipped one.
    target = loaded(parser.prog, f"FOLDER {first}", functools.partial(load_target, first))
    reference = (first / "target.safetensors").read_bytes()
    for folder in args.folders[1:]:
        copy = folder / "target.safetensors"
        if not copy.is_file() or copy.read_bytes() != reference:
            parser.error(f"FOLDER {folder}: its target.safetensors is not {first}'s")
    drafters = {
        str(folder): loaded(parser.prog, "FOLDER", functools.partial(load_dspark, folder, target))
        for folder in args.folders
    }
    prompts = prompts_from(
        load_corpora()["code"].stream("evaluation"), args.prompts, SHIPPED.prompt_length, 1
    )
    result = median_draft_ms(target, drafters, prompts, args.repeats)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
