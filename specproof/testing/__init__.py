"""specproof.testing: the audit as pytest assertions, for an engine's own test suite.

``assert_lossless(verifier, signature=...)`` and ``assert_engine_lossless(generate,
target_probs, prompt)`` (:mod:`.lossless`), ``acceptance_gate`` and ``assert_acceptance`` for
an engine's acceptance-length gate (:mod:`.acceptance`), and the pytest plugin
(:mod:`.plugin`, registered through the ``pytest11`` entry point) that gives tests the
``specproof`` fixture and the ``--specproof-level`` option. Importing this package or the
plugin imports neither torch nor the audit: both load on the first call. :mod:`.arguments`
refuses bad arguments before any work, :mod:`.levels` says what each ``--specproof-level``
promises, and :mod:`.twins` builds the must-fail twins.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "TwinError",
    "TwinPassedError",
    "acceptance_gate",
    "assert_acceptance",
    "assert_engine_lossless",
    "assert_lossless",
]
GATES = ("acceptance_gate", "assert_acceptance")


def __getattr__(name: str) -> Any:
    if name in GATES:
        from . import acceptance

        return getattr(acceptance, name)
    if name in __all__:
        from . import lossless

        return getattr(lossless, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
