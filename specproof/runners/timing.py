"""Interleaved timing shared by the CPU benchmarks."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import torch

STEADY_STATE_LIMIT_S = 1.0
"""Each timed call of an implementation faster than this follows an untimed call of the same
implementation: the first call after another one's gigabyte of temporaries (eager) runs on cold
memory, whichever implementation it is, and that cost would otherwise land on whichever the
random order put there (``python -m specproof.runners.kernel_bench --cold`` times without the
untimed calls)."""


def synchronize(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


EVICTION_BYTES = 256 * 2**20
"""Cold calls follow a write of this many bytes: eight times this CPU's 32 MiB last-level cache,
so the rows a call reads come from memory, as after the target's forward pass."""


class Evictor:
    """An untimed write over a buffer much larger than the caches."""

    def __init__(self, dev: torch.device, size: int = EVICTION_BYTES) -> None:
        self.dev = dev
        self.buffer = torch.empty(size // 4, dtype=torch.float32, device=dev)

    def __call__(self) -> None:
        self.buffer.fill_(1.0)
        synchronize(self.dev)


def interleaved_times(
    calls: dict[str, Callable[[], object]],
    dev: torch.device,
    repeats: int,
    seed: int,
    steady: bool = True,
    evict: Callable[[], None] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each, ``repeats`` times, in a fresh random order per repeat, after
    one warm-up call each (workspaces, allocator, lazy imports); ``steady`` puts an untimed call
    before each timed one of an implementation faster than :data:`STEADY_STATE_LIMIT_S` (warm
    figures). With ``evict`` (cold figures), ``evict()`` runs untimed before every timed call
    instead, and ``steady`` is ignored."""
    return interleaved_clocks(calls, dev, repeats, seed, steady, evict)["wall"]


def interleaved_clocks(
    calls: dict[str, Callable[[], object]],
    dev: torch.device,
    repeats: int,
    seed: int,
    steady: bool = True,
    evict: Callable[[], None] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """:func:`interleaved_times` read on two clocks around the same calls: ``"wall"`` (seconds
    elapsed) and ``"cpu"`` (seconds this thread ran, :func:`time.thread_time`: with one torch
    thread on the CPU, the call's own work, without the time other processes held the core)."""
    warm_up: dict[str, float] = {}
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        warm_up[name] = time.perf_counter() - start
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffler = random.Random(seed)
    for _ in range(repeats):
        shuffler.shuffle(order)
        for name in order:
            if evict is not None:
                evict()  # untimed: the call starts with its rows out of the caches
            elif steady and (wall[name] or [warm_up[name]])[-1] < STEADY_STATE_LIMIT_S:
                calls[name]()  # untimed: the timed call is a steady-state call
            synchronize(dev)
            start_cpu = time.thread_time()
            start = time.perf_counter()
            calls[name]()
            synchronize(dev)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.thread_time() - start_cpu)
    return {"wall": wall, "cpu": cpu}
