"""Structure checks of the linked-list trees of :func:`specproof.optimized.tree_verify`.

A valid layout: links are -1 or point to a later node (so no cycles, and node 0 is the root);
every node is the target of at most one link (first child of one node, or next sibling of
one node, never both, never twice), so each node is reached at most once; candidate tokens of
nodes 1..N-1 lie in 0..V-1; the children of a node carry distinct tokens. All checks are
O(B * N log N) tensor work, never a loop over requests.
"""

from __future__ import annotations

import torch

from .validation import fail


def check_tree(
    candidates: torch.Tensor, first_child: torch.Tensor, next_sibling: torch.Tensor, vocab: int
) -> None:
    """Refuse, with the request and node named, any [B, N] layout that is not a tree."""
    batch, nodes = candidates.shape
    if batch == 0:
        return
    device = candidates.device
    firsts, siblings, tokens = (t.to(torch.int64) for t in (first_child, next_sibling, candidates))
    index = torch.arange(nodes, device=device).expand(batch, nodes)
    for name, links in (("first_child", firsts), ("next_sibling", siblings)):
        bad = (links < -1) | (links == 0) | (links >= nodes)
        if bad.any():
            b, j = first_true(bad)
            fail(
                f"{name}[{b}, {j}] = {int(links[b, j])}: links must be node ids in "
                f"1..{nodes - 1}, or -1"
            )
        backward = (links >= 0) & (links <= index)
        if backward.any():
            b, j = first_true(backward)
            fail(
                f"{name}[{b}, {j}] = {int(links[b, j])}: links must point to later nodes "
                "(nodes in topological order, no cycles)"
            )
    out_of_range = ((tokens < 0) | (tokens >= vocab))[:, 1:]
    if out_of_range.any():
        b, j = first_true(out_of_range)
        fail(f"candidates[{b}, {j + 1}] = {int(tokens[b, j + 1])} is outside 0..{vocab - 1}")
    check_reached_once(firsts, siblings)
    check_distinct_siblings(firsts, siblings, tokens, vocab)


def first_true(mask: torch.Tensor) -> tuple[int, int]:
    b, j = (int(i) for i in mask.nonzero()[0])
    return b, j


def check_reached_once(firsts: torch.Tensor, siblings: torch.Tensor) -> None:
    batch, nodes = firsts.shape
    incoming = torch.zeros(batch, nodes + 1, dtype=torch.int64, device=firsts.device)
    for links in (firsts, siblings):
        incoming.scatter_add_(1, torch.where(links >= 0, links, nodes), torch.ones_like(links))
    shared = incoming[:, :nodes] > 1
    if shared.any():
        b, j = first_true(shared)
        fail(
            f"node {j} of request {b} is the target of {int(incoming[b, j])} links (first_child "
            "and next_sibling together): the links must form a tree, each node reached once"
        )


def check_distinct_siblings(
    firsts: torch.Tensor, siblings: torch.Tensor, tokens: torch.Tensor, vocab: int
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
    if repeated.any():
        b, j = first_true(repeated)
        node = int(order[b, j + 1])
        fail(
            f"request {b}: node {node} repeats its sibling's token {int(tokens[b, node])}; "
            "the children of a node must carry distinct tokens"
        )
