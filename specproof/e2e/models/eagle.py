"""EAGLE-3, DSpark's baseline, built as the release builds it: one layer over
[norm(embedding); norm(hidden)] fed the same fused target layers, drafting one position per
step on its own hidden states, trained with training-time test; and its loss. It reads the
frozen target's embedding and LM head and keeps its own KV cache across rounds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .drafting import Proposal, check_fused_layers, draw, tempered_probs
from .target import FrozenTarget, KVCache, Ragged, TargetOutput, apply_rope, init_weights


@dataclass(frozen=True)
class EagleConfig:
    gamma: int = 7
    n_heads: int = 4
    d_ff: int = 512
    step_decay: float = 0.8
    """Training-time-test step j is weighted by step_decay ** j."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> EagleConfig:
        return EagleConfig(**data)


class EagleLayer(nn.Module):
    """EAGLE-3's decoder layer: attention reads [norm(embedding) ; norm(hidden)] (2d wide),
    the residual stream is the hidden state."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.embed_norm = nn.RMSNorm(d_model)
        self.hidden_norm = nn.RMSNorm(d_model)
        self.qkv = nn.Linear(2 * d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def split(
        self, embedded: torch.Tensor, hidden: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k (rotated) and v [.., H, Dh]."""
        x = torch.cat((self.embed_norm(embedded), self.hidden_norm(hidden)), dim=-1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        shape = (*x.shape[:-1], self.n_heads, self.head_dim)
        q, k, v = q.reshape(shape), k.reshape(shape), v.reshape(shape)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def finish(self, hidden: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """Residual, output projection and MLP after attention (``attended`` [.., H, Dh])."""
        x = hidden + self.out(attended.flatten(-2))
        return x + self.mlp(self.norm2(x))


class EagleState:
    def __init__(self, cache: KVCache) -> None:
        self.cache = cache
        self.latest: torch.Tensor | None = None


class EagleDrafter(nn.Module):
    """EAGLE-3: the fused target layers (fc without bias) start the hidden state; one layer
    over [norm(embed(x_{t+1})) ; norm(h_t)] gives h for the next position, whose logits come
    from the target's LM head. Drafting feeds its own hidden states back, one position per
    step; training does the same for gamma steps (training-time test)."""

    def __init__(self, target: FrozenTarget, config: EagleConfig) -> None:
        super().__init__()
        check_fused_layers(target)
        tc = target.config
        self.config = config
        self.gamma = config.gamma
        self.target = [target]
        d = tc.d_model
        self.fc = nn.Linear(len(tc.feature_layers) * d, d, bias=False)
        self.layer = EagleLayer(d, config.n_heads, config.d_ff)
        self.apply(init_weights)

    @property
    def frozen_target(self) -> FrozenTarget:
        return self.target[0]

    def training_outputs(self, tokens: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """Logits [gamma, B, T - 1, V] of the training-time test over windows [B, T].

        Step j at column i reads token x_{i+1+j} and the previous step's hidden state at
        column i (step 0: the fused target features of position i), sits at position i + j
        and predicts x_{i+2+j}. Its query attends to step 0's keys at columns <= i and to
        steps 1..j's keys at column i: what drafting step j + 1 after x_{i+1} sees.
        Entries with i + 1 + j > T - 1 read padding (the loss masks them).
        """
        width = tokens.shape[1]
        columns = width - 1
        target = self.frozen_target
        layer = self.layer
        padded = F.pad(tokens, (0, self.gamma))
        hidden = self.fc(features[:, :columns])
        index = torch.arange(columns)
        causal = index[None, :] <= index[:, None]
        diagonal = index[None, :] == index[:, None]
        keys: list[torch.Tensor] = []
        values: list[torch.Tensor] = []
        logits = []
        for step in range(self.gamma):
            cos = target.rope_cos[step : step + columns]
            sin = target.rope_sin[step : step + columns]
            embedded = target.embed(padded[:, 1 + step : 1 + step + columns])
            q, k, v = layer.split(embedded, hidden, cos, sin)
            keys.append(k)
            values.append(v)
            mask = torch.cat((causal, *([diagonal] * step)), dim=1)
            a = F.scaled_dot_product_attention(
                q.transpose(1, 2),
                torch.cat(keys, dim=1).transpose(1, 2),
                torch.cat(values, dim=1).transpose(1, 2),
                attn_mask=mask,
            )
            hidden = layer.finish(hidden, a.transpose(1, 2))
            logits.append(target.logits_of(hidden))
        return torch.stack(logits)

    def start(self, batch: int, capacity: int | None = None) -> EagleState:
        tc = self.frozen_target.config
        size = capacity or tc.max_len
        return EagleState(KVCache(1, batch, size, self.config.n_heads, self.layer.head_dim))

    def _step(
        self,
        cache: KVCache,
        embedded: torch.Tensor,
        hidden: torch.Tensor,
        counts: torch.Tensor,
        starts: torch.Tensor,
    ) -> torch.Tensor:
        """The layer on ragged inputs [R, T, d] at ``starts``, keys/values written into the
        cache, causal attention; returns [R, T, d]."""
        batch, width = hidden.shape[:2]
        ragged = Ragged.of(counts, starts, width)
        positions = ragged.flat_positions()
        target = self.frozen_target
        span = int((starts + counts).max())
        q, k, v = self.layer.split(
            embedded[ragged.rows, ragged.cols],
            hidden[ragged.rows, ragged.cols],
            target.rope_cos[positions],
            target.rope_sin[positions],
        )
        cache.keys[0][ragged.rows, positions] = k
        cache.values[0][ragged.rows, positions] = v
        mask = torch.arange(span)[None, None, :] <= ragged.positions[:, :, None]
        a = F.scaled_dot_product_attention(
            ragged.pad(q, batch, width).transpose(1, 2),
            cache.keys[0][:, :span].transpose(1, 2),
            cache.values[0][:, :span].transpose(1, 2),
            attn_mask=mask[:, None],
        )
        attended = a.transpose(1, 2)[ragged.rows, ragged.cols]
        out = self.layer.finish(hidden[ragged.rows, ragged.cols], attended)
        return ragged.pad(out, batch, width)

    def _single_step(
        self,
        cache: KVCache,
        embedded: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
    ) -> torch.Tensor:
        """One token per request, [R, d] at ``positions`` [R]: the layer with its keys and
        values written into the cache (scratch past the committed lengths); returns [R, d]."""
        target = self.frozen_target
        rows = torch.arange(len(positions))
        q, k, v = self.layer.split(
            embedded, hidden, target.rope_cos[positions], target.rope_sin[positions]
        )
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
        return self.layer.finish(hidden, a[:, :, 0])

    @torch.no_grad()
    def observe(
        self,
        state: EagleState,
        output: TargetOutput,
        next_tokens: torch.Tensor,
        counts: torch.Tensor,
    ) -> None:
        cache = state.cache
        embedded = self.frozen_target.embed(next_tokens)
        out = self._step(cache, embedded, self.fc(output.features), counts, cache.lengths)
        last = out[torch.arange(len(counts)), (counts - 1).clamp(min=0)]
        if state.latest is None:
            state.latest = last
        else:
            state.latest = torch.where((counts > 0)[:, None], last, state.latest)
        cache.commit(counts)

    @torch.no_grad()
    def propose(
        self,
        state: EagleState,
        pending: torch.Tensor,
        temperature: float,
        generator: torch.Generator,
    ) -> Proposal:
        assert state.latest is not None, "observe the prompt before proposing"
        cache = state.cache
        target = self.frozen_target
        hidden = state.latest
        tokens, probs = [], []
        for k in range(self.gamma):
            q = tempered_probs(target.logits_of(hidden), temperature)
            token = draw(q, temperature, generator)
            tokens.append(token)
            probs.append(q)
            if k + 1 < self.gamma:
                hidden = self._single_step(cache, target.embed(token), hidden, cache.lengths + k)
        return Proposal(torch.stack(tokens, 1), torch.stack(probs, 1), None)


def eagle_loss(
    logits: torch.Tensor, target_probs: torch.Tensor, step_decay: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """The release's EAGLE-3 objective: soft cross-entropy against the target's law at every
    training-time-test step j, weighted by step_decay ** j (normalised).

    ``logits`` [gamma, B, T - 1, V] from :meth:`EagleDrafter.training_outputs`;
    ``target_probs`` [B, T, V] the target's law at every position of the window.
    """
    gamma, _, columns, _ = logits.shape
    width = target_probs.shape[1]
    weights = step_decay ** torch.arange(gamma, dtype=torch.float32)
    weights = weights / weights.sum()
    index = torch.arange(columns)
    total = logits.new_zeros(())
    acceptance = []
    for step in range(gamma):
        # Column i of step j reads x_{i+1+j}; the target's law at that position drafts next.
        valid = index + 1 + step <= width - 1
        law = target_probs[:, 1 + step : 1 + step + int(valid.sum())]
        log_q = torch.log_softmax(logits[step][:, valid].float(), dim=-1)
        total = total + weights[step] * -(law * log_q).sum(-1).mean()
        with torch.no_grad():
            acceptance.append(1 - 0.5 * (log_q.exp() - law).abs().sum(-1).mean())
    stats = {
        "ce": float(total.detach()),
        "acceptance_1": float(acceptance[0]),
        "acceptance": float(torch.stack(acceptance).mean()),
    }
    return total, stats
