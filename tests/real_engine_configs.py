"""The rule every real-engine adapter's configuration list keeps, checked once for all of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SHARED = ("sampling", "prompt", "tokens")
"""What a speculative configuration must share with its control."""


def assert_each_beside_its_control(configs: Sequence[Any], shared: Sequence[str] = SHARED) -> None:
    """Controls draft nothing; every other configuration names a control listed before it that
    differs from it only in drafting (the ``shared`` fields equal); no name is listed twice."""
    seen: dict[str, Any] = {}
    for config in configs:
        assert config.name not in seen, f"{config.name} listed twice"
        if config.drafter == "none":
            assert not config.control and config.k == 0, config.name
        else:
            control = seen[config.control]  # listed before it
            assert control.drafter == "none", config.name
            assert [getattr(control, f) for f in shared] == [getattr(config, f) for f in shared], (
                config.name
            )
        seen[config.name] = config
