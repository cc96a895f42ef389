"""Target-only tree verification in torch, with the semantics of the Triton kernel."""

from __future__ import annotations

import torch

from ..philox import ACCEPT, BONUS, RESIDUAL, address_uniforms
from .logits import logit_probs
from .rows import inverse_cdf


def tree_verify_torch(
    target: torch.Tensor,
    candidates: torch.Tensor,
    first_child: torch.Tensor,
    next_sibling: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    is_logits: bool,
    seed: int,
    round: int,
    offset: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Same contract as :func:`~specproof.optimized.kernels.tree_verify.tree_verify_triton`.
    Loops run over depths and sibling ranks (at most N each), never over requests."""
    batch, nodes, vocab = target.shape
    device = target.device
    candidates, first_child, next_sibling = (
        t.to(torch.int64) for t in (candidates, first_child, next_sibling)
    )
    requests = requests.to(torch.int64)
    out = torch.full((batch, nodes), -1, dtype=torch.int64, device=device)
    path = torch.full((batch, nodes), -1, dtype=torch.int64, device=device)
    everyone = torch.arange(batch, device=device)
    node = torch.zeros(batch, dtype=torch.int64, device=device)
    depth = torch.ones(batch, dtype=torch.int64, device=device)
    alive = torch.ones(batch, dtype=torch.bool, device=device)
    for _ in range(nodes):
        rows = target[everyone, node]
        probs = logit_probs(rows, temperature) if is_logits else rows.to(torch.float32)
        u = address_uniforms(seed, ACCEPT, depth, requests, round, offset).double()
        child = first_child[everyone, node]
        chosen = torch.full_like(child, -1)
        cumulative = torch.zeros(batch, dtype=torch.float64, device=device)
        for _ in range(nodes):
            trying = alive & (child >= 0) & (chosen < 0)
            safe = child.clamp(min=0)
            token = candidates[everyone, safe]
            # A candidate outside the vocabulary has no mass and is never read.
            outside = (token < 0) | (token >= vocab)
            p = probs.gather(1, torch.where(outside, 0, token)[:, None])[:, 0]
            p = torch.where(outside, 0.0, p)
            cumulative = torch.where(trying, cumulative + p.double(), cumulative)
            hit = trying & (u < cumulative)
            chosen = torch.where(hit, child, chosen)
            child = torch.where(trying & ~hit, next_sibling[everyone, safe], child)
        advanced = alive & (chosen >= 0)
        column = torch.where(advanced, depth - 1, nodes - 1)
        safe_chosen = chosen.clamp(min=0)
        out[everyone[advanced], column[advanced]] = candidates[everyone, safe_chosen][advanced]
        path[everyone[advanced], column[advanced]] = chosen[advanced]
        node = torch.where(advanced, chosen, node)
        depth = torch.where(advanced, depth + 1, depth)
        alive = advanced
    rows = target[everyone, node]
    mass = logit_probs(rows, temperature) if is_logits else rows.to(torch.float32).clone()
    first = first_child[everyone, node]
    child = first
    for _ in range(nodes):
        has = child >= 0
        token = candidates[everyone, child.clamp(min=0)]
        removed = has & (token >= 0) & (token < vocab)
        mass[everyone[removed], token[removed]] = 0.0
        child = torch.where(has, next_sibling[everyone, child.clamp(min=0)], child)
    u = torch.where(
        first >= 0,
        address_uniforms(seed, RESIDUAL, depth, requests, round, offset),
        address_uniforms(seed, BONUS, depth, requests, round, offset),
    )
    out[everyone, depth - 1] = inverse_cdf(mass, u)
    return out, path, depth - 1
