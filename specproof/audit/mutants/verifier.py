"""The mutants: the one flagged verifier (:mod:`specproof.audit.flagged`) with vLLM's
``rejection_sample`` signature, correct (``make_verifier(None)``) or with one bug of the
catalogue switched on (``make_verifier(bug)``; the mutants are the catalogue's records with
``mutant`` set, :data:`specproof.audit.bugclasses.MUTANTS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..flagged import CORRECT, BugFlags, Verifier, vllm_verifier

# mypy reads optimized/ as the package ``optimized`` (see specproof.audit.examples).
if TYPE_CHECKING:
    from optimized.call_shapes import VllmRejectionSample


def make_verifier(bug: str | None = None) -> VllmRejectionSample:
    """The correct verifier (``bug`` None) or one mutant of it (a flag named in the catalogue)."""
    if bug is None:
        return vllm_verifier(CORRECT)
    return vllm_verifier(BugFlags.of(bug), f"mutant_{bug}")


rejection_sample = make_verifier()


def __getattr__(name: str) -> Verifier:
    """``mutant_<bug with underscores>``: importable mutants, e.g. for ``specproof audit
    specproof.audit.mutants.verifier:mutant_uniform_float32_le --signature vllm``."""
    if name.startswith("mutant_"):
        from ..bugclasses import mutant

        return make_verifier(mutant(name.removeprefix("mutant_").replace("_", "-")).name)
    raise AttributeError(name)
