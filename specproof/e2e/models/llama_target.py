"""A pretrained Llama (SmolLM2-135M-Instruct) as the end-to-end target, written in torch.

The same interface as the byte-level :class:`.target.Target`, so the drafters and the decoders
take either: :meth:`LlamaTarget.forward` over whole windows, :meth:`LlamaTarget.extend` over a
ragged batch appending to a :class:`.target.KVCache` (keys and values of the KV heads only),
:meth:`LlamaTarget.logits_of` (final norm and the tied head), ``embed``, rotary tables
``rope_cos``/``rope_sin`` [max_len, head_dim / 2] at the model's theta, and ``config`` with
``d_model``, ``vocab``, ``n_heads``, ``n_layers``, ``max_len`` and ``feature_layers``.

The computation follows transformers' ``LlamaForCausalLM``: RMSNorm in float32 and scaled by
its weight in the model's dtype, rotary embeddings by halves (``rotate_half``) with the
config's theta, grouped-query attention, a SwiGLU MLP. Written here rather than wrapped so
that the ragged cache is the same one the byte-level target fills. ``dtype`` float32 or
bfloat16 sets the weights, the activations and the cache; logits and features come out in
float32 whichever it is, and so does ``embed`` (the drafters stay float32).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from specproof.models.smollm2 import float_folder

from .target import KVCache, Ragged, TargetOutput, ragged_cached_attention

FUSED_LAYER_COUNT = 5
"""The release fuses five target layers (Qwen3-4B/8B: 1, 9, 17, 25, 33 of 36)."""


def spread_layers(n_layers: int, count: int = FUSED_LAYER_COUNT) -> tuple[int, ...]:
    """``count`` 0-based layers evenly from 1 to ``n_layers - 3``, the release's spacing
    (36 layers: 1, 9, 17, 25, 33; SmolLM2's 30: 1, 8, 14, 21, 27); never the last."""
    last = max(1, n_layers - 3)
    if count == 1:
        return (1,)
    picks = [int(1 + (last - 1) * i / (count - 1) + 0.5) for i in range(count)]
    return tuple(sorted(set(picks)))


@dataclass(frozen=True)
class LlamaTargetConfig:
    vocab: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    rope_theta: float
    rms_eps: float
    max_len: int
    feature_layers: tuple[int, ...]
    tied: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_hf(
        hf: dict[str, Any], feature_layers: tuple[int, ...] | None = None, max_len: int = 2048
    ) -> LlamaTargetConfig:
        """From a transformers ``config.json`` (rope theta under ``rope_parameters`` in
        transformers 5, ``rope_theta`` before)."""
        if hf.get("model_type") != "llama":
            raise ValueError(f"not a llama config: model_type {hf.get('model_type')!r}")
        rope = hf.get("rope_parameters") or {}
        if rope.get("rope_type", "default") != "default" or hf.get("rope_scaling"):
            raise ValueError(f"only default rotary embeddings are implemented, got {rope}")
        heads = int(hf["num_attention_heads"])
        d_model = int(hf["hidden_size"])
        n_layers = int(hf["num_hidden_layers"])
        return LlamaTargetConfig(
            vocab=int(hf["vocab_size"]),
            d_model=d_model,
            n_layers=n_layers,
            n_heads=heads,
            n_kv_heads=int(hf.get("num_key_value_heads") or heads),
            head_dim=int(hf.get("head_dim") or d_model // heads),
            d_ff=int(hf["intermediate_size"]),
            rope_theta=float(rope.get("rope_theta", hf.get("rope_theta", 10000.0))),
            rms_eps=float(hf["rms_norm_eps"]),
            max_len=min(max_len, int(hf.get("max_position_embeddings", max_len))),
            feature_layers=feature_layers or spread_layers(n_layers),
            tied=bool(hf.get("tie_word_embeddings", False)),
        )


class RMSNorm(nn.Module):
    """transformers' Llama RMSNorm: normalised in float32, scaled in the input's dtype."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        wide = x.float()
        wide = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * wide.to(x.dtype)


class Float32Embedding(nn.Embedding):
    """The token embedding, returned in float32 whatever the weights' dtype (for drafters)."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return super().forward(tokens).float()


def rotary_tables(head_dim: int, max_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [max_len, head_dim / 2] of the angles position / theta^(2i / head_dim)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv[None, :]
    return angles.cos(), angles.sin()


def rotate_halves(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's rotary embedding of [..., H, Dh]: the first and second halves of each head are
    the pairs; ``cos``/``sin`` [..., Dh / 2] broadcast over heads."""
    cos = cos.unsqueeze(-2).to(x.dtype)
    sin = sin.unsqueeze(-2).to(x.dtype)
    first, second = x.chunk(2, dim=-1)
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaTargetConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        self.head_dim = config.head_dim
        inner = config.n_heads * config.head_dim
        kv = config.n_kv_heads * config.head_dim
        self.q_proj = nn.Linear(config.d_model, inner, bias=False)
        self.k_proj = nn.Linear(config.d_model, kv, bias=False)
        self.v_proj = nn.Linear(config.d_model, kv, bias=False)
        self.o_proj = nn.Linear(inner, config.d_model, bias=False)

    def split(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q [.., H, Dh] and k [.., Hkv, Dh] (rotated), v [.., Hkv, Dh]."""
        lead = x.shape[:-1]
        q = self.q_proj(x).reshape(*lead, self.n_heads, self.head_dim)
        k = self.k_proj(x).reshape(*lead, self.n_kv_heads, self.head_dim)
        v = self.v_proj(x).reshape(*lead, self.n_kv_heads, self.head_dim)
        return rotate_halves(q, cos, sin), rotate_halves(k, cos, sin), v


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaTargetConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.up_proj = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.down_proj = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, config: LlamaTargetConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.d_model, config.rms_eps)
        self.self_attn = LlamaAttention(config)
        self.post_attention_layernorm = RMSNorm(config.d_model, config.rms_eps)
        self.mlp = LlamaMLP(config)

    def forward_full(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """[B, T, d] causal attention over whole windows."""
        q, k, v = self.self_attn.split(self.input_layernorm(x), cos, sin)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            is_causal=True,
            enable_gqa=True,
        )
        x = x + self.self_attn.o_proj(a.transpose(1, 2).flatten(-2))
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_cached(
        self,
        x: torch.Tensor,
        ragged: Ragged,
        keys: torch.Tensor,
        values: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        span: int,
    ) -> torch.Tensor:
        """x [N, d] flat valid tokens: their keys/values written into the cache at their
        positions, causal attention to cache entries 0..position."""
        q, k, v = self.self_attn.split(self.input_layernorm(x), cos, sin)
        attended = ragged_cached_attention(q, k, v, ragged, keys, values, span)
        x = x + self.self_attn.o_proj(attended)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaTarget(nn.Module):
    rope_cos: torch.Tensor
    rope_sin: torch.Tensor

    def __init__(self, config: LlamaTargetConfig, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if not config.feature_layers or max(config.feature_layers) >= config.n_layers - 1:
            raise ValueError(f"feature layers {config.feature_layers} must exclude the last")
        self.config = config
        self.embed = Float32Embedding(config.vocab, config.d_model)
        self.layers = nn.ModuleList(LlamaLayer(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.rms_eps)
        self.lm_head: nn.Linear | None = None
        if not config.tied:
            self.lm_head = nn.Linear(config.d_model, config.vocab, bias=False)
        cos, sin = rotary_tables(config.head_dim, config.max_len, config.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.to(dtype)
        self.rope_cos, self.rope_sin = cos, sin  # tables stay float32
        self.dtype = dtype

    def head_weight(self) -> torch.Tensor:
        return self.embed.weight if self.lm_head is None else self.lm_head.weight

    def logits_of(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final norm and the head (tied to the embedding), in the model's dtype; float32 out.
        Shared with the drafters."""
        normed = self.norm(hidden.to(self.dtype))
        return F.linear(normed, self.head_weight()).float()

    def _layers(
        self, x: torch.Tensor, run: Callable[[int, LlamaLayer, torch.Tensor], torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder stack; the last hidden state and the fused layers' outputs (float32)."""
        features = []
        for index, layer in enumerate(self.layers):
            assert isinstance(layer, LlamaLayer)
            x = run(index, layer, x)
            if index in self.config.feature_layers:
                features.append(x)
        return x, torch.cat(features, dim=-1).float()

    def forward(self, tokens: torch.Tensor) -> TargetOutput:
        """Whole windows [B, T] (positions 0..T-1)."""
        width = tokens.shape[1]
        cos, sin = self.rope_cos[:width], self.rope_sin[:width]
        x = F.embedding(tokens, self.embed.weight)
        x, features = self._layers(x, lambda _, layer, h: layer.forward_full(h, cos, sin))
        return TargetOutput(self.logits_of(x), features)

    def new_cache(self, batch: int, capacity: int | None = None) -> KVCache:
        c = self.config
        size = capacity or c.max_len
        return KVCache(c.n_layers, batch, size, c.n_kv_heads, c.head_dim, self.dtype)

    def extend(self, tokens: torch.Tensor, counts: torch.Tensor, cache: KVCache) -> TargetOutput:
        """Feed ``tokens[r, :counts[r]]`` after request r's committed cache entries.

        Returns padded [R, T, ..] outputs (slots past ``counts`` are zero). The new entries are
        written but not committed: call ``cache.commit`` with how many to keep.
        """
        batch, width = tokens.shape
        ragged = Ragged.of(counts, cache.lengths, width)
        span = int((cache.lengths + counts).max()) if batch else 0
        if span > cache.capacity:
            raise ValueError(f"{span} positions exceed the cache capacity {cache.capacity}")
        flat_pos = ragged.flat_positions()
        cos, sin = self.rope_cos[flat_pos], self.rope_sin[flat_pos]
        x = F.embedding(tokens[ragged.rows, ragged.cols], self.embed.weight)

        def run(index: int, layer: LlamaLayer, h: torch.Tensor) -> torch.Tensor:
            keys, values = cache.keys[index], cache.values[index]
            return layer.forward_cached(h, ragged, keys, values, cos, sin, span)

        x, features = self._layers(x, run)
        return TargetOutput(
            ragged.pad(self.logits_of(x), batch, width), ragged.pad(features, batch, width)
        )


def hf_key(name: str) -> str:
    """The transformers name of a :class:`LlamaTarget` parameter."""
    if name == "embed.weight":
        return "model.embed_tokens.weight"
    if name == "lm_head.weight":
        return name
    return "model." + name


def load_llama_target(
    folder: Path,
    dtype: torch.dtype = torch.float32,
    feature_layers: tuple[int, ...] | None = None,
    max_len: int = 2048,
) -> LlamaTarget:
    """The Llama of a transformers folder (``config.json`` and ``model.safetensors``), frozen
    and in eval mode; ``feature_layers`` default to :func:`spread_layers`."""
    from safetensors.torch import load_file

    hf = json.loads((folder / "config.json").read_text())
    config = LlamaTargetConfig.from_hf(hf, feature_layers, max_len)
    weights = load_file(str(folder / "model.safetensors"))
    model = LlamaTarget(config, dtype)
    state = {name: weights[hf_key(name)] for name in model.state_dict()}
    model.load_state_dict(state, strict=True)
    model.eval().requires_grad_(False)
    return model


def smollm2_target(
    dtype: torch.dtype = torch.float32,
    feature_layers: tuple[int, ...] | None = None,
    max_len: int = 2048,
    cache: Path | None = None,
) -> LlamaTarget:
    """SmolLM2-135M-Instruct from the float folder :func:`specproof.models.smollm2.float_folder`
    makes (fetched once, shared with the engine audits)."""
    return load_llama_target(float_folder(cache), dtype, feature_layers, max_len)
