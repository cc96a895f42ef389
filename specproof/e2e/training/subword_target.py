"""Train the sub-word target, resumably, and write it where the learning curves read it.

Its command: ``python -m specproof.runners.e2e.train_subword_target``
(:mod:`specproof.runners.e2e.train_subword_target`).

Trains :data:`specproof.e2e.plans.SUBWORD`'s target (or the smoke one) for its fixed step count
on the three domains' training streams under the committed tokenizer
(:mod:`specproof.e2e.data.subword`), mixed as the byte-level target's are. Every
``--checkpoint-every`` steps its whole state goes to ``DIR/target-checkpoint.pt``; a rerun
continues from there (:mod:`.resumable`). At the end ``DIR/target.safetensors`` (bf16, as the
shipped target) and ``DIR/training.json`` (the recipe, the tokenizer's hash, steps per second
and the held-out bits per token per domain, of the saved bf16 weights) are written.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from ..data.corpora import DOMAIN_WEIGHTS, WindowSampler
from ..data.subword import TOKENIZER_FILE
from ..evaluation.prediction import prediction_statistics
from ..models.loading import load_target
from ..models.target import Target, parameter_count
from ..models.weight_files import save_weights
from ..plans import SubwordPlan
from .loops import Log, TrainSettings, target_step
from .resumable import load_checkpoint, make_optimizer, save_checkpoint, train_steps

PROG = "python -m specproof.runners.e2e.train_subword_target"
CHECKPOINT_FILE = "target-checkpoint.pt"
HELD_OUT_BATCHES = 4


def train_subword_target(
    plan: SubwordPlan,
    train: dict[str, Any],
    held_out: dict[str, Any],
    out: Path,
    seed: int,
    checkpoint_every: int,
    log: Log = print,
) -> dict[str, Any]:
    """Train (resuming ``out``'s checkpoint), save the target and its report; the report."""
    torch.manual_seed(seed)
    target = Target(plan.target)
    settings = TrainSettings(
        seconds=0.0,
        batch_size=plan.target_batch,
        window=plan.window,
        lr=plan.target_lr,
        warmup_steps=plan.warmup_steps,
        steps=plan.target_steps,
        log_every_seconds=30.0,
    )
    sampler = WindowSampler(train, DOMAIN_WEIGHTS, seed)
    optimizer = make_optimizer(target, settings)
    generators = {"windows": sampler.generator}
    checkpoint = out / CHECKPOINT_FILE
    done = 0
    if checkpoint.is_file():
        done, _ = load_checkpoint(checkpoint, target, optimizer, generators)
        log(f"[target] resumed at step {done} from {checkpoint}")
    step_fn = target_step(target, sampler, settings, unit="token")
    stretches: list[dict[str, float]] = []
    while done < plan.target_steps:
        stop = min(plan.target_steps, done + checkpoint_every)
        stretches.append(
            train_steps("target", target, optimizer, settings, step_fn, done, stop, log)
        )
        save_checkpoint(checkpoint, stop, target, optimizer, generators)
        done = stop
        log(f"[target] checkpoint at step {done}")
    save_weights(target, plan.target.as_dict(), out, "target", torch.bfloat16)
    target = load_target(out)  # measured as decoding will see it: bf16 weights, reloaded
    # prediction_statistics names its unit "byte"; on this target each unit is one token.
    bits = {
        domain: prediction_statistics(
            target,
            WindowSampler({domain: stream}, {domain: 1.0}, seed),
            HELD_OUT_BATCHES,
            plan.target_batch,
            plan.window,
        )["bits_per_byte"]
        for domain, stream in held_out.items()
    }
    seconds = sum(s["seconds"] for s in stretches)
    report = {
        "target": {
            "config": plan.target.as_dict(),
            "parameters": parameter_count(target),
            "steps": plan.target_steps,
            "batch": plan.target_batch,
            "window": plan.window,
            "lr": plan.target_lr,
            "seed": seed,
            "seconds_this_run": seconds,
            "steps_per_second_this_run": (
                sum(s["steps_per_second"] * s["seconds"] for s in stretches) / seconds
                if seconds
                else None
            ),
            "held_out_bits_per_token": bits,
        },
        "tokenizer_sha256": hashlib.sha256(TOKENIZER_FILE.read_bytes()).hexdigest(),
        "settings": {k: v for k, v in asdict(settings).items() if k != "seconds"},
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "command": PROG,
    }
    (out / "training.json").write_text(json.dumps(report, indent=1) + "\n")
    log(f"[target] wrote {out / 'target.safetensors'}: held-out bits/token {bits}")
    return report
