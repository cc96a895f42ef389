"""DSpark, built as the release builds it: a block of embedding(x_0) and mask slots, the
fused target context as extra keys/values in every draft layer, a low-rank Markov head and a
confidence head; and its training loss. It reads the frozen target's embedding and LM head and
keeps its own KV cache across rounds.

DFlash is the same drafter with ``head="none"``: the same parallel backbone, no Markov head and
no confidence head, each slot drawn from its backbone logits alone (so comparing the two
isolates the sequential head's contribution).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .drafting import (
    Proposal,
    Truncation,
    check_fused_layers,
    draw,
    position_weights,
    truncated,
)
from .markov_heads import NO_HEAD, SequentialHead, check_head, make_head
from .target import Block, FrozenTarget, KVCache, Ragged, TargetOutput, apply_rope, init_weights

BLOCK_INPUTS = ("learned", "mask_token")
MARKOV_FACTORS = ("free", "embedding")


@dataclass(frozen=True)
class DSparkConfig:
    gamma: int = 7
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    rank: int = 32
    head: str = "vanilla"
    """The sequential head: "vanilla", "gated", "rnn" (:mod:`.markov_heads`) or "none"
    (DFlash: no Markov head, no confidence head)."""
    block_input: str = "learned"
    """Input of block slots 2..gamma: "learned" (one learned embedding per slot, as the shipped
    weights were trained) or "mask_token" (the frozen target's embedding of ``mask_token``, as
    the release builds the block)."""
    mask_token: int | None = None
    markov_factors: str = "free"
    """W1 [V, r] and W2 [r, V]: "free" (the release's two tables, 2 r V parameters) or
    "embedding" (W1 = E A and W2 = B E^T through the target's frozen embedding E [V, d]:
    2 r d parameters, so rank 256 stays a few percent of a target whose V is large)."""

    def __post_init__(self) -> None:
        check_head(self.head)
        if self.markov_factors not in MARKOV_FACTORS:
            raise ValueError(
                f"unknown Markov factors {self.markov_factors!r}; they are {list(MARKOV_FACTORS)}"
            )
        if self.block_input not in BLOCK_INPUTS:
            raise ValueError(
                f"unknown block input {self.block_input!r}; the inputs are {list(BLOCK_INPUTS)}"
            )
        if (self.block_input == "mask_token") != (self.mask_token is not None):
            raise ValueError('mask_token is given exactly when block_input is "mask_token"')

    @property
    def markov(self) -> bool:
        """Whether the drafter has the Markov and confidence heads (DSpark; not DFlash)."""
        return self.head != NO_HEAD

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DSparkConfig:
        return DSparkConfig(**data)


class ContextLayer(nn.Module):
    """A draft layer whose block slots attend to the fused target context (keys and values
    through the layer's own k/v projections) and, without a causal mask, to each other."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.block = Block(d_model, n_heads, d_ff)

    def context_keys(
        self, fused: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        attn = self.block.attn
        d = fused.shape[-1]
        k = F.linear(fused, attn.qkv.weight[d : 2 * d])
        v = F.linear(fused, attn.qkv.weight[2 * d :])
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
    def __init__(self, cache: KVCache) -> None:
        self.cache = cache


class EmbeddingFactorIn(nn.Module):
    """W1 = E A: a token's rank-r state read through the target's frozen embedding."""

    def __init__(self, target: FrozenTarget, rank: int) -> None:
        super().__init__()
        self.target = [target]  # frozen, not a submodule
        self.project = nn.Linear(target.config.d_model, rank, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.project(self.target[0].embed(tokens).float())


class EmbeddingFactorOut(nn.Module):
    """W2 = B E^T: a rank-r state scored against every token's frozen embedding."""

    def __init__(self, target: FrozenTarget, rank: int) -> None:
        super().__init__()
        self.target = [target]  # frozen, not a submodule
        self.expand = nn.Linear(rank, target.config.d_model, bias=False)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        return F.linear(self.expand(state), self.target[0].embed.weight.float())


class DSparkDrafter(nn.Module):
    """Parallel backbone over the block, low-rank Markov head, confidence head.

    Block slot k (1..gamma) sits at position a + k - 1, where a is the position of the last
    committed token x_0; its input is the target embedding of x_0 at slot 1 and a learned
    mask embedding (one per slot) at the others. The target's fused states of positions < a
    enter only as keys/values of every draft layer. p_k(v) is proportional to
    exp(U_k(v) + W1[x_{k-1}] W2 (v)); the confidence is c_k = sigmoid(w . [h_k ; W1[x_{k-1}]]
    + b), known before x_k is drawn. ``config.head`` "gated" or "rnn" replaces the Markov
    bias and the confidence's token term by those of :mod:`.markov_heads`.
    """

    def __init__(self, target: FrozenTarget, config: DSparkConfig) -> None:
        super().__init__()
        check_fused_layers(target)
        tc = target.config
        self.config = config
        self.gamma = config.gamma
        self.target = [target]  # frozen, not a submodule: its weights are saved separately
        d = tc.d_model
        self.fuse = nn.Linear(len(tc.feature_layers) * d, d, bias=False)
        self.fuse_norm = nn.RMSNorm(d)
        self.layers = nn.ModuleList(
            ContextLayer(d, config.n_heads, config.d_ff) for _ in range(config.n_layers)
        )
        # Registered in this order whatever the options, so the shipped configuration draws
        # the same initial weights as before the options existed.
        self.mask_embedding: nn.Parameter | None = None
        if config.block_input == "learned":
            self.mask_embedding = nn.Parameter(torch.zeros(config.gamma - 1, d))
        elif not 0 <= (config.mask_token or 0) < tc.vocab:
            raise ValueError(f"mask token {config.mask_token} is outside the vocabulary {tc.vocab}")
        self.markov_in: nn.Module | None = None
        self.markov_out: nn.Module | None = None
        self.confidence: nn.Linear | None = None
        if config.markov and config.markov_factors == "free":
            self.markov_in = nn.Embedding(tc.vocab, config.rank)
            self.markov_out = nn.Linear(config.rank, tc.vocab, bias=False)
        elif config.markov:
            self.markov_in = EmbeddingFactorIn(target, config.rank)
            self.markov_out = EmbeddingFactorOut(target, config.rank)
        if config.markov:
            self.confidence = nn.Linear(d + config.rank, 1)
        self.apply(init_weights)
        if self.mask_embedding is not None:
            nn.init.normal_(self.mask_embedding, std=0.02)
        if isinstance(self.markov_out, nn.Linear):
            nn.init.zeros_(self.markov_out.weight)
        elif isinstance(self.markov_out, EmbeddingFactorOut):
            nn.init.zeros_(self.markov_out.expand.weight)
        # Built after the shared initialisation: a vanilla drafter draws the same weights.
        self.sequential_head: SequentialHead | None = make_head(config.head, d, config.rank)

    @property
    def frozen_target(self) -> FrozenTarget:
        return self.target[0]

    def fused(self, features: torch.Tensor) -> torch.Tensor:
        return self.fuse_norm(self.fuse(features))

    def block_inputs(self, first_tokens: torch.Tensor) -> torch.Tensor:
        """[.., gamma, d]: the embedding of x_0 at slot 1, then the slot's learned embedding or
        the target's mask-token embedding (``config.block_input``)."""
        embed = self.frozen_target.embed
        first = embed(first_tokens)
        slots: torch.Tensor
        if self.mask_embedding is not None:
            slots = self.mask_embedding
        else:
            mask = embed.weight[self.config.mask_token]
            slots = mask.expand(self.gamma - 1, mask.shape[-1])
        rest = slots.expand(*first.shape[:-1], *slots.shape)
        return torch.cat((first.unsqueeze(-2), rest), dim=-2)

    def markov_factors(self) -> tuple[nn.Module, nn.Module, nn.Linear]:
        """W1, W2 and the confidence head; a DFlash drafter (``head="none"``) has none."""
        if self.markov_in is None or self.markov_out is None or self.confidence is None:
            raise ValueError("a DFlash drafter (head 'none') has no Markov or confidence head")
        return self.markov_in, self.markov_out, self.confidence

    def parallel_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """U_k through the target's (shared, frozen) LM head."""
        return self.frozen_target.logits_of(hidden)

    def markov_bias(self, previous: torch.Tensor) -> torch.Tensor:
        markov_in, markov_out, _ = self.markov_factors()
        return markov_out(markov_in(previous))

    def confidence_logit(self, hidden: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        markov_in, _, confidence = self.markov_factors()
        return confidence(torch.cat((hidden, markov_in(previous)), dim=-1)).squeeze(-1)

    def backbone(
        self, tokens: torch.Tensor, features: torch.Tensor, anchors: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states [B, A * gamma, d] of the blocks at ``anchors`` [B, A] (x_0 positions,
        >= 1, <= T - gamma) of windows [B, T] with target features [B, T, F]."""
        batch, width = tokens.shape
        gamma = self.gamma
        count = anchors.shape[1]
        target = self.frozen_target
        slot_pos = (anchors[:, :, None] + torch.arange(gamma)).reshape(batch, count * gamma)
        fused = self.fused(features)
        x = self.block_inputs(torch.gather(tokens, 1, anchors)).reshape(batch, count * gamma, -1)
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
        return x

    # -- training: many anchors per window, teacher-forced prefixes
    def training_outputs(
        self, tokens: torch.Tensor, features: torch.Tensor, anchors: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Draft logits [B, A, gamma, V] and confidence logits [B, A, gamma] (None for DFlash)
        of the blocks at ``anchors`` (see :meth:`backbone`), with x_{k-1} the window's own
        token at a + k - 1."""
        batch, count = anchors.shape
        slot_pos = (anchors[:, :, None] + torch.arange(self.gamma)).reshape(batch, -1)
        previous = torch.gather(tokens, 1, slot_pos)
        x = self.backbone(tokens, features, anchors)
        if not self.config.markov:
            return self.parallel_logits(x).reshape(batch, count, self.gamma, -1), None
        markov_in, markov_out, confidence = self.markov_factors()
        head = self.sequential_head
        if head is None:
            logits = self.parallel_logits(x) + self.markov_bias(previous)
            conf = self.confidence_logit(x, previous)
        else:
            block = (batch, count, self.gamma)
            bias, token_state = head.teacher_forced(
                x.reshape(*block, -1), previous.reshape(block), markov_in, markov_out
            )
            logits = self.parallel_logits(x) + bias.reshape(*x.shape[:-1], -1)
            token_state = token_state.reshape(*x.shape[:-1], -1)
            conf = confidence(torch.cat((x, token_state), dim=-1)).squeeze(-1)
        return logits.reshape(batch, count, self.gamma, -1), conf.reshape(batch, count, -1)

    # -- inference
    def start(self, batch: int, capacity: int | None = None) -> DSparkState:
        tc = self.frozen_target.config
        head_dim = tc.d_model // self.config.n_heads
        size = capacity or tc.max_len
        return DSparkState(
            KVCache(self.config.n_layers, batch, size, self.config.n_heads, head_dim)
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
        width = next_tokens.shape[1]
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
        cache.commit(counts)

    @torch.no_grad()
    def propose(
        self,
        state: DSparkState,
        pending: torch.Tensor,
        temperature: float,
        generator: torch.Generator,
        truncation: Truncation | None = None,
    ) -> Proposal:
        """Drafts gamma tokens after ``pending``, each from its law q_k tempered by
        ``temperature`` and restricted by ``truncation`` (the law returned is the one drawn
        from)."""
        cache = state.cache
        gamma = self.gamma
        target = self.frozen_target
        span = int(cache.lengths.max())
        positions = cache.lengths[:, None] + torch.arange(gamma)
        cos, sin = target.rope_cos[positions], target.rope_sin[positions]
        x = self.block_inputs(pending)
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
        scale = 1.0 if temperature == 0 else 1.0 / temperature
        if not self.config.markov:
            # DFlash: every slot's law is its backbone law; drawn slot by slot, in order.
            laws = truncated(torch.softmax(parallel.float() * scale, dim=-1), truncation)
            drawn = [draw(laws[:, k], temperature, generator) for k in range(gamma)]
            return Proposal(torch.stack(drawn, 1), laws, None)
        markov_in, markov_out, confidence = self.markov_factors()
        if self.sequential_head is not None:
            return self._draw_with_head(
                self.sequential_head, x, parallel, pending, temperature, generator, truncation
            )
        # The Markov head and the confidence head's token term depend on x_{k-1} alone: each
        # sequential step is a row lookup in W1, one [r, V] product, a softmax and a draw (a
        # [V, V] table of the products would take 9.7 GB at SmolLM2's V = 49,152).
        d = x.shape[-1]
        weight = confidence.weight[0]
        confidence_hidden = x @ weight[:d] + confidence.bias
        tokens, probs, confidences = [], [], []
        previous = pending
        for k in range(gamma):
            token_state = markov_in(previous)
            confidences.append(confidence_hidden[:, k] + token_state @ weight[d:])
            q = torch.softmax((parallel[:, k] + markov_out(token_state)).float() * scale, dim=-1)
            q = truncated(q, truncation)
            previous = draw(q, temperature, generator)
            tokens.append(previous)
            probs.append(q)
        return Proposal(torch.stack(tokens, 1), torch.stack(probs, 1), torch.stack(confidences, 1))

    def _draw_with_head(
        self,
        head: SequentialHead,
        x: torch.Tensor,
        parallel: torch.Tensor,
        pending: torch.Tensor,
        temperature: float,
        generator: torch.Generator,
        truncation: Truncation | None = None,
    ) -> Proposal:
        """Slot by slot: the head's bias from the tokens drawn so far, then a draw from q_k."""
        markov_in, markov_out, confidence = self.markov_factors()
        d = x.shape[-1]
        weight = confidence.weight[0]
        confidence_hidden = x @ weight[:d] + confidence.bias
        scale = 1.0 if temperature == 0 else 1.0 / temperature
        context = head.begin(x)
        carried: torch.Tensor | None = None
        tokens, probs, confidences = [], [], []
        previous = pending
        for k in range(self.gamma):
            bias, token_state, carried = head.step(
                k, previous, context, carried, markov_in, markov_out
            )
            confidences.append(confidence_hidden[:, k] + token_state @ weight[d:])
            q = torch.softmax((parallel[:, k] + bias).float() * scale, dim=-1)
            q = truncated(q, truncation)
            previous = draw(q, temperature, generator)
            tokens.append(previous)
            probs.append(q)
        return Proposal(torch.stack(tokens, 1), torch.stack(probs, 1), torch.stack(confidences, 1))


def dspark_loss(
    draft_logits: torch.Tensor,
    confidence_logits: torch.Tensor | None,
    target_probs: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The release's 0.1 L_ce + 0.9 L_tv + 1.0 L_conf, each weighted per position by
    :func:`position_weights`.

    ``target_probs`` [.., gamma, V] is the target's law at each slot; L_ce is the
    cross-entropy against it (the expectation of the release's hard-label CE on a target
    sample), L_tv the L1 distance, L_conf the BCE of c_k against c*_k = 1 - TV(p^d_k, p^t_k)
    (detached). Without confidence logits (DFlash) L_conf is left out.
    """
    gamma = draft_logits.shape[-2]
    weights = position_weights(gamma)
    log_q = torch.log_softmax(draft_logits.float(), dim=-1)
    q = log_q.exp()
    ce = -(target_probs * log_q).sum(-1)
    l1 = (q - target_probs).abs().sum(-1)
    acceptance = (1 - 0.5 * l1).detach().clamp(0, 1)

    def weighted(term: torch.Tensor) -> torch.Tensor:
        return (term.reshape(-1, gamma) * weights).sum(-1).mean()

    l_ce, l_tv = weighted(ce), weighted(l1)
    l_conf = torch.zeros(())
    if confidence_logits is not None:
        conf = F.binary_cross_entropy_with_logits(confidence_logits, acceptance, reduction="none")
        l_conf = weighted(conf)
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
