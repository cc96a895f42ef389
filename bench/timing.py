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
random order put there (``python bench/run.py --cold`` times without the untimed calls)."""


def synchronize(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def interleaved_times(
    calls: dict[str, Callable[[], object]],
    dev: torch.device,
    repeats: int,
    seed: int,
    steady: bool = True,
) -> dict[str, list[float]]:
    """Seconds per call of each, ``repeats`` times, in a fresh random order per repeat, after
    one warm-up call each (workspaces, allocator, lazy imports); ``steady`` puts an untimed call
    before each timed one of an implementation faster than :data:`STEADY_STATE_LIMIT_S`."""
    warm_up: dict[str, float] = {}
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        warm_up[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffler = random.Random(seed)
    for _ in range(repeats):
        shuffler.shuffle(order)
        for name in order:
            if steady and (times[name] or [warm_up[name]])[-1] < STEADY_STATE_LIMIT_S:
                calls[name]()  # untimed: the timed call is a steady-state call
            synchronize(dev)
            start = time.perf_counter()
            calls[name]()
            synchronize(dev)
            times[name].append(time.perf_counter() - start)
    return times
