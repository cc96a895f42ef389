"""The pytest plugin (entry point ``pytest11: specproof``): the ``specproof`` fixture and the
``--specproof-level`` option (ini ``specproof_level``). Loading it imports pytest and the
standard library only; torch and the audit load when a test first calls a check."""

from __future__ import annotations

from typing import Any

import pytest

from .levels import DEFAULT_LEVEL, LEVELS

OPTION = "--specproof-level"
INI = "specproof_level"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specproof", "specproof losslessness checks")
    group.addoption(
        OPTION,
        choices=sorted(LEVELS),
        default=None,
        help="strength of specproof's checks: full (power 0.99 against TV 0.1) or quick "
        "(power 0.9 against TV 0.2); default from the ini option specproof_level, else full",
    )
    parser.addini(INI, f"default strength of specproof's checks ({', '.join(LEVELS)})")


def configured_level(config: pytest.Config) -> str:
    level = config.getoption(OPTION) or config.getini(INI) or DEFAULT_LEVEL
    if level not in LEVELS:
        raise pytest.UsageError(f"{INI} must be one of {', '.join(LEVELS)}, got {level!r}")
    return str(level)


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption(OPTION) or config.getini(INI):
        level = LEVELS[configured_level(config)]
        return f"specproof: level {level.name} (power {level.power:g} against TV {level.delta:g})"
    return None


class Checks:
    """The fixture's value: the checks of :mod:`specproof.testing.lossless` at the session's
    level (a ``level=`` keyword still overrides it)."""

    def __init__(self, level: str) -> None:
        self.level = level

    def assert_lossless(self, verifier: Any, signature: str, **options: Any) -> Any:
        from .lossless import assert_lossless

        options.setdefault("level", self.level)
        return assert_lossless(verifier, signature, **options)

    def assert_engine_lossless(
        self, generate: Any, target_probs: Any, prompt: Any, **options: Any
    ) -> Any:
        from .lossless import assert_engine_lossless

        options.setdefault("level", self.level)
        return assert_engine_lossless(generate, target_probs, prompt, **options)

    def assert_acceptance(self, accepted: int, **options: Any) -> Any:
        """:func:`specproof.testing.acceptance.assert_acceptance` (its alpha, not the level's
        power: the gate states its own power against a shift of the acceptance rate)."""
        from .acceptance import assert_acceptance

        return assert_acceptance(accepted, **options)


@pytest.fixture
def specproof(request: pytest.FixtureRequest) -> Checks:
    """``specproof.assert_lossless(verifier, signature=...)`` and
    ``specproof.assert_engine_lossless(generate, target_probs, prompt)`` at the session's level,
    and ``specproof.assert_acceptance(accepted, ...)``."""
    return Checks(configured_level(request.config))
