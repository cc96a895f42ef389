"""What both drafters share: the proposal they hand the decoder, drawing and tempering a
draft law, the release's position weights and its rule on which target layers are fused.

Interface used by :mod:`specproof.e2e.decoding.rounds`: ``start(batch)`` makes per-request
state; ``observe(state, output, next_tokens, counts)`` appends positions the target has verified
(``output`` from :meth:`Target.extend`, ``next_tokens[r, i]`` the token after position i);
``propose(state, pending, temperature, generator)`` drafts gamma tokens after ``pending``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .target import FrozenTarget


class Proposal(NamedTuple):
    """``tokens`` [R, gamma]; ``probs`` [R, gamma, V] the draft law each token was drawn from
    (float32); ``confidence_logits`` [R, gamma] (DSpark) or None."""

    tokens: torch.Tensor
    probs: torch.Tensor
    confidence_logits: torch.Tensor | None


def draw(probs: torch.Tensor, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """One token per row of [R, V]: argmax at temperature 0, else a draw from ``probs``."""
    if temperature == 0:
        return probs.argmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def tempered_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """float32 softmax(logits / T); at T = 0 the T = 1 law (only its argmax is used)."""
    scale = 1.0 if temperature == 0 else 1.0 / temperature
    return torch.softmax(logits.float() * scale, dim=-1)


def position_weights(gamma: int) -> torch.Tensor:
    """The release's w_k = exp(-k / 4), k = 1..gamma, normalised to sum 1."""
    weights = torch.exp(-torch.arange(1, gamma + 1, dtype=torch.float32) / 4)
    return weights / weights.sum()


def check_fused_layers(target: FrozenTarget) -> None:
    """The release fuses layers spread over the target's depth, never its last one."""
    layers = target.config.feature_layers
    if not layers or max(layers) >= target.config.n_layers - 1:
        raise ValueError(f"fused layers {layers} must exclude the last of {target.config.n_layers}")
