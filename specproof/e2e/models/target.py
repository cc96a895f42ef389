"""A small causal byte-level transformer (the target), with a ragged per-request KV cache.

Two forward paths share the weights: :meth:`Target.forward` over whole windows (training,
exact laws in tests) and :meth:`Target.extend` over a ragged batch that appends to a
:class:`KVCache` (prefill and verification). Both return the logits and the hidden states
of the layers listed in ``feature_layers`` (fed to the drafters).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TargetConfig:
    vocab: int = 256
    d_model: int = 192
    n_layers: int = 4
    n_heads: int = 6
    d_ff: int = 768
    max_len: int = 256
    feature_layers: tuple[int, ...] = (0, 1, 3)
    """0-based blocks whose outputs both drafters fuse (spread over the depth, never the
    last, as in the DSpark release)."""

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> TargetConfig:
        return TargetConfig(**{**data, "feature_layers": tuple(data["feature_layers"])})


def rope_tables(head_dim: int, max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables [max_len, head_dim / 2] of rotary position embeddings."""
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate [..., H, Dh] by per-position tables [..., Dh / 2] (broadcast over heads)."""
    first, second = x[..., 0::2], x[..., 1::2]
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    rotated = torch.stack((first * cos - second * sin, first * sin + second * cos), dim=-1)
    return rotated.flatten(-2)


class Ragged(NamedTuple):
    """Valid entries of a padded [R, T] batch: ``rows``/``cols`` index them, ``positions``
    [R, T] holds each slot's absolute position."""

    rows: torch.Tensor
    cols: torch.Tensor
    positions: torch.Tensor

    @staticmethod
    def of(counts: torch.Tensor, starts: torch.Tensor, width: int) -> Ragged:
        columns = torch.arange(width, device=counts.device)
        valid = columns[None, :] < counts[:, None]
        rows, cols = valid.nonzero(as_tuple=True)
        return Ragged(rows, cols, starts[:, None] + columns[None, :])

    def flat_positions(self) -> torch.Tensor:
        return self.positions[self.rows, self.cols]

    def pad(self, flat: torch.Tensor, batch: int, width: int) -> torch.Tensor:
        out = flat.new_zeros((batch, width, *flat.shape[1:]))
        out[self.rows, self.cols] = flat
        return out


def ragged_cached_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    ragged: Ragged,
    keys: torch.Tensor,
    values: torch.Tensor,
    span: int,
) -> torch.Tensor:
    """Flat valid tokens' q [N, H, Dh] and k, v [N, Hkv, Dh]: k and v written into the cache
    (``keys``/``values`` [B, capacity, Hkv, Dh]) at their positions, then causal attention to
    cache entries 0..position (Hkv < H: grouped-query heads); returns [N, H * Dh]."""
    batch, width = ragged.positions.shape
    flat_pos = ragged.flat_positions()
    keys[ragged.rows, flat_pos] = k
    values[ragged.rows, flat_pos] = v
    mask = torch.arange(span)[None, None, :] <= ragged.positions[:, :, None]
    a = F.scaled_dot_product_attention(
        ragged.pad(q, batch, width).transpose(1, 2),
        keys[:, :span].transpose(1, 2),
        values[:, :span].transpose(1, 2),
        attn_mask=mask[:, None],
        enable_gqa=keys.shape[-2] != q.shape[-2],
    )
    return a.transpose(1, 2)[ragged.rows, ragged.cols].flatten(-2)


