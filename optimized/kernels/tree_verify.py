# mypy: disable-error-code="no-untyped-def"
"""Target-only tree verification (Triton), SGLang / EAGLE semantics with one coin per depth.

The tree of request b is given as linked lists over its N nodes: ``candidates[b, i]`` is node
i's token (node 0 is the root, its token unused), ``first_child[b, i]`` and
``next_sibling[b, i]`` link the nodes (-1 ends a list). ``target[b, i]`` is the target row
after the path to node i. At a node, with u the uniform of (round, request, "accept", depth),
children are tried in order and child c is accepted when u < the target mass of the children
tried so far, c included (the sum taken in float64). If none is accepted, the round ends with a
token drawn from the node's row with its children removed, at (.., "residual", depth); at a
leaf, from the whole row at (.., "bonus", depth). Siblings must carry distinct tokens.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .chain_verify import launch_config
from .philox import ACCEPT, BONUS, RESIDUAL, address_uniform
from .rows import load_prob, load_probs, row_lse, threshold_below


@triton.jit
def _without_children(mass, cols, child, candidates_row, siblings_row):
    while child >= 0:
        token = tl.load(candidates_row + child)
        mass = tl.where(cols == token, 0.0, mass)
        child = tl.load(siblings_row + child)
    return mass


# Philox words are never compile-time constants (a word equal to 1 would be one).
@triton.jit(do_not_specialize=["seed", "round", "offset"])
def _tree_verify_kernel(
    target_ptr,
    candidates_ptr,
    first_child_ptr,
    next_sibling_ptr,
    requests_ptr,
    temperature_ptr,
    out_ptr,
    nodes_ptr,
    accepted_ptr,
    V,
    target_stride_b,
    target_stride_n,
    tree_stride_b,
    out_stride_b,
    seed,
    round,
    offset,
    IS_LOGITS: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    request = tl.load(requests_ptr + b).to(tl.int64)
    temperature = tl.load(temperature_ptr + b).to(tl.float32)
    candidates_row = candidates_ptr + b * tree_stride_b
    children_row = first_child_ptr + b * tree_stride_b
    siblings_row = next_sibling_ptr + b * tree_stride_b
    node = tl.full((), 0, tl.int64)
    depth = tl.full((), 1, tl.int32)
    row_max = tl.full((), 0.0, tl.float32)
    lse = tl.full((), 0.0, tl.float32)
    done = tl.full((), 0, tl.int32)
    while done == 0:
        p_row = target_ptr + b * target_stride_b + node * target_stride_n
        if IS_LOGITS:
            row_max, lse = row_lse(p_row, V, temperature, BLOCK)
        u = address_uniform(seed, ACCEPT, depth, request, round, offset).to(tl.float64)
        child = tl.load(children_row + node).to(tl.int64)
        chosen = tl.full((), -1, tl.int64)
        cumulative = tl.full((), 0.0, tl.float64)
        while (child >= 0) & (chosen < 0):
            token = tl.load(candidates_row + child)
            # A candidate outside the vocabulary has no mass and is never read.
            outside = (token < 0) | (token >= V)
            p = load_prob(p_row, tl.where(outside, 0, token), IS_LOGITS, temperature, row_max, lse)
            p = tl.where(outside, 0.0, p)
            cumulative += p.to(tl.float64)
            if u < cumulative:
                chosen = child
            else:
                child = tl.load(siblings_row + child).to(tl.int64)
        if chosen >= 0:
            tl.store(out_ptr + b * out_stride_b + depth - 1, tl.load(candidates_row + chosen))
            tl.store(nodes_ptr + b * out_stride_b + depth - 1, chosen)
            node = chosen
            depth += 1
        else:
            done = 1

    p_row = target_ptr + b * target_stride_b + node * target_stride_n
    first = tl.load(children_row + node).to(tl.int64)
    phase = tl.where(first >= 0, RESIDUAL, BONUS)
    u = address_uniform(seed, phase, depth, request, round, offset)
    total = tl.full((), 0.0, tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mass = load_probs(p_row, cols, cols < V, IS_LOGITS, temperature, row_max, lse)
        mass = _without_children(mass, cols, first, candidates_row, siblings_row)
        total += tl.sum(mass, axis=0)
    threshold = threshold_below(u, total)
    carry = tl.full((), 0.0, tl.float32)
    found = tl.full((), -1, tl.int64)
    last_positive = tl.full((), -1, tl.int64)
    start = 0
    while (start < V) & (found < 0):
        cols = start + tl.arange(0, BLOCK)
        live = cols < V
        mass = load_probs(p_row, cols, live, IS_LOGITS, temperature, row_max, lse)
        mass = _without_children(mass, cols, first, candidates_row, siblings_row)
        cumulative32 = tl.cumsum(mass, axis=0) + carry
        hit = live & (mass > 0.0) & (cumulative32 > threshold)
        first_hit = tl.min(tl.where(hit, cols, V), axis=0).to(tl.int64)
        found = tl.where(first_hit < V, first_hit, found)
        last_positive = tl.maximum(
            last_positive, tl.max(tl.where(live & (mass > 0.0), cols, -1), axis=0).to(tl.int64)
        )
        carry += tl.sum(mass, axis=0)
        start += BLOCK
    final = tl.where(found >= 0, found, last_positive)
    tl.store(out_ptr + b * out_stride_b + depth - 1, final)
    tl.store(accepted_ptr + b, (depth - 1).to(tl.int64))


def tree_verify_triton(
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
    """(tokens [B, N] -1 padded, accepted node ids [B, N] -1 padded, accepted count [B])."""
    batch, nodes, vocab = target.shape
    device = target.device
    out = torch.full((batch, nodes), -1, dtype=torch.int64, device=device)
    path = torch.full((batch, nodes), -1, dtype=torch.int64, device=device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    if batch:
        target = target if target.stride(-1) == 1 else target.contiguous()
        candidates, first_child, next_sibling = (
            t.to(torch.int64).contiguous() for t in (candidates, first_child, next_sibling)
        )
        tile, warps = launch_config(vocab, device)
        _tree_verify_kernel[(batch,)](
            target,
            candidates,
            first_child,
            next_sibling,
            requests,
            temperature,
            out,
            path,
            accepted,
            vocab,
            target.stride(0),
            target.stride(1),
            candidates.stride(0),
            out.stride(0),
            seed,
            round,
            offset,
            IS_LOGITS=is_logits,
            BLOCK=tile,
            num_warps=warps,
        )
    return out, path, accepted
