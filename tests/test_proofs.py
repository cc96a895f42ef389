"""Every theorem's certificate (proofs/), at the default size. Each test names its theorem id."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

CERTIFICATES = Path(__file__).resolve().parent.parent / "proofs" / "certificates"
THEOREM_FILES = [
    (1, "chain"),
    (2, "non_anticipating"),
    (3, "algorithm1"),
    (4, "greedy"),
    (5, "lookahead"),
    (6, "trees"),
    (7, "expected_tokens"),
    (8, "block"),
]


def certificate(name: str) -> ModuleType:
    if str(CERTIFICATES) not in sys.path:
        sys.path.insert(0, str(CERTIFICATES))
    return importlib.import_module(name)


@pytest.mark.parametrize(
    ("theorem", "module"), [(f"T{i}", f"t{i}_{name}") for i, name in THEOREM_FILES]
)
def test_certificate(theorem: str, module: str) -> None:
    """The certificate of ``theorem`` passes at its default size."""
    outcome = certificate(module).main(thorough=False)
    assert outcome.theorem == theorem


@pytest.mark.slow
@pytest.mark.parametrize("module", [f"t{i}_{n}" for i, n in THEOREM_FILES])
def test_certificate_thorough(module: str) -> None:
    """Each certificate at its thorough size (larger grids, more seeds): `nox -s thorough`."""
    certificate(module).main(thorough=True)


def test_t2_cross_coupled_admission_is_biased() -> None:
    """T2: per-request non-anticipation without one common order of draws is not enough."""
    certificate("t2_non_anticipating").cross_coupled_counterexample()


def test_t3_reverse_position_ties_are_anticipating() -> None:
    """T3: Algorithm 1 with reverse-position ties reads x_2 to admit x_2 and biases the law."""
    certificate("t3_algorithm1").reverse_tie_counterexample()


def test_t4_named_counterexamples() -> None:
    """T4: jagged SPS (walk 1 vs 567/500), plateau (1 vs 3/2), non-unimodal yet optimal."""
    certificate("t4_greedy").named_counterexamples()


def test_t5_appendix_a() -> None:
    """T5: Appendix A, global search (17/20, 3/20) and Algorithm 1 (7/10, 3/10), exactly."""
    certificate("t5_lookahead").appendix_a_laws()


def test_t8_harmful_lookahead_and_token_wise_residual() -> None:
    """T8: block verification does not survive admission that reads the block."""
    certificate("t8_block").harmful_lookahead()