class KVCache:
    """Per-layer keys and values [R, capacity, H, Dh]; ``lengths[r]`` entries are committed.

    Entries past ``lengths[r]`` are scratch: :meth:`Target.extend` writes there and the caller
    commits a prefix with :meth:`commit`; rolling back is not committing.
    """

    def __init__(
        self,
        layers: int,
        batch: int,
        capacity: int,
        heads: int,
        head_dim: int,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        shape = (layers, batch, capacity, heads, head_dim)
        self.keys = torch.zeros(shape, dtype=dtype)
        self.values = torch.zeros(shape, dtype=dtype)
        self.lengths = torch.zeros(batch, dtype=torch.int64)
        self.capacity = capacity

    def commit(self, counts: torch.Tensor) -> None:
        self.lengths = self.lengths + counts.to(torch.int64)


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        shape = (*x.shape[:-1], self.n_heads, self.head_dim)
        return q.reshape(shape), k.reshape(shape), v.reshape(shape)


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward_full(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """[B, T, d] causal self-attention over whole windows."""
        q, k, v = self.attn.split(self.norm1(x))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.attn.out(a.transpose(1, 2).flatten(-2))
        return x + self.mlp(self.norm2(x))

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
        """x [N, d] flat valid tokens; writes their keys/values into the cache at their
        positions and attends causally to cache entries 0..position."""
        q, k, v = self.attn.split(self.norm1(x))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        x = x + self.attn.out(ragged_cached_attention(q, k, v, ragged, keys, values, span))
        return x + self.mlp(self.norm2(x))


class TargetOutput(NamedTuple):
    """``logits`` [.., V]; ``features`` [.., len(feature_layers) * d] (the listed layers'
    outputs, concatenated)."""

    logits: torch.Tensor
    features: torch.Tensor


class TargetShape(Protocol):
    """The configuration fields the drafters and decoders read."""

    @property
    def vocab(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def n_layers(self) -> int: ...
    @property
    def n_heads(self) -> int: ...
    @property
    def max_len(self) -> int: ...
    @property
    def feature_layers(self) -> tuple[int, ...]: ...


class FrozenTarget(Protocol):
    """What the drafters and decoders use of a target: :class:`Target` here, and
    :class:`specproof.e2e.models.llama_target.LlamaTarget` (SmolLM2-135M)."""

    @property
    def config(self) -> TargetShape: ...
    @property
    def embed(self) -> nn.Embedding: ...
    @property
    def rope_cos(self) -> torch.Tensor: ...
    @property
    def rope_sin(self) -> torch.Tensor: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def logits_of(self, hidden: torch.Tensor) -> torch.Tensor: ...
    def new_cache(self, batch: int, capacity: int | None = None) -> KVCache: ...
    def extend(
        self, tokens: torch.Tensor, counts: torch.Tensor, cache: KVCache
    ) -> TargetOutput: ...
    def eval(self) -> Any: ...
    def parameters(self, recurse: bool = True) -> Any: ...


class Target(nn.Module):
    rope_cos: torch.Tensor
    rope_sin: torch.Tensor

    def __init__(self, config: TargetConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(
            Block(config.d_model, config.n_heads, config.d_ff) for _ in range(config.n_layers)
        )
        self.final_norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)
        cos, sin = rope_tables(config.head_dim, config.max_len)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(init_weights)
        for block in self.blocks:
            assert isinstance(block, Block)
            scale = 0.02 / math.sqrt(2 * config.n_layers)
            nn.init.normal_(block.attn.out.weight, std=scale)
            projection = block.mlp[2]
            assert isinstance(projection, nn.Linear)
            nn.init.normal_(projection.weight, std=scale)

    def logits_of(self, hidden: torch.Tensor) -> torch.Tensor:
        """The LM head (final norm, then projection); shared with the drafters."""
        return self.head(self.final_norm(hidden))

    def forward(self, tokens: torch.Tensor) -> TargetOutput:
        """Whole windows [B, T] (positions 0..T-1)."""
        width = tokens.shape[1]
        cos, sin = self.rope_cos[:width], self.rope_sin[:width]
        x = self.embed(tokens)
        features = []
        for index, block in enumerate(self.blocks):
            assert isinstance(block, Block)
            x = block.forward_full(x, cos, sin)
            if index in self.config.feature_layers:
                features.append(x)
        return TargetOutput(self.logits_of(x), torch.cat(features, dim=-1))

    def new_cache(self, batch: int, capacity: int | None = None) -> KVCache:
        c = self.config
        return KVCache(c.n_layers, batch, capacity or c.max_len, c.n_heads, c.head_dim)

    def extend(self, tokens: torch.Tensor, counts: torch.Tensor, cache: KVCache) -> TargetOutput:
        """Feed ``tokens[r, :counts[r]]`` after request r's committed cache entries.

        Returns padded [R, T, ..] outputs (rows past ``counts`` are zero). The new entries are
        written but not committed: call ``cache.commit`` with how many to keep.
        """
        batch, width = tokens.shape
        ragged = Ragged.of(counts, cache.lengths, width)
        span = int((cache.lengths + counts).max()) if batch else 0
        if span > cache.capacity:
            raise ValueError(f"{span} positions exceed the cache capacity {cache.capacity}")
        flat_pos = ragged.flat_positions()
        cos, sin = self.rope_cos[flat_pos], self.rope_sin[flat_pos]
        x = self.embed(tokens[ragged.rows, ragged.cols])
        features = []
        for index, block in enumerate(self.blocks):
            assert isinstance(block, Block)
            x = block.forward_cached(
                x, ragged, cache.keys[index], cache.values[index], cos, sin, span
            )
            if index in self.config.feature_layers:
                features.append(x)
        logits = self.logits_of(x)
        return TargetOutput(
            ragged.pad(logits, batch, width),
            ragged.pad(torch.cat(features, dim=-1), batch, width),
        )


def init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)


def parameter_count(module: nn.Module | FrozenTarget) -> int:
    return sum(p.numel() for p in module.parameters())
