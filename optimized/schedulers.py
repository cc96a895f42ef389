"""The reference schedulers, batched over tensors: no per-request Python loop, no host sync.

Every scheduler maps confidences ``c`` [R, gamma] (float64 recommended) to lengths l [R]
(int64, 0..gamma), optionally carrying a state across rounds. Steps-per-second curves are
tables: ``sps[b]`` is SPS(b) for every batch size b the walk can reach (see :func:`sps_table`).
Candidates (r, j) with a_{r,j} = c_{r,1} ... c_{r,j} > 0 are ranked by a descending, ties by
position j, then request r, exactly as :func:`specproof.reference.ranked_candidates`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from .checks.contract import InvalidInputError

SchedulerState = Any


class BatchedScheduler(Protocol):
    name: str
    causal: bool

    def initial_state(self, device: torch.device) -> SchedulerState: ...

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]: ...


def sps_table(
    sps: Callable[[int], Any], max_batch: int, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """SPS(b) for b = 0..max_batch as a float64 tensor (SPS(0) is stored as 0)."""
    values = [0.0] + [float(sps(b)) for b in range(1, max_batch + 1)]
    return torch.tensor(values, dtype=torch.float64, device=device)


def ranked(
    confidences: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(a, r, j, valid) of every candidate in rank order; j is 1-based; invalid ones (a = 0)
    come last."""
    requests = confidences.shape[0]
    survival = torch.cumprod(confidences.to(torch.float64), dim=1)
    # Position-major flattening, then a stable sort on -a: ties stay ordered by (j, r).
    by_position = survival.t().reshape(-1)
    order = torch.sort(-by_position, stable=True).indices
    a = by_position[order]
    j = order // requests + 1
    r = order % requests
    return a, r, j, a > 0


def lengths_from_prefix(
    r: torch.Tensor, j: torch.Tensor, admitted: torch.Tensor, requests: int
) -> torch.Tensor:
    """l_r = the largest j among the admitted candidates of request r (0 if none)."""
    lengths = torch.zeros(requests, dtype=torch.int64, device=r.device)
    return lengths.scatter_reduce(0, r, torch.where(admitted, j, 0), reduce="amax")


def walk_thetas(confidences: torch.Tensor, sps: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Theta_m for m = 0..R*gamma admitted candidates along the greedy path (-inf where the
    m-th candidate has a = 0), with the ranked candidates."""
    requests, _ = confidences.shape
    a, r, j, valid = ranked(confidences)
    start = torch.full((1,), float(requests), dtype=torch.float64, device=a.device)
    expected = torch.cumsum(torch.cat([start, a]), dim=0)
    batch = torch.arange(requests, requests + a.numel() + 1, device=a.device)
    if batch[-1] >= sps.numel():
        raise InvalidInputError(
            f"the SPS table covers batch sizes up to {sps.numel() - 1}; "
            f"the walk needs {int(batch[-1])}"
        )
    theta = expected * sps[batch]
    theta[1:] = torch.where(valid, theta[1:], float("-inf"))
    return theta, r, j, valid


def _require(sps: torch.Tensor | None, who: str) -> torch.Tensor:
    if sps is None:
        raise InvalidInputError(f"{who} needs an SPS table (steps per second per batch size)")
    return sps


class Algorithm1:
    """DSpark's hardware-aware prefix scheduler: the greedy walk with the early break."""

    name = "algorithm1"
    causal = True

    def initial_state(self, device: torch.device) -> SchedulerState:
        return None

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        theta, r, j, _ = walk_thetas(confidences, _require(sps, self.name))
        # The walk admits candidate m while each Theta improves on the previous best.
        improving = torch.cumprod((theta[1:] > theta[:-1]).to(torch.int64), dim=0).bool()
        return lengths_from_prefix(r, j, improving, confidences.shape[0]), state


class GlobalSearch:
    """Algorithm 1 without the break: the best Theta over the whole path. Looks ahead, so it is
    lossy (DSpark Appendix A); kept as a deliberately lossy mode."""

    name = "global-search"
    causal = False

    def initial_state(self, device: torch.device) -> SchedulerState:
        return None

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        return global_search_lengths(confidences, _require(sps, self.name)), state


def global_search_lengths(confidences: torch.Tensor, sps: torch.Tensor) -> torch.Tensor:
    theta, r, j, _ = walk_thetas(confidences, sps)
    best = torch.argmax(theta)  # the first maximum: a later equal Theta is no improvement
    admitted = torch.arange(1, theta.numel(), device=theta.device) <= best
    return lengths_from_prefix(r, j, admitted, confidences.shape[0])


def top_k_lengths(confidences: torch.Tensor, k: torch.Tensor | int) -> torch.Tensor:
    _, r, j, valid = ranked(confidences)
    admitted = valid & (torch.arange(r.numel(), device=r.device) < k)
    return lengths_from_prefix(r, j, admitted, confidences.shape[0])


class FixedTopK:
    """Across the batch, admit the K candidates with the largest prefix survival."""

    causal = True

    def __init__(self, k: int) -> None:
        if k < 0:
            raise InvalidInputError(f"K must be >= 0, got {k}")
        self.k = k
        self.name = f"top-{k}"

    def initial_state(self, device: torch.device) -> SchedulerState:
        return None

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        return top_k_lengths(confidences, self.k), state


class StaleCapacity:
    """The production variant: top-K with K from the global search two rounds earlier."""

    name = "stale-capacity"
    causal = True

    def __init__(self, initial_capacity: int = 2) -> None:
        if initial_capacity < 0:
            raise InvalidInputError(f"initial capacity must be >= 0, got {initial_capacity}")
        self.initial_capacity = initial_capacity

    def initial_state(self, device: torch.device) -> SchedulerState:
        capacity = torch.tensor(self.initial_capacity, dtype=torch.int64, device=device)
        return (capacity, capacity.clone())

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        capacity, next_capacity = state
        lengths = top_k_lengths(confidences, capacity)
        later = global_search_lengths(confidences, _require(sps, self.name)).sum()
        return lengths, (next_capacity, later)


class FixedGamma:
    """Verify the first ``length`` drafts of every request (all of them by default)."""

    causal = True

    def __init__(self, length: int | None = None) -> None:
        if length is not None and length < 0:
            raise InvalidInputError(f"fixed length must be >= 0, got {length}")
        self.length = length
        self.name = "fixed-gamma" if length is None else f"fixed({length})"

    def initial_state(self, device: torch.device) -> SchedulerState:
        return None

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        requests, gamma = confidences.shape
        length = gamma if self.length is None else min(self.length, gamma)
        return torch.full((requests,), length, dtype=torch.int64, device=confidences.device), state


class StaticThreshold:
    """Admit position j while the prefix survival a_j is at least ``threshold``."""

    causal = True

    def __init__(self, threshold: float) -> None:
        self.threshold = float(threshold)
        self.name = f"threshold({threshold})"

    def initial_state(self, device: torch.device) -> SchedulerState:
        return None

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        survival = torch.cumprod(confidences.to(torch.float64), dim=1)
        return (survival >= self.threshold).sum(dim=1), state
