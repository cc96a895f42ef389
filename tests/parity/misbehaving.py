"""Subjects of parity reports that misbehave: verifiers (vLLM's signature) and engine factories
that exit, raise or hang, and a verifier that turns bad after the audit (on the redraw of the
plotted positions only)."""

from __future__ import annotations

import sys
import threading
from typing import Any

from plugin import engines

from specproof.audit.engine import Engine
from specproof.subjects import examples

RELEASE = threading.Event()
"""Set by a test to end the hanging calls it abandoned."""
BROKEN_AFTER_AUDIT = threading.Event()
"""Set between the audit and the redraw: ``good_then_raises`` raises from then on."""


def exits(*args: Any, **kwargs: Any) -> Any:
    sys.exit(0)


def raises_runtime_error(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the verifier's kernel failed")


def raises_value_error(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("the verifier refuses this batch")


def hangs(*args: Any, **kwargs: Any) -> Any:
    RELEASE.wait(60)
    return examples.rejection_sample(*args, **kwargs)


def good_then_raises(*args: Any, **kwargs: Any) -> Any:
    if BROKEN_AFTER_AUDIT.is_set():
        raise RuntimeError("broken on the redraw")
    return examples.rejection_sample(*args, **kwargs)


def factory_exits() -> Engine:
    sys.exit(0)


def factory_raises_runtime_error() -> Engine:
    raise RuntimeError("no model here")


def factory_raises_value_error() -> Engine:
    raise ValueError("bad model path")


def factory_hangs() -> Engine:
    RELEASE.wait(60)
    return engines.correct_engine()


def factory_returns_a_string() -> str:
    return "an engine"


def _hanging_generate(prompt: Any, num_new_tokens: int, seed: int) -> list[int]:
    RELEASE.wait(60)
    return engines.generate(prompt, num_new_tokens, seed)


def generate_hangs() -> Engine:
    return Engine(
        "hanging engine", _hanging_generate, engines.target_probs, engines.PROMPT, max_draft=2
    )
