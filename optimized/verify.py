"""Chain verification: the public entry point, backend selection and input checks."""

from __future__ import annotations

import os
from typing import Literal, NamedTuple

import torch

from .validation import InvalidInputError, check_chain_inputs

Backend = Literal["auto", "torch", "triton"]


class ChainResult(NamedTuple):
    """``tokens[b]``: accepted drafts, then the residual or bonus token, then -1 padding
    (shape [B, n + 1]); ``num_accepted[b]``: how many drafts were accepted."""

    tokens: torch.Tensor
    num_accepted: torch.Tensor


def triton_available(device: torch.device) -> bool:
    """Triton kernels run on CUDA tensors, or on CPU tensors under TRITON_INTERPRET=1."""
    if device.type == "cuda":
        return True
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


def resolve_backend(backend: Backend, device: torch.device) -> Literal["torch", "triton"]:
    """``auto`` picks Triton on CUDA tensors and torch elsewhere."""
    if backend == "auto":
        return "triton" if device.type == "cuda" else "torch"
    if backend == "triton":
        if not triton_available(device):
            raise InvalidInputError(
                f"the triton backend needs CUDA tensors, or TRITON_INTERPRET=1 for CPU tensors "
                f"(got a {device.type} tensor)"
            )
        return "triton"
    if backend == "torch":
        return "torch"
    raise InvalidInputError(f"backend must be 'auto', 'torch' or 'triton', got {backend!r}")


