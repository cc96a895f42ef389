"""Drafters for the small target: DSpark (parallel backbone, Markov head, confidence head) and
an EAGLE-style one-layer autoregressive baseline. Both read the frozen target's embedding and
LM head, and keep their own KV caches across rounds.

Interface used by :mod:`specproof.e2e.decode`: ``start(batch)`` makes per-request state;
``observe(state, output, next_tokens, counts)`` appends positions the target has verified
(``output`` from :meth:`Target.extend`, ``next_tokens[r, i]`` the token after position i);
``propose(state, pending, temperature, generator)`` drafts gamma tokens after ``pending``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .target import (
    Block,
    KVCache,
    Ragged,
    Target,
    TargetOutput,
    apply_rope,
    init_weights,
)


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
    """w_k = exp(-(k - 1) / gamma), k = 1..gamma."""
    return torch.exp(-torch.arange(gamma, dtype=torch.float32) / gamma)


# --------------------------------------------------------------------------- DSpark


@dataclass(frozen=True)
class DSparkConfig:
    gamma: int = 7
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    rank: int = 32

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DSparkConfig:
        return DSparkConfig(**data)


class ContextLayer(nn.Module):
    """A draft layer whose keys/values for context positions come from fused target states."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.block = Block(d_model, n_heads, d_ff)
        self.context_kv = nn.Linear(d_model, 2 * d_model, bias=False)

    def context_keys(
        self, fused: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = self.context_kv(fused).chunk(2, dim=-1)
        attn = self.block.attn
        shape = (*fused.shape[:-1], attn.n_heads, attn.head_dim)
        return apply_rope(k.reshape(shape), cos, sin), v.reshape(shape)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        context_k: torch.Tensor,
        context_v: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """Block slots x [B, S, d] attend to context [B, C, H, Dh] and to the slots, by
        ``mask`` [B, S, C + S]."""
        block = self.block
        q, k, v = block.attn.split(block.norm1(x))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        keys = torch.cat((context_k, k), dim=1).transpose(1, 2)
        values = torch.cat((context_v, v), dim=1).transpose(1, 2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=mask[:, None])
        x = x + block.attn.out(a.transpose(1, 2).flatten(-2))
        return x + block.mlp(block.norm2(x))


class DSparkState:
    def __init__(self, cache: KVCache, d_model: int) -> None:
        self.cache = cache
        self.latest = torch.zeros(cache.lengths.shape[0], d_model)


class DSparkDrafter(nn.Module):
    """Parallel backbone over fused target states, low-rank Markov head, confidence head.

    Block slot k (1..gamma) sits at position a + k - 1, where a is the position of the last
    committed token x_0; slot 1 reads the target embedding of x_0, the others a mask vector.
    p_k(v) is proportional to exp(U_k(v) + W1[x_{k-1}] W2 (v)); the confidence is
    c_k = sigmoid(w . [h_k ; W1[x_{k-1}]] + b), known before x_k is drawn.
    """

    def __init__(self, target: Target, config: DSparkConfig) -> None:
        super().__init__()
        tc = target.config
        self.config = config
        self.gamma = config.gamma
        self.target = [target]  # frozen, not a submodule: its weights are saved separately
        d = tc.d_model
        self.fuse = nn.Linear(len(tc.feature_layers) * d, d)
        self.fuse_norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList(
            ContextLayer(d, config.n_heads, config.d_ff) for _ in range(config.n_layers)
        )
        self.mask_embedding = nn.Parameter(torch.zeros(d))
        self.markov_in = nn.Embedding(tc.vocab, config.rank)
        self.markov_out = nn.Linear(config.rank, tc.vocab, bias=False)
        self.confidence = nn.Linear(d + config.rank, 1)
        self.apply(init_weights)
        nn.init.normal_(self.mask_embedding, std=0.02)
        nn.init.zeros_(self.markov_out.weight)

    @property
    def frozen_target(self) -> Target:
        return self.target[0]

    def fused(self, features: torch.Tensor) -> torch.Tensor:
        return self.fuse_norm(self.fuse(features))

    def block_inputs(self, first_tokens: torch.Tensor, latest: torch.Tensor) -> torch.Tensor:
        """[.., gamma, d]: embedding of x_0 at slot 1, the mask vector at slots 2..gamma, plus
        the fused state of the latest context position (a - 1) at every slot."""
        first = self.frozen_target.embed(first_tokens)
        rest = self.mask_embedding.expand(*first.shape[:-1], self.gamma - 1, first.shape[-1])
        return torch.cat((first.unsqueeze(-2), rest), dim=-2) + latest.unsqueeze(-2)

    def parallel_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """U_k through the target's (shared, frozen) LM head."""
        return self.frozen_target.logits_of(hidden)

    def markov_bias(self, previous: torch.Tensor) -> torch.Tensor:
        return self.markov_out(self.markov_in(previous))

    def confidence_logit(self, hidden: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        return self.confidence(torch.cat((hidden, self.markov_in(previous)), dim=-1)).squeeze(-1)

    # -- training: many anchors per window, teacher-forced prefixes
    def training_outputs(
        self, tokens: torch.Tensor, features: torch.Tensor, anchors: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows [B, T] with target features [B, T, F]; anchors [B, A] (x_0 positions, >= 1,
        <= T - gamma). Returns draft logits [B, A, gamma, V] and confidence logits
        [B, A, gamma], with x_{k-1} the window's own token at position a + k - 1."""
        batch, width = tokens.shape
        gamma = self.gamma
        count = anchors.shape[1]
        target = self.frozen_target
        offsets = torch.arange(gamma)
        slot_pos = (anchors[:, :, None] + offsets).reshape(batch, count * gamma)
        previous = torch.gather(tokens, 1, slot_pos)
        fused = self.fused(features)
        latest = torch.gather(fused, 1, (anchors - 1)[:, :, None].expand(-1, -1, fused.shape[-1]))
        x = self.block_inputs(torch.gather(tokens, 1, anchors), latest)
        x = x.reshape(batch, count * gamma, -1)
        cos, sin = target.rope_cos[slot_pos], target.rope_sin[slot_pos]
        ctx_cos, ctx_sin = target.rope_cos[:width], target.rope_sin[:width]
        slot_anchor = anchors[:, :, None].expand(batch, count, gamma).reshape(batch, -1)
        context_mask = torch.arange(width)[None, None, :] < slot_anchor[:, :, None]
        block_id = torch.arange(count).repeat_interleave(gamma)
        own_block = (block_id[:, None] == block_id[None, :]).expand(batch, -1, -1)
        mask = torch.cat((context_mask, own_block), dim=-1)
        for layer in self.layers:
            assert isinstance(layer, ContextLayer)
            ck, cv = layer.context_keys(fused, ctx_cos[None], ctx_sin[None])
            x = layer(x, cos, sin, ck, cv, mask)
        logits = self.parallel_logits(x) + self.markov_bias(previous)
        conf = self.confidence_logit(x, previous)
        return logits.reshape(batch, count, gamma, -1), conf.reshape(batch, count, gamma)

    # -- inference
    def start(self, batch: int, capacity: int | None = None) -> DSparkState:
        tc = self.frozen_target.config
        head_dim = tc.d_model // self.config.n_heads
        size = capacity or tc.max_len
        return DSparkState(
            KVCache(self.config.n_layers, batch, size, self.config.n_heads, head_dim),
            tc.d_model,
        )

    @torch.no_grad()
    def observe(
        self,
        state: DSparkState,
        output: TargetOutput,
        next_tokens: torch.Tensor,
        counts: torch.Tensor,
    ) -> None:
        cache = state.cache
        batch, width = next_tokens.shape
        ragged = Ragged.of(counts, cache.lengths, width)
        positions = ragged.flat_positions()
        target = self.frozen_target
        cos, sin = target.rope_cos[positions], target.rope_sin[positions]
        fused = self.fused(output.features[ragged.rows, ragged.cols])
        for index, layer in enumerate(self.layers):
            assert isinstance(layer, ContextLayer)
            k, v = layer.context_keys(fused, cos, sin)
            cache.keys[index][ragged.rows, positions] = k
            cache.values[index][ragged.rows, positions] = v
        last = ragged.pad(fused, batch, width)[torch.arange(batch), (counts - 1).clamp(min=0)]
        state.latest = torch.where((counts > 0)[:, None], last, state.latest)
        cache.commit(counts)

    @torch.no_grad()
    def propose(
        self,
        state: DSparkState,
        pending: torch.Tensor,
        temperature: float,
        generator: torch.Generator,
    ) -> Proposal:
        cache = state.cache
        gamma = self.gamma
        target = self.frozen_target
        span = int(cache.lengths.max())
        positions = cache.lengths[:, None] + torch.arange(gamma)
        cos, sin = target.rope_cos[positions], target.rope_sin[positions]
        x = self.block_inputs(pending, state.latest)
        context_mask = torch.arange(span)[None, None, :] < cache.lengths[:, None, None]
        mask = torch.cat(
            (
                context_mask.expand(-1, gamma, -1),
                torch.ones(len(pending), gamma, gamma, dtype=torch.bool),
            ),
            dim=-1,
        )
        for index, layer in enumerate(self.layers):
            assert isinstance(layer, ContextLayer)
            x = layer(x, cos, sin, cache.keys[index][:, :span], cache.values[index][:, :span], mask)
        parallel = self.parallel_logits(x)
        # The Markov head and the confidence head's token term depend on x_{k-1} alone: as
        # [V, V] and [V] tables, each sequential step is two lookups, a softmax and a draw.
        markov_table = self.markov_out(self.markov_in.weight)
        d = x.shape[-1]
        weight = self.confidence.weight[0]
        confidence_hidden = x @ weight[:d] + self.confidence.bias
        confidence_token = self.markov_in.weight @ weight[d:]
        scale = 1.0 if temperature == 0 else 1.0 / temperature
        tokens, probs, confidences = [], [], []
        previous = pending
        for k in range(gamma):
            confidences.append(confidence_hidden[:, k] + confidence_token[previous])
            q = torch.softmax((parallel[:, k] + markov_table[previous]).float() * scale, dim=-1)
            previous = draw(q, temperature, generator)
            tokens.append(previous)
            probs.append(q)
        return Proposal(torch.stack(tokens, 1), torch.stack(probs, 1), torch.stack(confidences, 1))


def dspark_loss(
    draft_logits: torch.Tensor,
    confidence_logits: torch.Tensor,
    target_probs: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """0.1 L_ce + 0.9 L_tv + 1.0 L_conf, each weighted per position by exp(-(k - 1)/gamma).

    ``target_probs`` [.., gamma, V] is the target's law at each slot; L_ce is the
    cross-entropy against it (the expectation of the CE of a target sample), L_tv the L1
    distance, L_conf the BCE of c_k against c*_k = 1 - 0.5 ||p^d_k - p^t_k||_1 (detached).
    """
    gamma = draft_logits.shape[-2]
    weights = position_weights(gamma)
    weights = weights / weights.sum()
    log_q = torch.log_softmax(draft_logits.float(), dim=-1)
    q = log_q.exp()
    ce = -(target_probs * log_q).sum(-1)
    l1 = (q - target_probs).abs().sum(-1)
    acceptance = (1 - 0.5 * l1).detach().clamp(0, 1)
    conf = F.binary_cross_entropy_with_logits(confidence_logits, acceptance, reduction="none")

    def weighted(term: torch.Tensor) -> torch.Tensor:
        return (term.reshape(-1, gamma) * weights).sum(-1).mean()

    l_ce, l_tv, l_conf = weighted(ce), weighted(l1), weighted(conf)
    loss = 0.1 * l_ce + 0.9 * l_tv + 1.0 * l_conf
    l_ce, l_tv, l_conf = l_ce.detach(), l_tv.detach(), l_conf.detach()
    per_slot = acceptance.reshape(-1, gamma).mean(0)
    stats = {
        "ce": float(l_ce),
        "tv": float(l_tv),
        "conf": float(l_conf),
        "acceptance_1": float(per_slot[0]),
        "acceptance": float(per_slot.mean()),
    }
    return loss, stats


# --------------------------------------------------------------------------- EAGLE-style


@dataclass(frozen=True)
class EagleConfig:
    gamma: int = 7
    n_heads: int = 4
    d_ff: int = 512
    feature_noise: float = 0.1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> EagleConfig:
        return EagleConfig(**data)


class EagleState:
    def __init__(self, cache: KVCache) -> None:
        self.cache = cache
        self.first_feature: torch.Tensor | None = None


class EagleDrafter(nn.Module):
    """One causal transformer layer over [embed(x_{t+1}) ; f_t] predicting f_{t+1}; tokens
    come from the target's LM head on the predicted feature. Drafting feeds its own features
    back, one position per step."""

    def __init__(self, target: Target, config: EagleConfig) -> None:
        super().__init__()
        tc = target.config
        self.config = config
        self.gamma = config.gamma
        self.target = [target]
        d = tc.d_model
        self.fc = nn.Linear(2 * d, d)
        self.layer = Block(d, config.n_heads, config.d_ff)
        self.apply(init_weights)

    @property
    def frozen_target(self) -> Target:
        return self.target[0]

    def inputs(self, next_tokens: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.cat((self.frozen_target.embed(next_tokens), features), dim=-1))

    def training_outputs(
        self, tokens: torch.Tensor, features: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Predicted features [B, T - 1, d] for positions 1..T-1 and their logits."""
        width = tokens.shape[1] - 1
        target = self.frozen_target
        inputs = features[:, :-1]
        if self.training and self.config.feature_noise > 0:
            inputs = inputs + (torch.rand_like(inputs) - 0.5) * 2 * self.config.feature_noise
        x = self.inputs(tokens[:, 1:], inputs)
        predicted = self.layer.forward_full(x, target.rope_cos[:width], target.rope_sin[:width])
        return predicted, target.logits_of(predicted)

    def start(self, batch: int, capacity: int | None = None) -> EagleState:
        tc = self.frozen_target.config
        head_dim = tc.d_model // self.config.n_heads
        size = capacity or tc.max_len
        return EagleState(KVCache(1, batch, size, self.config.n_heads, head_dim))

    def _step(
        self, cache: KVCache, x: torch.Tensor, counts: torch.Tensor, starts: torch.Tensor
    ) -> torch.Tensor:
        """Run the layer on ragged inputs [R, T, d] at ``starts``; returns [R, T, d]."""
        batch, width = x.shape[:2]
        ragged = Ragged.of(counts, starts, width)
        positions = ragged.flat_positions()
        target = self.frozen_target
        span = int((starts + counts).max())
        out = self.layer.forward_cached(
            x[ragged.rows, ragged.cols],
            ragged,
            cache.keys[0],
            cache.values[0],
            target.rope_cos[positions],
            target.rope_sin[positions],
            span,
        )
        return ragged.pad(out, batch, width)

    def _single_step(
        self, cache: KVCache, x: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """One token per request, x [R, d] at ``positions`` [R]: the layer with its keys and
        values written into the cache (scratch past the committed lengths); returns [R, d]."""
        block = self.layer
        target = self.frozen_target
        rows = torch.arange(len(positions))
        cos, sin = target.rope_cos[positions], target.rope_sin[positions]
        q, k, v = block.attn.split(block.norm1(x))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        keys, values = cache.keys[0], cache.values[0]
        keys[rows, positions] = k
        values[rows, positions] = v
        span = int(positions.max()) + 1
        mask = torch.arange(span)[None, :] <= positions[:, None]
        a = F.scaled_dot_product_attention(
            q[:, :, None],
            keys[:, :span].transpose(1, 2),
            values[:, :span].transpose(1, 2),
            attn_mask=mask[:, None, None],
        )
        x = x + block.attn.out(a[:, :, 0].flatten(-2))
        return x + block.mlp(block.norm2(x))

    @torch.no_grad()
    def observe(
        self,
        state: EagleState,
        output: TargetOutput,
        next_tokens: torch.Tensor,
        counts: torch.Tensor,
    ) -> None:
        cache = state.cache
        x = self.inputs(next_tokens, output.last_hidden)
        out = self._step(cache, x, counts, cache.lengths)
        last = (counts - 1).clamp(min=0)
        latest = out[torch.arange(len(counts)), last]
        if state.first_feature is None:
            state.first_feature = latest
        else:
            keep = (counts > 0)[:, None]
            state.first_feature = torch.where(keep, latest, state.first_feature)
        cache.commit(counts)

    @torch.no_grad()
    def propose(
        self,
        state: EagleState,
        pending: torch.Tensor,
        temperature: float,
        generator: torch.Generator,
    ) -> Proposal:
        assert state.first_feature is not None, "observe the prompt before proposing"
        cache = state.cache
        target = self.frozen_target
        feature = state.first_feature
        tokens, probs = [], []
        for k in range(self.gamma):
            q = tempered_probs(target.logits_of(feature), temperature)
            token = draw(q, temperature, generator)
            tokens.append(token)
            probs.append(q)
            if k + 1 < self.gamma:
                x = self.inputs(token, feature)
                feature = self._single_step(cache, x, cache.lengths + k)
        return Proposal(torch.stack(tokens, 1), torch.stack(probs, 1), None)


def eagle_loss(
    predicted: torch.Tensor,
    logits: torch.Tensor,
    target_features: torch.Tensor,
    target_probs: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """EAGLE's objective: smooth-L1 feature regression + 0.1 x cross-entropy against the
    target's law at the next position."""
    regression = F.smooth_l1_loss(predicted, target_features)
    ce = -(target_probs * torch.log_softmax(logits.float(), dim=-1)).sum(-1).mean()
    with torch.no_grad():
        q = torch.softmax(logits.float(), dim=-1)
        acceptance = 1 - 0.5 * (q - target_probs).abs().sum(-1).mean()
    stats = {"regression": regression.item(), "ce": ce.item(), "acceptance": float(acceptance)}
    return regression + 0.1 * ce, stats
