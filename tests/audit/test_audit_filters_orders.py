"""min-p where each engine puts it: the binding cases where min-p and top-p both cut, and where
min-p before and after the temperature cut apart; a verifier in each order passes under its
engine's order and fails under the other.

Statistical audits run at alpha = 1e-6 per row and delta = 0.2 (power >= 1 - 1e-4 against
TV >= 0.2); each failing verifier's exact TV from the audited round law is asserted above 0.2
first (about 0.29 and 0.30), so a pass has probability <= 1e-4 at each failing pair and a
false fail probability <= rows x 1e-6 at each passing pair."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from specproof.reference.filters import FILTER_ORDERS

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.filters import (
    MIN_P_TEMPERATURE_REQUEST,
    MIN_P_TOP_P_REQUEST,
    FilterProblem,
    filter_problems,
    kept_tokens,
    variant_tv,
)
from specproof.audit.requests import RequestParams, apply_request, vllm_metadata
from specproof.audit.signatures import signature_named
from specproof.subjects import examples

DELTA = 0.2
CASES = {order: {p.name: p for p in filter_problems(0, order)} for order in FILTER_ORDERS}


def test_vllm_signatures_default_to_vllms_order() -> None:
    order = {name: signature_named(name).default_filter_order for name in ("vllm", "vllm-logits")}
    assert order == {"vllm": "vllm", "vllm-logits": "vllm"}
    assert signature_named("hf").default_filter_order == "sequential"
    assert signature_named("flashinfer").default_filter_order == "joint"


def test_min_p_and_top_p_bind_apart_in_every_row() -> None:
    """filters-min-p-top-p: vLLM's order keeps 2 tokens, transformers' 3, in every row; the
    first two cases' rows are those they had before these cases were added (own stream)."""
    vllm = CASES["vllm"]["filters-min-p-top-p"].target.reshape(-1, 6) > 0
    hf = CASES["sequential"]["filters-min-p-top-p"].target.reshape(-1, 6) > 0
    assert (vllm.sum(1) == 2).all() and (hf.sum(1) == 3).all()
    assert (vllm <= hf).all()
    assert variant_tv(CASES["vllm"]["filters-min-p-top-p"], order="sequential") > DELTA


def test_min_p_before_the_temperature_cuts_apart_in_every_row() -> None:
    """filters-min-p-temperature (T = 0.5, min-p 0.35): after the temperature 3 tokens are
    kept, before it 5: the ratio to the argmax of a kept token, r at T, is r^0.5 before."""
    problem = CASES["vllm"]["filters-min-p-temperature"]
    after = problem.target.reshape(-1, 6) > 0
    before = CASES["llama.cpp"]["filters-min-p-temperature"].target.reshape(-1, 6) > 0
    assert (after.sum(1) == 3).all() and (before.sum(1) == 5).all()
    raw = problem.raw.reshape(-1, 6)
    ratio = raw / raw.max(1, keepdims=True)
    min_p = MIN_P_TEMPERATURE_REQUEST.min_p
    assert np.array_equal(after, ratio >= min_p)
    assert np.array_equal(before, ratio**MIN_P_TEMPERATURE_REQUEST.temperature >= min_p)
    assert variant_tv(problem, order="llama.cpp") > DELTA


def test_every_cut_keeps_its_distance_from_its_threshold_in_every_order() -> None:
    """Moving top-p and min-p by 1e-3 changes no kept token in any order, on every case's rows
    (float32 rounding of the logits is about 1e-7): a float verifier cuts as the exact rows."""
    for problem in CASES["vllm"].values():
        params = problem.requests[0]
        for index in np.ndindex(problem.raw.shape[:-1]):
            row = problem.raw[index]
            for order in FILTER_ORDERS:
                kept = kept_tokens(row, params, order)
                for shift in (-1e-3, 1e-3):
                    assert kept_tokens(row, params, order, shift) == kept, (problem.name, order)


@pytest.mark.parametrize("order", FILTER_ORDERS)
def test_float_filters_match_the_exact_rows_in_every_order(order: str) -> None:
    """apply_request in ``order`` on the float32 logits a verifier is sent keeps exactly the
    tokens of the exact rows in that order, with masses within 1e-6."""
    for problem in CASES[order].values():  # type: ignore[index]
        params = problem.requests[0]
        raw = torch.from_numpy(problem.raw.reshape(-1, problem.vocab)).float()
        logits = (torch.log(raw.double()) * params.temperature).float()
        ours = apply_request(
            logits, params.temperature, params.top_k, params.top_p, params.min_p, order
        )
        exact = problem.target32.reshape(-1, problem.vocab).double()
        assert bool(((ours > 0) == (exact > 0)).all()), problem.name
        assert float((ours - exact).abs().max()) < 1e-6


