"""Checks recorded as boolean tensors and read back in one host synchronisation.

On CUDA every ``if tensor.any():`` stops the host until the device catches up; a call that
checks ten things that way waits ten times. Here each check records its violations, and
:meth:`DeferredChecks.raise_if_any` reads them all at once, wording only the first that holds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .contract import InvalidInputError

Describe = Callable[[torch.Tensor], str]


def first_index(bad: torch.Tensor) -> tuple[int, ...]:
    """The first (row-major) index where ``bad`` holds; only on the error path."""
    return tuple(int(i) for i in bad.nonzero()[0])


class DeferredChecks:
    """Recorded violations, raised in the order they were recorded, with one host sync."""

    def __init__(self) -> None:
        self.flags: list[tuple[torch.Tensor, Describe]] = []

    def add(self, bad: torch.Tensor, describe: Describe) -> None:
        """Record a boolean tensor of violations; ``describe(bad)`` words the first one."""
        if bad.numel():
            self.flags.append((bad, describe))

    def raise_if_any(self) -> None:
        if not self.flags:
            return
        if len(self.flags) == 1:
            every = self.flags[0][0]
        else:
            every = torch.cat([bad if bad.dim() == 1 else bad.reshape(-1) for bad, _ in self.flags])
        if not bool(every.any()):  # the one host synchronisation
            return
        for bad, describe in self.flags:  # error path: find the first violation
            if bool(bad.any()):
                raise InvalidInputError(describe(bad))
