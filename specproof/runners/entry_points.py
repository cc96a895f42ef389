"""Validation cost of the other entry points: tree verification and draft sampling, each with its
defaults (validate=True) beside validate=False, on the torch backend (CPU) or Triton (CUDA).

Timing as in ``specproof/runners/kernel_bench.py``: interleaved, each timed call after an untimed
one of the same,
medians. A tree here is one path of N nodes per request (node i's only child is node i + 1):
the deepest tree of N nodes, so verification reads the most rows it can.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

from specproof.optimized import sample_draft_tokens, tree_verify
from specproof.runners.timing import interleaved_times

TREE_SHAPE = (64, 16, 128_256)
DRAFT_SHAPE = (64, 128_256)
QUICK_TREE_SHAPE = (4, 4, 1000)
QUICK_DRAFT_SHAPE = (4, 1000)


def path_tree(batch: int, nodes: int, vocab: int, dev: torch.device) -> tuple[torch.Tensor, ...]:
    """Candidates, first-child and next-sibling links of one path of ``nodes`` per request."""
    generator = torch.Generator(device=dev).manual_seed(7)
    candidates = torch.randint(0, vocab, (batch, nodes), device=dev, generator=generator)
    first_child = torch.full((batch, nodes), -1, dtype=torch.int64, device=dev)
    first_child[:, :-1] = torch.arange(1, nodes, device=dev)
    next_sibling = torch.full((batch, nodes), -1, dtype=torch.int64, device=dev)
    return candidates, first_child, next_sibling


def interleaved(calls: dict[str, Callable[[], object]], dev: torch.device, repeats: int) -> dict:
    """Median seconds per call of each (see :func:`timing.interleaved_times`)."""
    times = interleaved_times(calls, dev, repeats, seed=len(calls))
    return {name: statistics.median(values) for name, values in times.items()}


def measure_entry_points(dev: torch.device, quick: bool, repeats: int = 7) -> list[dict]:
    backend = "triton" if dev.type == "cuda" else "torch"
    batch, nodes, vocab = QUICK_TREE_SHAPE if quick else TREE_SHAPE
    generator = torch.Generator(device=dev).manual_seed(3)
    logits = 2.0 * torch.randn(batch, nodes, vocab, device=dev, generator=generator)
    links = path_tree(batch, nodes, vocab, dev)
    rows = []
    for is_logits in (False, True):
        target = logits if is_logits else torch.softmax(logits, dim=-1)

        def tree(
            validate: bool, target: torch.Tensor = target, is_logits: bool = is_logits
        ) -> object:
            return tree_verify(
                target, *links, seed=1, target_is_logits=is_logits, backend=backend,
                validate=validate,
            )  # fmt: skip

        medians = interleaved(
            {"default": lambda: tree(True), "unvalidated": lambda: tree(False)}, dev, repeats
        )
        rows.append({"entry": "tree_verify", "shape": [batch, nodes, vocab], "logits": is_logits,
                     **medians})  # fmt: skip
    batch, vocab = QUICK_DRAFT_SHAPE if quick else DRAFT_SHAPE
    scores = logits[:batch, 0, :vocab].contiguous()
    for is_logits in (False, True):
        rows_in = scores if is_logits else torch.softmax(scores, dim=-1)

        def draft(
            validate: bool, rows_in: torch.Tensor = rows_in, is_logits: bool = is_logits
        ) -> object:
            return sample_draft_tokens(
                rows_in, seed=1, index=1, is_logits=is_logits, backend=backend,
                validate=validate,
            )  # fmt: skip

        medians = interleaved(
            {"default": lambda: draft(True), "unvalidated": lambda: draft(False)}, dev, repeats
        )
        rows.append({"entry": "sample_draft_tokens", "shape": [batch, vocab],
                     "logits": is_logits, **medians})  # fmt: skip
    return rows


def entry_points_markdown(rows: list[dict]) -> list[str]:
    lines = [
        "### Tree verification and draft sampling: validation cost",
        "",
        "`specproof/runners/entry_points.py`, same run and thread count; a tree is one path of N "
        "nodes per "
        "request (the most rows verification can read). Every row is checked (one reduction "
        "per row carries the checks).",
        "",
        "| entry point | shape | input | default ms | validate=False ms | validation overhead |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        shape = " x ".join(f"{size:,}" for size in row["shape"])
        overhead = row["default"] / row["unvalidated"] - 1
        lines.append(
            f"| `{row['entry']}` | {shape} | {'logits' if row['logits'] else 'probabilities'} "
            f"| {row['default'] * 1e3:,.1f} | {row['unvalidated'] * 1e3:,.1f} "
            f"| {100 * overhead:+.0f} % |"
        )
    return [*lines, ""]
