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


class Truncation(NamedTuple):
    """Top-k then top-p on the tempered law, renormalised (transformers' order and rule):
    ``top_k`` 0 and ``top_p`` 1 keep every token."""

    top_k: int = 0
    top_p: float = 1.0


def truncated(probs: torch.Tensor, truncation: Truncation | None) -> torch.Tensor:
    """``probs`` [..., V] restricted to the tokens ``truncation`` keeps, renormalised: top-k
    keeps the tokens at least as likely as the k-th (ties kept), then top-p drops the least
    likely tokens while their total is at most 1 - top_p (the most likely is always kept)."""
    if truncation is None:
        return probs
    top_k, top_p = truncation
    if top_k and top_k < probs.shape[-1]:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = torch.where(probs >= kth, probs, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    if top_p < 1.0:
        # Only the tokens top-k kept can be dropped: sort those (all of them when k is 0).
        width = int((probs > 0).sum(-1).max()) if top_k else probs.shape[-1]
        descending, order = probs.topk(width, dim=-1)
        drop = (descending.flip(-1).cumsum(-1) <= 1 - top_p).flip(-1)
        drop[..., 0] = False
        mask = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, drop)
        probs = probs.masked_fill(mask, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def position_weights(gamma: int) -> torch.Tensor:
    """The release's w_k = exp(-k / 4), k = 1..gamma, normalised to sum 1."""
    weights = torch.exp(-torch.arange(1, gamma + 1, dtype=torch.float32) / 4)
    return weights / weights.sum()


def check_fused_layers(target: FrozenTarget) -> None:
    """The release fuses layers spread over the target's depth, never its last one."""
    layers = target.config.feature_layers
    if not layers or max(layers) >= target.config.n_layers - 1:
        raise ValueError(f"fused layers {layers} must exclude the last of {target.config.n_layers}")
