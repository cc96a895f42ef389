"""Structure checks of the linked-list trees of :func:`specproof.optimized.tree_verify`.

A valid layout: links are -1 or point to a later node (so no cycles, and node 0 is the root);
every node is the target of at most one link (first child of one node, or next sibling of
one node, never both, never twice), so each node is reached at most once; candidate tokens of
nodes 1..N-1 lie in 0..V-1; the children of a node carry distinct tokens. All checks are
O(B * N log N) tensor work, never a loop over requests.
"""

from __future__ import annotations

import torch

from .recorded import DeferredChecks, Describe, first_index


def defer_tree(
    checks: DeferredChecks,
    candidates: torch.Tensor,
    first_child: torch.Tensor,
    next_sibling: torch.Tensor,
    vocab: int,
) -> None:
    """Record, with the request and node named, every way a [B, N] layout is not a tree. The
    later checks read links that failed the earlier ones as -1, so that all of them are
    recorded together (one host synchronisation for the call) and none indexes out of range;
    the first recorded violation is the one raised."""
    batch, nodes = candidates.shape
    if batch == 0:
        return
    device = candidates.device
    firsts, siblings, tokens = (t.to(torch.int64) for t in (first_child, next_sibling, candidates))
    index = torch.arange(nodes, device=device).expand(batch, nodes)
    safe = []
    for name, links in (("first_child", firsts), ("next_sibling", siblings)):
        outside = (links < -1) | (links == 0) | (links >= nodes)
        backward = (links >= 0) & (links <= index)
        rule_range = f"links must be node ids in 1..{nodes - 1}, or -1"
        rule_order = "links must point to later nodes (nodes in topological order, no cycles)"
        checks.add(outside, link_message(name, links, rule_range))
        checks.add(backward, link_message(name, links, rule_order))
        safe.append(torch.where(outside | backward, -1, links))
    out_of_range = ((tokens < 0) | (tokens >= vocab))[:, 1:]

    def token_message(bad: torch.Tensor) -> str:
        b, j = first_index(bad)
        return f"candidates[{b}, {j + 1}] = {int(tokens[b, j + 1])} is outside 0..{vocab - 1}"

    checks.add(out_of_range, token_message)
    safe_tokens = tokens.clamp(0, max(vocab - 1, 0))
    defer_reached_once(checks, safe[0], safe[1])
    defer_distinct_siblings(checks, safe[0], safe[1], safe_tokens, vocab)


def link_message(name: str, links: torch.Tensor, rule: str) -> Describe:
    def describe(bad: torch.Tensor) -> str:
        b, j = first_index(bad)
        return f"{name}[{b}, {j}] = {int(links[b, j])}: {rule}"

    return describe


def defer_reached_once(
    checks: DeferredChecks, firsts: torch.Tensor, siblings: torch.Tensor
) -> None:
    batch, nodes = firsts.shape
    incoming = torch.zeros(batch, nodes + 1, dtype=torch.int64, device=firsts.device)
    for links in (firsts, siblings):
        incoming.scatter_add_(1, torch.where(links >= 0, links, nodes), torch.ones_like(links))

    def message(bad: torch.Tensor) -> str:
        b, j = first_index(bad)
        return (
            f"node {j} of request {b} is the target of {int(incoming[b, j])} links (first_child "
            "and next_sibling together): the links must form a tree, each node reached once"
        )

    checks.add(incoming[:, :nodes] > 1, message)


def defer_distinct_siblings(
    checks: DeferredChecks,
    firsts: torch.Tensor,
    siblings: torch.Tensor,
    tokens: torch.Tensor,
    vocab: int,
) -> None:
    """Siblings share a list head (the first child); a (head, token) pair must be unique."""
    batch, nodes = firsts.shape
    device = firsts.device
    index = torch.arange(nodes, device=device).expand(batch, nodes)
    previous = torch.full((batch, nodes + 1), -1, dtype=torch.int64, device=device)
    previous.scatter_(1, torch.where(siblings >= 0, siblings, nodes), index)
    head = torch.where(previous[:, :nodes] >= 0, previous[:, :nodes], index)
    for _ in range(max(nodes - 1, 1).bit_length()):  # pointer doubling: 2^steps >= N
        head = head.gather(1, head)
    is_first = torch.zeros(batch, nodes + 1, dtype=torch.bool, device=device)
    is_first.scatter_(1, torch.where(firsts >= 0, firsts, nodes), True)
    listed = is_first[:, :nodes].gather(1, head)
    keys = torch.where(listed, head * vocab + tokens, -1 - index)
    ordered, order = keys.sort(dim=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)

    def message(bad: torch.Tensor) -> str:
        b, j = first_index(bad)
        node = int(order[b, j + 1])
        return (
            f"request {b}: node {node} repeats its sibling's token {int(tokens[b, node])}; "
            "the children of a node must carry distinct tokens"
        )

    checks.add(repeated, message)
