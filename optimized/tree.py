"""Tree verification: the public entry point and its input checks."""

from __future__ import annotations

from typing import NamedTuple

import torch

from .backend import Backend, resolve_backend
from .checks.arguments import request_arguments
from .checks.content import defer_request_ids, defer_rows
from .checks.contract import check_float, check_int, fail
from .checks.recorded import DeferredChecks
from .checks.tree_links import defer_tree


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
    if not isinstance(target, torch.Tensor):
        fail(f"target must be a torch.Tensor, got {type(target).__name__}")
    check_float("target", target, 3)
    batch, nodes, vocab = target.shape
    device = target.device
    seed, round, offset, _, requests, temperatures = request_arguments(
        batch,
        device,
        seed=seed,
        round=round,
        offset=offset,
        request_ids=request_ids,
        temperature=temperature,
    )
    for name, links in (
        ("candidates", candidates),
        ("first_child", first_child),
        ("next_sibling", next_sibling),
    ):
        check_int(name, links, 2)
        if tuple(links.shape) != (batch, nodes):
            fail(f"{name} must have shape ({batch}, {nodes}), got {tuple(links.shape)}")
        if links.device != device:
            fail(f"{name} is on {links.device}, target on {device}")
    if validate:
        if nodes < 1:
            fail("a tree needs at least its root node")
        if vocab < 1:
            fail("the vocabulary must hold at least one token")
        checks = DeferredChecks()
        if request_ids is not None:
            defer_request_ids(checks, requests)
        checks.add(
            ~torch.isfinite(temperatures) | (temperatures <= 0),
            lambda bad: (
                f"tree verification needs temperatures > 0, got {temperatures.tolist()[:8]}"
            ),
        )
        if not target_is_logits:
            checks.add(
                temperatures != 1,
                lambda bad: "with probability inputs the temperature can only be 1",
            )
        defer_tree(checks, candidates, first_child, next_sibling, vocab)
        defer_rows(checks, "target", target, target_is_logits)
        checks.raise_if_any()  # one host synchronisation
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
