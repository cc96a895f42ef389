"""What validate=True adds to a chain verification, counted without a clock: aten operations
and host reads (``aten._local_scalar_dense``) of one default torch-backend call at B = 64,
k = 8, V = 128, with validate=True and with validate=False, for this checkout and for the
checkouts given (each one's ``optimized/`` loaded beside this one, as
:mod:`specproof.runners.validation_cost` loads its baseline).

    python -m specproof.runners.validation_operations [--baseline DIR ...]

Prints one line per checkout and input kind. ``tests/optimized/test_validation_cost.py`` holds
this checkout to its bound with the same counter and inputs.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from specproof.runners.validation_cost import checkout, load_baseline

HOST_READ = "aten._local_scalar_dense"


class OperationCount(TorchDispatchMode):
    """Every aten operation dispatched inside the ``with`` block, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.operations: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.operations[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def default_call_inputs(logits: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """B = 64, k = 8, V = 128, drafts near the target (the benchmark's small shape)."""
    generator = torch.Generator().manual_seed(8)
    target = 2 * torch.randn(64, 9, 128, generator=generator)
    draft = target[:, :8] + 0.6 * torch.randn(64, 8, 128, generator=generator)
    tokens = torch.multinomial(torch.softmax(draft, -1).reshape(-1, 128), 1, generator=generator)
    if not logits:
        target, draft = torch.softmax(target, -1), torch.softmax(draft, -1)
    return target, draft, tokens.view(64, 8)


def operation_counts(
    verify: Callable[..., Any], logits: bool
) -> dict[bool, collections.Counter[str]]:
    """validate -> the operations of one call (after an uncounted call that makes workspaces)."""
    target, draft, tokens = default_call_inputs(logits)
    flags = {"target_is_logits": logits, "draft_is_logits": logits, "backend": "torch"}
    counts = {}
    for validate in (True, False):
        verify(target, draft, tokens, seed=1, validate=validate, **flags)
        with OperationCount() as count:
            verify(target, draft, tokens, seed=1, validate=validate, **flags)
        counts[validate] = count.operations
    return counts


def main(argv: list[str] | None = None) -> None:
    from specproof.optimized import chain_verify

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, nargs="*", default=[], help="other checkouts")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    checkouts: list[tuple[str, Callable[..., Any]]] = [(checkout(root) or "this", chain_verify)]
    for index, folder in enumerate(args.baseline):
        name = checkout(folder.resolve()) or str(folder)
        checkouts.append((name, load_baseline(folder.resolve(), f"baseline_optimized_{index}")))
    for name, verify in checkouts:
        for logits in (False, True):
            counts = operation_counts(verify, logits)
            on, off = (sum(counts[v].values()) for v in (True, False))
            reads = counts[True][HOST_READ] - counts[False][HOST_READ]
            kind = "logits" if logits else "probabilities"
            print(f"{name:>12} {kind:>13}: validate=False {off} operations; validate=True adds "
                  f"{on - off} operations and {reads} host read(s)")  # fmt: skip


if __name__ == "__main__":
    main()
