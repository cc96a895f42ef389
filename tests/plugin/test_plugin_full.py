"""The plugin at level full (power 0.99 against TV 0.1, alpha 1e-6 per row) on the audit's
example verifiers of every signature, and on the tiny engine: each passes, each twin fails.
Slow (docs/guide/ci_integration.md's per-signature times come from this file:
``pytest -m slow -s``)."""

from __future__ import annotations

import time

import pytest
from plugin import engines

from specproof.subjects import examples
from specproof.testing import assert_engine_lossless, assert_lossless

VERIFIERS = {
    "flashinfer": examples.chain_speculative_sampling,
    "vllm": examples.rejection_sample,
    "vllm-logits": examples.rejection_sample_logits,
    "hf": examples.speculative_sampling,
}


@pytest.mark.slow
@pytest.mark.parametrize("signature", sorted(VERIFIERS))
def test_full_level_passes_a_correct_verifier(signature: str) -> None:
    start = time.perf_counter()
    outcome = assert_lossless(VERIFIERS[signature], signature)
    assert outcome.twin is not None and not outcome.twin_escaped
    print(f"TIMING {signature}: {time.perf_counter() - start:.1f} s")


@pytest.mark.slow
def test_full_level_passes_a_correct_engine() -> None:
    start = time.perf_counter()
    outcome = assert_engine_lossless(
        engines.generate, engines.target_probs, engines.PROMPT, num_new_tokens=3
    )
    assert outcome.twin is not None and not outcome.twin_escaped
    print(f"TIMING engine: {time.perf_counter() - start:.1f} s")
