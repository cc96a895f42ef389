"""Tiny, deterministic models for the e2e tests' fast checks: a random target with a sharpened
LM head (so its laws are far from uniform) and both drafters distilled from it for a fixed step
count."""

from __future__ import annotations

from typing import NamedTuple

import torch

from specproof.e2e.data.corpora import WindowSampler, prose_documents, split_documents
from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.eagle import EagleConfig, EagleDrafter
from specproof.e2e.models.target import Target, TargetConfig
from specproof.e2e.training.loops import TrainSettings, train_dspark, train_eagle

TOY_TARGET = TargetConfig(
    d_model=32, n_layers=3, n_heads=2, d_ff=64, max_len=48, feature_layers=(0, 1)
)


class ToyModels(NamedTuple):
    target: Target
    dspark: DSparkDrafter
    eagle: EagleDrafter


def toy_models(
    seed: int = 0, gamma: int = 3, head_scale: float = 10.0, drafter_steps: int = 60
) -> ToyModels:
    torch.manual_seed(seed)
    target = Target(TOY_TARGET).eval()
    with torch.no_grad():
        target.head.weight.mul_(head_scale)
    corpus = split_documents("prose", prose_documents())
    sampler = WindowSampler({"prose": corpus.stream("train")}, {"prose": 1.0}, seed)
    settings = TrainSettings(
        seconds=0.0, batch_size=4, window=32, lr=3e-3, warmup_steps=5, min_steps=drafter_steps
    )
    dspark = DSparkDrafter(
        target, DSparkConfig(gamma=gamma, n_layers=1, n_heads=2, d_ff=64, rank=8)
    )
    train_dspark(dspark, sampler, settings, anchors_per_window=6, log=lambda _: None, seed=seed)
    eagle = EagleDrafter(target, EagleConfig(gamma=gamma, n_heads=2, d_ff=64))
    train_eagle(eagle, sampler, settings, log=lambda _: None)
    return ToyModels(target, dspark, eagle)
