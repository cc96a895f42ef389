"""A headline run's JSON built by hand around given settings, for the report's tests."""

from __future__ import annotations

from typing import Any

from specproof.runners.e2e.experiments import headline


def headline_result(
    settings: dict[str, Any], pilot: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    """The fields every headline result carries (toy values), ``settings`` and ``pilot``, and
    any further ``fields`` (t-intervals' marker, Holm families)."""
    return {
        "command": headline.PROG,
        "seconds": 1.0,
        "weights": "toy",
        "prompt_length": 4,
        "new_tokens": 8,
        "machine": {"threads": 1},
        "loads": {"start": [1.0, 1.0, 1.0]},
        "pilot_chunks": 2,
        "chunks_used": 4,
        "alpha": 0.05,
        "power_at_chunks_used": 0.0,
        "target_power": 0.8,
        "win_share": 0.7,
        "settings": settings,
        "pilot": pilot,
        **fields,
    }
