"""Limits on the values a command or the pytest plugin takes: seeds and time limits."""

from __future__ import annotations

import operator
import threading

MAX_SEED = 2**62
"""The largest seed a command or a check takes: an engine audit's run i uses seed + i, and
torch's generators take seeds below 2^64."""
MAX_SECONDS = min(threading.TIMEOUT_MAX, 2.0**53)
"""The longest time limit a thread wait on this platform takes (about 292 years on Linux)."""


def seed_problem(name: str, value: object) -> str | None:
    """Why ``value`` is no seed (one line naming ``name``), or None: a seed is a whole number
    (not a bool) in 0..2^62."""
    try:
        seed = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        seed = None
    if seed is None or isinstance(value, bool):
        return f"{name} must be a whole number in 0..2^62, got {value!r}"
    if not 0 <= seed <= MAX_SEED:
        return f"{name} must be in 0..2^62 ({MAX_SEED}), got {seed}"
    return None