def as_row_tensor(
    value: torch.Tensor | float | int | None,
    batch: int,
    default: float | int,
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """A per-request [B] tensor from a scalar, a tensor or None."""
    if value is None:
        return torch.full((batch,), default, dtype=dtype, device=device)
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return value.to(dtype).expand(batch).contiguous()
        return value.to(device=value.device, dtype=dtype).contiguous()
    return torch.full((batch,), value, dtype=dtype, device=device)


def chain_verify(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    *,
    seed: int,
    num_draft_tokens: torch.Tensor | None = None,
    round: int = 0,
    offset: int = 0,
    request_ids: torch.Tensor | None = None,
    target_is_logits: bool = False,
    draft_is_logits: bool = False,
    temperature: torch.Tensor | float | None = None,
    backend: Backend = "auto",
    validate: bool = True,
) -> ChainResult:
    """Verify a batch of drafted chains (chain speculative sampling).

    ``target`` [B, n + 1, V] and ``draft`` [B, n, V] hold probabilities, or logits when
    ``*_is_logits`` (read at ``temperature`` through a per-row log-sum-exp). ``draft=None`` means
    deterministic drafts (n-gram): q is one-hot at the drafted token. Request b verifies its
    first ``num_draft_tokens[b]`` drafts (all n by default). Rows with temperature 0 are greedy.

    Position k (1-based) is accepted when u < p_k(x_k) / q_k(x_k), u the Philox uniform of
    (round, request_ids[b], "accept", k); at the first rejection the token is the inverse CDF of
    norm(max(0, p_k - q_k)) at (.., "residual", k); if all are accepted, of p_{l+1} at
    (.., "bonus", l + 1). This is the reference ``ChainRule`` replayed through ``PhiloxSource``.

    Exactness: the acceptance test is u * q < p in float64, exact for float32 operands; the
    inverse CDF compares float32 cumulative sums with the largest float32 below u * total, also
    exact. So when the probabilities and their partial sums are float32 values (e.g. multiples
    of 2^-20), both backends emit exactly the reference's tokens. With logits, or rows whose
    partial sums round, a token can differ only when a uniform lies within rounding (about
    1e-6 relative) of its exact threshold: the margin rule of the test suite (1e-4) covers it.
    """
    if not isinstance(target, torch.Tensor):
        raise InvalidInputError(f"target must be a torch.Tensor, got {type(target).__name__}")
    if target.dim() != 3:
        raise InvalidInputError(f"target must be [B, n + 1, V], got shape {tuple(target.shape)}")
    batch, positions, _ = target.shape
    device = target.device
    if not 0 <= seed < 1 << 64:
        raise InvalidInputError(f"seed must be in [0, 2^64), got {seed}")
    for name, word in (("round", round), ("offset", offset)):
        if not 0 <= word <= 0xFFFFFFFF:
            raise InvalidInputError(f"{name} must be in [0, 2^32), got {word}")
    lengths = as_row_tensor(num_draft_tokens, batch, positions - 1, torch.int64, device)
    requests = (
        torch.arange(batch, dtype=torch.int64, device=device)
        if request_ids is None
        else request_ids
    )
    temperatures = as_row_tensor(temperature, batch, 1.0, torch.float32, device)
    if validate:
        check_chain_inputs(
            target,
            draft,
            draft_tokens,
            lengths,
            requests,
            temperatures,
            target_logits=target_is_logits,
            draft_logits=draft_is_logits,
        )
    chosen = resolve_backend(backend, device)
    if chosen == "triton":
        from .kernels.chain_verify import chain_verify_triton as run
    else:
        from .torch_backend.chain_verify import chain_verify_torch as run
    tokens, accepted = run(
        target,
        draft,
        draft_tokens,
        lengths.contiguous(),
        requests.contiguous(),
        temperatures.contiguous(),
        target_logits=target_is_logits,
        draft_logits=draft_is_logits,
        seed=seed,
        round=round,
        offset=offset,
    )
    return ChainResult(tokens, accepted)


class TreeResult(NamedTuple):
    """``tokens[b]``: the accepted path's tokens, then the final token, then -1 padding;
    ``path_nodes[b]``: the accepted node ids (-1 padded); ``num_accepted[b]``: path length."""

    tokens: torch.Tensor
    path_nodes: torch.Tensor
    num_accepted: torch.Tensor


def tree_verify(
    target: torch.Tensor,
    candidates: torch.Tensor,
    first_child: torch.Tensor,
    next_sibling: torch.Tensor,
    *,
    seed: int,
    round: int = 0,
    offset: int = 0,
    request_ids: torch.Tensor | None = None,
    target_is_logits: bool = False,
    temperature: torch.Tensor | float | None = None,
    backend: Backend = "auto",
    validate: bool = True,
) -> TreeResult:
    """Target-only tree verification (SGLang / EAGLE semantics, one coin per depth); see
    :mod:`specproof.optimized.kernels.tree_verify` for the rule and the tree layout.

    ``target`` [B, N, V], ``candidates``, ``first_child``, ``next_sibling`` [B, N] integers.
    Temperatures must be > 0 (logits) or 1 (probabilities).

    This is the reference ``TreeRule`` replayed through ``PhiloxSource`` when each node's
    children are listed in the rule's order (the drafter's most likely tokens first): the coin
    at (round, request, "accept", depth) picks the first child with u < cumulative mass (float64
    sums of float32 masses, exact), else the residual at (.., "residual", depth); a full path
    ends with the bonus at (.., "bonus", depth). Exactness: as for :func:`chain_verify`, tokens
    equal the reference's when the rows and their partial sums are float32 values (e.g.
    multiples of 2^-20); otherwise (logits, or rows whose float32 cumulative sums round) a
    token can differ only when a uniform lies within rounding (about 1e-6 relative) of a
    cumulative sibling mass or of a residual / bonus CDF step: the suite's margin rule (1e-4)."""
    from .validation import check_float, check_int, check_rows, fail

    batch = target.shape[0] if isinstance(target, torch.Tensor) and target.dim() == 3 else 0
    device = target.device
    requests = (
        torch.arange(batch, dtype=torch.int64, device=device)
        if request_ids is None
        else request_ids
    )
    temperatures = as_row_tensor(temperature, batch, 1.0, torch.float32, device)
    if validate:
        check_float("target", target, 3)
        _, nodes, vocab = target.shape
        if nodes < 1:
            fail("a tree needs at least its root node")
        for name, links in (
            ("candidates", candidates),
            ("first_child", first_child),
            ("next_sibling", next_sibling),
        ):
            check_int(name, links, 2)
            if tuple(links.shape) != (batch, nodes) or links.device != device:
                fail(f"{name} must be [{batch}, {nodes}] on {device}")
        for name, links in (("first_child", first_child), ("next_sibling", next_sibling)):
            if ((links < -1) | (links >= nodes) | (links == 0)).any():
                fail(f"{name} must hold node ids in 1..{nodes - 1}, or -1")
        index = torch.arange(nodes, device=device)[None, :]
        if ((first_child >= 0) & (first_child <= index)).any() or (
            (next_sibling >= 0) & (next_sibling <= index)
        ).any():
            fail("links must point to later nodes (nodes in topological order, no cycles)")
        if ((candidates < 0) | (candidates >= vocab))[:, 1:].any():
            fail(f"candidate tokens must lie in 0..{vocab - 1}")
        if not torch.isfinite(temperatures).all() or (temperatures <= 0).any():
            fail("tree verification needs temperatures > 0")
        if not target_is_logits and (temperatures != 1).any():
            fail("with probability inputs the temperature can only be 1")
        check_rows("target", target, target_is_logits)
    if resolve_backend(backend, device) == "triton":
        from .kernels.tree_verify import tree_verify_triton as run
    else:
        from .torch_backend.tree_verify import tree_verify_torch as run
    tokens, path, accepted = run(
        target,
        candidates,
        first_child,
        next_sibling,
        requests.contiguous(),
        temperatures.contiguous(),
        is_logits=target_is_logits,
        seed=seed,
        round=round,
        offset=offset,
    )
    return TreeResult(tokens, path, accepted)