def _audit(fn: Any, problem: FilterProblem) -> Any:
    return audit_verifier(fn, "vllm-logits", problems=[problem], delta=DELTA, calls=False)


@pytest.mark.parametrize(
    ("case", "audited", "verifier", "passes"),
    [
        ("filters-min-p-top-p", "vllm", examples.rejection_sample_logits, True),
        ("filters-min-p-top-p", "vllm", examples.rejection_sample_logits_min_p_last, False),
        ("filters-min-p-top-p", "sequential", examples.rejection_sample_logits_min_p_last, True),
        ("filters-min-p-top-p", "sequential", examples.rejection_sample_logits, False),
        ("filters-min-p-temperature", "vllm", examples.rejection_sample_logits, True),
        ("filters-min-p-temperature", "vllm", examples.rejection_sample_logits_llama_cpp, False),
        (
            "filters-min-p-temperature",
            "llama.cpp",
            examples.rejection_sample_logits_llama_cpp,
            True,
        ),
        ("filters-min-p-temperature", "llama.cpp", examples.rejection_sample_logits, False),
    ],
    ids=[
        "top-p:vllm-by-vllm",
        "top-p:vllm-by-hf",
        "top-p:hf-by-hf",
        "top-p:hf-by-vllm",
        "temperature:vllm-by-vllm",
        "temperature:vllm-by-llama.cpp",
        "temperature:llama.cpp-by-llama.cpp",
        "temperature:llama.cpp-by-vllm",
    ],
)
def test_a_verifier_passes_under_its_engines_order_only(
    case: str, audited: str, verifier: Any, passes: bool
) -> None:
    report = _audit(verifier, CASES[audited][case])  # type: ignore[index]
    assert report.passed is passes, report.table()
    if not passes:
        failed = {r.check for r in report.results if not r.passed}
        assert failed & {"round", "support"}, report.table()


def test_the_cases_request_what_their_docstrings_say() -> None:
    assert (MIN_P_TOP_P_REQUEST.top_p, MIN_P_TOP_P_REQUEST.min_p) == (0.655, 0.2)
    assert MIN_P_TOP_P_REQUEST.top_k is None and MIN_P_TEMPERATURE_REQUEST.top_p is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((1.0, None, 0.0), r"top_p must lie in \(0, 1\]"),
        ((1.0, None, float("nan")), r"top_p must lie in \(0, 1\]"),
        ((0.0, None, None), "temperature must be finite and > 0"),
        ((float("nan"), None, None), "temperature must be finite and > 0"),
        ((float("inf"), None, None), "temperature must be finite and > 0"),
        ((1.0, 0, None), "top_k must be an integer"),
        ((1.0, 2.5, None), "top_k must be an integer"),
        ((1.0, None, None, float("nan")), r"min_p must lie in \[0, 1\]"),
        ((1.0, None, None, 1.5), r"min_p must lie in \[0, 1\]"),
    ],
)
def test_apply_request_refuses_bad_parameters(arguments: tuple[Any, ...], message: str) -> None:
    """Regression: ``apply_request`` with top_p = 0 or temperature = 0 returned NaN rows."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    with pytest.raises(ValueError, match=message):
        apply_request(logits, *arguments)


@pytest.mark.parametrize(
    "keywords",
    [
        {"temperature": float("nan")},
        {"temperature": 0.0},
        {"temperature": 1.0, "top_p": 0.0},
        {"temperature": 1.0, "top_k": 0},
        {"temperature": 1.0, "min_p": float("nan")},
    ],
)
def test_request_params_refuse_bad_parameters(keywords: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must"):
        RequestParams(**keywords)


def test_metadata_refuses_a_negative_batch_and_the_settings_a_nan_marker() -> None:
    with pytest.raises(ValueError, match="batch must be an integer"):
        vllm_metadata(-1)
    with pytest.raises(ValueError, match="greedy marker"):
        AuditSettings.of("vllm", marker=float("nan"))
