"""specproof's own drop-in verifiers pass specproof.audit (its Python API, as the command runs it):
``specproof.optimized.compat:chain_speculative_sampling`` with the FlashInfer signature and
``specproof.optimized.compat:rejection_sample`` with the vLLM signature (ragged rows included).

Every statistical row of the audit has false-fail rate alpha = 1e-6 and draws the n that gives
power >= 1 - beta = 1 - 1e-4 against a TV discrepancy >= delta = 0.1 in the law it tests (the
completed tokens, or the emitted length), with the audit's float32 tolerance of 1e-4. The
large-vocabulary case uses V = 2048 (the command's default, 50,257, takes minutes on a CPU).
A correct verifier fails this test with probability <= (rows) x 1e-6. That the battery has
power against biased verifiers is tested in ``test_audit.py``.
"""

from __future__ import annotations

import pytest

from specproof.audit import audit
from specproof.audit.cases import verifier_problems

ALPHA = 1e-6
BETA = 1e-4
DELTA = 0.15
LARGE_VOCAB = 2048
EXPECTED_CASES = {
    "small-vocab",
    "large-vocab",
    "one-hot-draft",
    "one-hot-target",
    "p-equals-q",
    "zeros",
}


@pytest.mark.parametrize(
    ("path", "signature"),
    [
        ("specproof.optimized.compat:chain_speculative_sampling", "flashinfer"),
        ("specproof.optimized.compat:rejection_sample", "vllm"),
    ],
)
def test_compat_verifier_passes_the_audit(path: str, signature: str) -> None:
    report = audit(
        path,
        signature=signature,  # type: ignore[arg-type]
        alpha=ALPHA,
        beta=BETA,
        delta=DELTA,
        seed=0,
        problems=verifier_problems(0, LARGE_VOCAB),
    )
    assert report.passed, report.table()
    cases = {r.case for r in report.results}
    assert cases >= EXPECTED_CASES, report.table()
    assert "ragged" in cases
    assert ({"greedy", "mixed", "greedy-ties", "requests"} <= cases) == (signature == "vllm")
    checks = {"layout", "support", "round", "tokens", "length"}
    positions = {f"position {j}" for j in range(1, 10)}
    calls = {"unseeded", "repeat", "seeds", "inputs"}
    assert {row.check for row in report.results} == checks | positions | calls
    for row in report.results:
        assert row.n is not None
        if row.check in ("layout", "support", "repeat", "inputs"):
            assert row.alpha == 0  # exact checks
        else:
            assert row.alpha == ALPHA and row.beta == BETA and row.delta == DELTA
