"""How well a target predicts held-out text: per domain, bits per byte, the entropy of its law
and the probability of its most likely byte (the training report, the end-to-end run and
``python -m specproof.runners.e2e.experiments.held_out`` measure a target with it)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..data.corpora import Corpus, WindowSampler
from ..models.target import Target

WINDOW_BATCHES = 4
"""Batches of held-out windows per domain."""


@torch.no_grad()
def prediction_statistics(
    target: Target, sampler: WindowSampler, batches: int, batch_size: int, window: int
) -> dict[str, float]:
    """On ``batches`` batches of random windows: mean next-byte cross-entropy in bits, mean
    entropy of the target's law in bits, and mean probability of its most likely byte."""
    bits = entropy = top = 0.0
    for _ in range(batches):
        batch = sampler.batch(batch_size, window + 1)
        log_probs = torch.log_softmax(target(batch[:, :-1]).logits.float(), dim=-1)
        bits += float(F.nll_loss(log_probs.flatten(0, 1), batch[:, 1:].reshape(-1)))
        entropy += float(-(log_probs.exp() * log_probs).sum(-1).mean())
        top += float(log_probs.max(-1).values.exp().mean())
    scale = batches * math.log(2)
    return {
        "bits_per_byte": bits / scale,
        "entropy_bits": entropy / scale,
        "top_probability": top / batches,
    }


def held_out_statistics(
    target: Target, corpora: dict[str, Corpus], batch_size: int, window: int, seed: int
) -> dict[str, dict[str, float]]:
    """:func:`prediction_statistics` on each domain's evaluation documents (windows drawn with
    ``seed + 1``)."""
    return {
        domain: prediction_statistics(
            target,
            WindowSampler({domain: corpus.stream("evaluation")}, {domain: 1.0}, seed + 1),
            WINDOW_BATCHES,
            batch_size,
            window,
        )
        for domain, corpus in corpora.items()
    }
