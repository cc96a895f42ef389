"""specproof.audit.engine: audit a whole generate loop against the target's own law.

``specproof audit-engine`` runs an engine's ``generate(prompt, num_new_tokens, seed)`` many
times and tests what it emitted against ``target_probs``, the target's processed law from a
plain teacher-forced pass: exact rows (layout, support, greedy argmax) that a correct engine
cannot fail, statistical rows (the exact law of the first N tokens, the randomized PIT of every
token) with stated alpha and power, and a coverage row of the draft paths exercised.
"""

from __future__ import annotations

from .audit import EngineReport, audit_engine
from .subject import Emission, Engine

__all__ = ["Emission", "Engine", "EngineReport", "audit_engine"]
