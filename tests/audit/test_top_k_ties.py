"""Ties at the top-k edge as each engine keeps them: the reference
(:data:`specproof.reference.filters.TOP_K_TIES`), the audit's float filters
(``apply_request``) and vLLM's step (``truncate_logits_``) keep the same tokens in every order,
checked against sets written by hand; the battery's ``filters-top-k-tie`` case has the tie in
every row, and a verifier that keeps ties the other way fails it.

The audits run at alpha = 1e-6 per row and delta = 0.2 (power >= 1 - 1e-4 against TV >= 0.2);
the exact TV between the two tie rules' round laws is asserted above 0.2 first (about 0.29), so
a pass of the wrong rule has probability <= 1e-4 and a false fail of the right one <= rows x
1e-6. The rest are exact checks."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
import torch
from specproof.optimized.vllm_step import truncate_logits_
from specproof.reference.filters import FILTER_ORDERS, filtered

from specproof.audit import audit_verifier
from specproof.audit.filters import TOP_K_TIE_REQUEST, filter_problems, variant_tv
from specproof.audit.requests import apply_request
from specproof.subjects import examples

ROW = (Fraction(3, 10), Fraction(3, 10), Fraction(1, 5), Fraction(1, 5))
"""The row of the finding: ranks 1 and 2 tied, ranks 3 and 4 tied."""
LOGITS = torch.tensor([[math.log(float(p)) for p in ROW]], dtype=torch.float32)

KEPT = {
    # order: {k: kept tokens}
    "vllm": {1: {0, 1}, 2: {0, 1}, 3: {0, 1, 2, 3}},
    "sequential": {1: {0, 1}, 2: {0, 1}, 3: {0, 1, 2, 3}},
    "joint": {1: {0, 1}, 2: {0, 1}, 3: {0, 1, 2, 3}},
    "llama.cpp": {1: {0}, 2: {0, 1}, 3: {0, 1, 2}},
}
"""vLLM, HF transformers and FlashInfer keep every token tied with the k-th; llama.cpp keeps
exactly k (of tied tokens, the lower ids here)."""


def support(row: object) -> set[int]:
    return {t for t, mass in enumerate(row) if mass > 0}  # type: ignore[call-overload]


@pytest.mark.parametrize("order", FILTER_ORDERS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_reference_and_apply_request_keep_the_tokens_of_the_orders_rule(order: str, k: int) -> None:
    """Regression: the reference kept {0} at k = 1 in every order, apply_request {0, 1}."""
    for temperature in (1.0, 0.5):
        expected = KEPT[order][k]
        assert support(filtered(ROW, top_k=k, order=order)) == expected  # type: ignore[arg-type]
        processed = apply_request(LOGITS * temperature, temperature, k, None, None, order)
        assert support(processed[0].tolist()) == expected


@pytest.mark.parametrize("k", [1, 2, 3])
def test_vllms_step_keeps_the_tokens_of_vllms_order(k: int) -> None:
    """Regression: on (0.3, 0.3, 0.2, 0.2) at k = 1 the step kept {0, 1} and the reference
    in vLLM's order {0}; now both keep {0, 1}, with and without top-p behind the top-k."""
    for top_p in (None, torch.tensor([0.99])):
        logits = LOGITS.clone()
        truncate_logits_(logits, torch.tensor([1.0]), torch.tensor([k]), top_p)
        kept = {t for t in range(4) if math.isfinite(float(logits[0, t]))}
        assert kept == KEPT["vllm"][k]
        assert kept == support(filtered(ROW, top_k=k, order="vllm"))


DELTA = 0.2
TIE_CASE = {order: {p.name: p for p in filter_problems(0, order)} for order in FILTER_ORDERS}


def test_the_battery_has_a_tie_at_the_top_k_edge_in_every_row() -> None:
    """Regression: no case of the audit had a tie at the top-k edge. filters-top-k-tie (k = 2):
    ranks 2 and 3 exactly equal in every raw row; the orders keeping ties keep 3 tokens, llama.cpp
    2 (the lower id of the pair)."""
    problem = TIE_CASE["vllm"]["filters-top-k-tie"]
    assert problem.requests == (TOP_K_TIE_REQUEST,) and TOP_K_TIE_REQUEST.top_k == 2
    for row in problem.raw.reshape(-1, 6):
        ordered = sorted(row.astype("float32").tolist(), reverse=True)
        assert ordered[1] == ordered[2] and ordered[0] > ordered[1] > ordered[3]
    for order, kept in (("vllm", 3), ("sequential", 3), ("joint", 3), ("llama.cpp", 2)):
        rows = TIE_CASE[order]["filters-top-k-tie"].target.reshape(-1, 6)
        assert ((rows > 0).sum(1) == kept).all(), order
    raw = TIE_CASE["llama.cpp"]["filters-top-k-tie"].raw.reshape(-1, 6)
    exact_k = TIE_CASE["llama.cpp"]["filters-top-k-tie"].target.reshape(-1, 6)
    for row, law in zip(raw, exact_k, strict=True):
        tied = [t for t in range(6) if row[t] == sorted(row)[-2]]
        assert law[min(tied)] > 0 and law[max(tied)] == 0
    assert variant_tv(problem, order="llama.cpp") > DELTA


@pytest.mark.parametrize(
    ("audited", "verifier", "passes"),
    [
        ("vllm", examples.rejection_sample_logits, True),
        ("vllm", examples.rejection_sample_logits_llama_cpp, False),
        ("llama.cpp", examples.rejection_sample_logits_llama_cpp, True),
        ("llama.cpp", examples.rejection_sample_logits, False),
    ],
    ids=[
        "keep-ties-by-vllm",
        "keep-ties-by-llama.cpp",
        "exactly-k-by-llama.cpp",
        "exactly-k-by-vllm",
    ],
)
def test_a_verifier_passes_the_tie_case_under_its_engines_rule_only(
    audited: str, verifier: Any, passes: bool
) -> None:
    problem = TIE_CASE[audited]["filters-top-k-tie"]
    report = audit_verifier(verifier, "vllm-logits", problems=[problem], delta=DELTA, calls=False)
    assert report.passed is passes, report.table()
