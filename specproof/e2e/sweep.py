"""A DSpark drafter of another depth / Markov rank at the shipped parameter budget, trained as
the shipped one (same target, windows, steps and seeds), scored teacher-forced.

    python -m specproof.e2e.sweep --layers L --rank R --d-ff F --out DIR

The score is the mean per-slot overlap sum_v min(p, q) with the target on held-out windows, and
from it 1 + sum_k prod_{j <= k} overlap_j, a proxy for tau at T = 1 (a product of per-slot
means, not the mean of products): it ranks the sweep's points, the tables measure tau.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .agreement import dspark_scores
from .data import WindowSampler, load_corpora
from .drafters import DSparkConfig, DSparkDrafter
from .models import SHIPPED_DIR, load_dspark, load_target
from .plans import SHIPPED
from .ship import POOL_FILE, train_models
from .target import parameter_count


@torch.no_grad()
def teacher_forced_score(
    drafter: DSparkDrafter, windows: int = 16, seed: int = 5
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    target = drafter.frozen_target
    for domain, corpus in load_corpora().items():
        tokens = WindowSampler({domain: corpus.stream("evaluation")}, {domain: 1.0}, seed).batch(
            windows, SHIPPED.window
        )
        result = target(tokens)
        law = torch.softmax(result.logits.float(), dim=-1)
        _, overlap = dspark_scores(drafter, tokens, result, law, 16)
        out[domain] = {
            "overlap": overlap,
            "tau_proxy": float(1 + np.cumprod(overlap).sum()),
        }
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--d-ff", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--score-only", action="store_true", help="score the drafter in --out")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = DSparkConfig(
        gamma=SHIPPED.dspark.gamma, n_layers=args.layers, n_heads=4, d_ff=args.d_ff, rank=args.rank
    )
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.score_only:
        for name in ("target.safetensors", POOL_FILE):
            shutil.copy(SHIPPED_DIR / name, args.out / name)
        train_models(replace(SHIPPED, dspark=config), args.out, seed=0, stages=["dspark"])
    target = load_target(args.out)
    drafter = load_dspark(args.out, target)
    result = {
        "config": config.as_dict(),
        "parameters": parameter_count(drafter),
        "score": teacher_forced_score(drafter),
    }
    (args.out / "sweep.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
