"""Ties at the top-k edge as each engine keeps them: the reference
(:data:`specproof.reference.filters.TOP_K_TIES`), the audit's float filters
(``apply_request``) and vLLM's step (``truncate_logits_``) keep the same tokens in every order,
checked against sets written by hand. Exact checks: no false-fail risk."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from specproof.optimized.vllm_step import truncate_logits_
from specproof.reference.filters import FILTER_ORDERS, filtered

from specproof.audit.requests import apply_request

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
