"""Target continuations of one context with the laws every slot is judged by.

For a context c (its last byte is x_0) and a temperature T, :func:`sample_block` draws n
continuations y_1..y_K of the target at T (argmax at T = 0) and keeps, for each sample and
slot k, the target's law p(. | c, y_<k) at T: the law a draft at slot k is verified against when
drafts 1..k-1 were y_<k. :func:`dspark_block_laws` and :func:`eagle_block_laws` give each
drafter's law at slot k when its earlier drafts were y_<k (teacher-forced), as
:meth:`propose` would compute it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from ..models.drafting import tempered_probs
from ..models.dspark import DSparkDrafter
from ..models.eagle import EagleDrafter, EagleState
from ..models.target import KVCache, Target, TargetOutput


class Block(NamedTuple):
    tokens: torch.Tensor
    """[n, K] the sampled continuation y_1..y_K."""
    laws: torch.Tensor
    """[n, K, V] float32: the target's law at slot k given the context and y_<k."""
    previous: torch.Tensor
    """[n, K] x_{k-1}: the context's last byte at slot 1, y_{k-1} after."""
    context: torch.Tensor
    """[L] the context's bytes."""
    prefill: TargetOutput
    """The target's outputs over the context [1, L, ..] (the drafters read its features)."""


def expanded_cache(cache: KVCache, batch: int) -> KVCache:
    """A copy of a one-request cache for ``batch`` requests."""
    layers, _, capacity, heads, head_dim = cache.keys.shape
    out = KVCache(layers, batch, capacity, heads, head_dim)
    out.keys[:] = cache.keys
    out.values[:] = cache.values
    out.lengths = cache.lengths.expand(batch).clone()
    return out


@torch.no_grad()
def sample_block(
    target: Target,
    context: Sequence[int],
    samples: int,
    slots: int,
    temperature: float,
    generator: torch.Generator,
) -> Block:
    """``samples`` continuations of ``slots`` bytes after ``context`` (at T = 0 all equal)."""
    length = len(context)
    if length < 2:
        raise ValueError("the context needs at least 2 bytes")
    one = target.new_cache(1, length + slots)
    prefill = target.extend(torch.tensor([list(context)]), torch.tensor([length]), one)
    one.commit(torch.tensor([length]))
    cache = expanded_cache(one, samples)
    law = tempered_probs(prefill.logits[0, -1], temperature).expand(samples, -1)
    ones = torch.ones(samples, dtype=torch.int64)
    tokens, laws = [], []
    for k in range(slots):
        laws.append(law)
        if temperature == 0:
            token = law.argmax(dim=-1)
        else:
            token = torch.multinomial(law, 1, generator=generator).squeeze(1)
        tokens.append(token)
        if k + 1 < slots:
            output = target.extend(token[:, None], ones, cache)
            cache.commit(ones)
            law = tempered_probs(output.logits[:, 0], temperature)
    sampled = torch.stack(tokens, dim=1)
    first = torch.full((samples, 1), int(context[-1]), dtype=torch.int64)
    previous = torch.cat((first, sampled[:, :-1]), dim=1)
    return Block(sampled, torch.stack(laws, dim=1), previous, torch.tensor(list(context)), prefill)


@torch.no_grad()
def dspark_block_laws(drafter: DSparkDrafter, block: Block, temperature: float) -> torch.Tensor:
    """[n, K, V] DSpark's law at slot k with x_{k-1} = ``block.previous[:, k]``: the block's
    parallel logits U_k (from the context alone) plus the Markov head's row of x_{k-1}."""
    slots = block.tokens.shape[1]
    if slots > drafter.gamma:
        raise ValueError(f"the drafter has {drafter.gamma} slots, the block {slots}")
    features = block.prefill.features[0]
    length = features.shape[0]
    anchor = length - 1  # x_0's position; the context's features before it are the keys
    width = anchor + drafter.gamma
    tokens = torch.zeros(1, width, dtype=torch.int64)
    tokens[0, anchor] = block.previous[0, 0]
    padded = torch.zeros(1, width, features.shape[1])
    padded[0, :length] = features
    hidden = drafter.backbone(tokens, padded, torch.tensor([[anchor]]))
    parallel = drafter.parallel_logits(hidden)[0, :slots]
    logits = parallel[None] + drafter.markov_bias(block.previous)
    return tempered_probs(logits, temperature)


@torch.no_grad()
def eagle_block_laws(drafter: EagleDrafter, block: Block, temperature: float) -> torch.Tensor:
    """[n, K, V] EAGLE-3's law at step k when its earlier drafts were y_<k: the drafting loop of
    :meth:`EagleDrafter.propose` with the sampled bytes in place of its own draws."""
    samples, slots = block.tokens.shape
    if slots > drafter.gamma:
        raise ValueError(f"the drafter has {drafter.gamma} slots, the block {slots}")
    target = drafter.frozen_target
    logits, features = block.prefill
    length = features.shape[1]
    # As in decoding: the target's outputs at positions 0..L-2 with the bytes after them.
    observed = TargetOutput(logits[:, : length - 1], features[:, : length - 1])
    one: EagleState = drafter.start(1, length + slots)
    drafter.observe(one, observed, block.context[None, 1:], torch.tensor([length - 1]))
    assert one.latest is not None
    cache = expanded_cache(one.cache, samples)
    hidden = one.latest.expand(samples, -1)
    laws = []
    for k in range(slots):
        laws.append(tempered_probs(target.logits_of(hidden), temperature))
        if k + 1 < slots:
            # The drafting step of propose (its cache writes are scratch past the context).
            hidden = drafter._single_step(
                cache, target.embed(block.tokens[:, k]), hidden, cache.lengths + k
            )
    return torch.stack(laws, dim=1)
