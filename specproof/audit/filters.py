"""Request filters that bind: cases whose top-k, top-p and min-p remove tokens that carry mass.

The request case of :mod:`specproof.audit.cases` builds raw logits whose filters remove exactly
the tokens of zero processed mass, so every order of the filters gives the same law. Here the
case gives the raw rows (the unfiltered law at the request's temperature) and the processed
rows are computed from them exactly by :func:`specproof.reference.filters.filtered` under a
declared order (:data:`specproof.reference.filters.ORDER_STEPS`: ``vllm``, ``sequential`` as
HF transformers' warpers, ``joint`` as FlashInfer's joint sampling and SGLang's regular
sampler, ``llama.cpp`` with every cut before the temperature). Every statistical and exact row
of the audit is then taken at those processed rows:

- ``filters-order``: top-k = 4 removes two tokens with mass, and top-p = 0.7 removes one more
  token on the full law but two on the renormalised top-k law, so ``sequential`` and ``joint``
  keep different tokens in every row (exact TV between them: :func:`order_tv`).
- ``filters-min-p``: min-p = 0.2 removes tokens with raw mass about 0.06 and 0.04 (top-k = 5 the
  second only); a verifier that skips min-p at verified positions puts mass on the first, an
  outcome of probability 0 (vLLM issue 42744's class).
- ``filters-min-p-top-p``: min-p and top-p both bind, so the nucleus of the law min-p left
  (``vllm``) keeps 2 tokens and the nucleus of the full law (``sequential``) 3.
- ``filters-min-p-temperature``: at T = 0.5 min-p cuts 3 tokens after the temperature and 5
  before it (``llama.cpp``).
- ``filters-top-k-tie``: top-k = 2 with ranks 2 and 3 exactly tied (equal float32 logits): the
  orders that keep ties (``vllm``, ``sequential``, ``joint``) keep 3 tokens, ``llama.cpp`` exactly
  2, the lower id of the tied pair (:data:`specproof.reference.filters.TOP_K_TIES`).

Every cut of the first two cases is at least :data:`MARGIN` away from its threshold in the
orders they were built for, every cut of the others in every order, so float32 logits cut
exactly as the exact rows do. The verifier receives raw logits (``vllm-logits``; ``hf`` when it
accepts the keywords ``top_k``, ``top_p`` and ``min_p``), or the processed rows and vLLM's
metadata (``vllm``); FlashInfer's signature carries no request parameters, so the cases skip it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import torch

from specproof.reference.filters import FILTER_ORDERS, FilterOrder, filtered, ranked, restricted

from .audit_settings import AuditSettings
from .drafting import DraftFn, draft_rounds
from .problems import TableProblem
from .requests import RequestParams
from .rounds import RoundFn, verifier_round
from .signatures import Verifier, VerifierSignature
from .structure import check_structure

MARGIN = 0.005
"""Smallest distance of every filter decision from its threshold (float32 rounding is ~1e-7)."""

ORDER_REQUEST = RequestParams(0.8, top_k=4, top_p=0.7, binding=True)
ORDER_MASSES = (0.36, 0.28, 0.14, 0.10, 0.07, 0.05)
"""Sorted raw masses of a filters-order row: the top-4 hold 0.88, so the renormalised law's
nucleus at 0.7 stops after 2 tokens (0.64 >= 0.7 x 0.88) and the full law's after 3."""
MIN_P_REQUEST = RequestParams(0.9, top_k=5, min_p=0.2, binding=True)
MIN_P_MASSES = (0.40, 0.25, 0.15, 0.10, 0.06, 0.04)
"""Sorted raw masses of a filters-min-p row: min-p 0.2 cuts below 0.08."""
MIN_P_TOP_P_REQUEST = RequestParams(0.8, top_p=0.655, min_p=0.2, binding=True)
MIN_P_TOP_P_MASSES = (0.40, 0.22, 0.18, 0.10, 0.06, 0.04)
"""Sorted raw masses of a filters-min-p-top-p row: min-p 0.2 cuts below 0.08 (two tokens, 0.10
of the mass); the nucleus at 0.655 of the full law stops after 3 tokens (0.62 < 0.655), of the
min-p-renormalised law after 2 (0.62 / 0.90 = 0.689 >= 0.655): vLLM's order keeps 2 tokens,
transformers' (min-p last) 3."""
TOP_K_TIE_REQUEST = RequestParams(0.9, top_k=2, binding=True)
TOP_K_TIE_MASSES = (0.40, 0.22, 0.22, 0.08, 0.05, 0.03)
"""Sorted raw masses of a filters-top-k-tie row: ranks 2 and 3 stay exactly equal (jittered
together), at least 0.1 from the masses above and below them."""
MIN_P_TEMPERATURE_REQUEST = RequestParams(0.5, min_p=0.35, binding=True)
MIN_P_TEMPERATURE_MASSES = (0.40, 0.20, 0.15, 0.12, 0.10, 0.03)
"""Sorted raw masses (the law at T = 0.5) of a filters-min-p-temperature row: ratios to the
largest 1, 0.5, 0.375, 0.3, 0.25, 0.075, so min-p 0.35 after the temperature keeps 3 tokens;
before it the ratios are their square roots (1, 0.71, 0.61, 0.55, 0.5, 0.27): llama.cpp keeps
5."""


@dataclass(frozen=True)
class FilterProblem(TableProblem):
    """A table problem whose target rows are ``raw`` filtered by its single request in
    ``order``; ``raw`` is what the verifier's logits encode."""

    raw: np.ndarray = field(default_factory=lambda: np.zeros((0,)))
    order: FilterOrder = "sequential"


def exact_law(raw: np.ndarray, params: RequestParams, order: FilterOrder) -> tuple[Fraction, ...]:
    """The processed law of one float32 raw row (the law at the request's temperature), exactly.
    llama.cpp cuts before the temperature, on softmax(logits) = raw^T renormalised: its cuts are
    taken on that law computed in float64 (every cut keeps :data:`MARGIN` from its threshold),
    and the law at the temperature is restricted to the tokens they keep."""
    row = [Fraction(float(v)) for v in raw.astype(np.float32)]
    total = sum(row, Fraction(0))
    probs = [v / total for v in row]
    top_p = None if params.top_p is None else Fraction(params.top_p)
    min_p = None if params.min_p is None else Fraction(params.min_p)
    if order != "llama.cpp":
        return filtered(probs, top_k=params.top_k, top_p=top_p, min_p=min_p, order=order)
    powers = [
        Fraction(float(v)) for v in raw.astype(np.float32).astype(np.float64) ** params.temperature
    ]
    law = [v / sum(powers, Fraction(0)) for v in powers]
    cut = filtered(law, top_k=params.top_k, top_p=top_p, min_p=min_p, order="llama.cpp")
    return restricted(probs, {token for token, mass in enumerate(cut) if mass > 0})


def exact_rows(raw: np.ndarray, params: RequestParams, order: FilterOrder) -> np.ndarray:
    """The processed rows, exactly (from the float32 raw rows the verifier's logits encode)."""
    out = np.zeros(raw.shape)
    for index in np.ndindex(raw.shape[:-1]):
        out[index] = [float(v) for v in exact_law(raw[index], params, order)]
    return out


def kept_tokens(
    row: np.ndarray, params: RequestParams, order: FilterOrder, shift: float = 0.0
) -> frozenset[int]:
    """The tokens ``order`` keeps in ``row`` with top-p and min-p moved by ``shift``."""
    moved = replace(
        params,
        top_p=None if params.top_p is None else min(1.0, params.top_p + shift),
        min_p=None if params.min_p is None else max(0.0, params.min_p + shift),
    )
    law = exact_law(row, moved, order)
    return frozenset(token for token, mass in enumerate(law) if mass > 0)


def robust_in_every_order(row: np.ndarray, params: RequestParams) -> bool:
    """Whether every order keeps the same tokens with top-p and min-p moved by +-MARGIN: no cut
    of any order is within MARGIN of its threshold."""
    return all(
        kept_tokens(row, params, order, shift) == kept_tokens(row, params, order)
        for order in FILTER_ORDERS
        for shift in (-MARGIN, MARGIN)
    )


def decision_margin(row: np.ndarray, params: RequestParams) -> float:
    """The smallest distance of any cut of ``row`` from its threshold, over both orders."""
    probs = [Fraction(float(v)) for v in row]
    order = ranked(probs)
    masses = [float(probs[t]) for t in order]
    gaps = [1.0]
    if params.top_k is not None and params.top_k < len(row):
        kth = masses[params.top_k - 1]
        if kth == masses[params.top_k]:  # an exact tie: each order's tie rule decides it
            gaps += [abs(mass - kth) for mass in masses if mass != kth]
        else:
            gaps.append(kth - masses[params.top_k])
    if params.top_p is not None:
        scales = [1.0]
        if params.top_k is not None:
            scales.append(sum(masses[: params.top_k]))
        before = np.cumsum([0.0, *masses[:-1]])
        gaps += [abs(b - params.top_p * s) for s in scales for b in before]
    if params.min_p is not None:
        gaps += [abs(m - params.min_p * masses[0]) for m in masses]
    return min(gaps)


def binds(
    row: np.ndarray, params: RequestParams, apart: tuple[FilterOrder, FilterOrder] | None = None
) -> bool:
    """Whether the filters cut tokens with mass as the case needs: the orders ``apart`` keep
    different tokens; otherwise, with top-k and top-p, sequential and joint keep different
    tokens, and with min-p, it removes a token top-k keeps."""
    if apart is not None:
        first, second = (kept_tokens(row, params, order) for order in apart)
        return first != second and robust_in_every_order(row, params)
    probs = [Fraction(float(v)) for v in row]
    total = sum(probs, Fraction(0))
    probs = [v / total for v in probs]
    top_p = None if params.top_p is None else Fraction(params.top_p)
    min_p = None if params.min_p is None else Fraction(params.min_p)
    if top_p is not None and params.top_k is not None:
        laws = [
            filtered(probs, top_k=params.top_k, top_p=top_p, order=order) for order in FILTER_ORDERS
        ]
        if [v > 0 for v in laws[0]] == [v > 0 for v in laws[1]]:
            return False
    if min_p is not None:
        with_min_p = filtered(probs, top_k=params.top_k, min_p=min_p)
        without = filtered(probs, top_k=params.top_k)
        if sum(v > 0 for v in with_min_p) == sum(v > 0 for v in without):
            return False
    return True


def raw_rows(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    masses: tuple[float, ...],
    params: RequestParams,
    apart: tuple[FilterOrder, FilterOrder] | None = None,
) -> np.ndarray:
    """Rows of the template ``masses`` (jittered, tokens permuted) on which the filters bind
    (:func:`binds`) and every cut keeps :data:`MARGIN` from its threshold; masses equal in the
    template stay exactly equal."""
    out = np.zeros((*shape, len(masses)))
    template = np.asarray(masses)
    for index in np.ndindex(shape):
        while True:
            row = template * np.exp(0.05 * rng.standard_normal(len(masses)))
            for mass in np.unique(template):
                tied = template == mass
                if tied.sum() > 1:
                    row[tied] = row[tied].mean()
            row /= row.sum()
            if decision_margin(row, params) >= MARGIN and binds(row, params, apart):
                break
        out[index] = row[rng.permutation(len(masses))]
    return out


BINDING_CASES: tuple[
    tuple[str, RequestParams, tuple[float, ...], str, tuple[FilterOrder, FilterOrder] | None],
    ...,
] = (
    ("filters-order", ORDER_REQUEST, ORDER_MASSES, "top-k 4 and top-p 0.7 both bind", None),
    ("filters-min-p", MIN_P_REQUEST, MIN_P_MASSES, "min-p 0.2 binds (top-k 5)", None),
    (
        "filters-min-p-top-p",
        MIN_P_TOP_P_REQUEST,
        MIN_P_TOP_P_MASSES,
        "min-p 0.2 and top-p 0.655 both bind",
        ("vllm", "sequential"),
    ),
    (
        "filters-min-p-temperature",
        MIN_P_TEMPERATURE_REQUEST,
        MIN_P_TEMPERATURE_MASSES,
        "min-p 0.35 at T = 0.5 cuts apart from min-p before it",
        ("vllm", "llama.cpp"),
    ),
    (
        "filters-top-k-tie",
        TOP_K_TIE_REQUEST,
        TOP_K_TIE_MASSES,
        "top-k 2 with ranks 2 and 3 tied",
        ("vllm", "llama.cpp"),
    ),
)
"""Each binding case: name, request, template masses, what binds, and the two orders whose
kept tokens must differ in every row (None: the first two cases' own conditions)."""


def filter_problems(seed: int = 0, order: FilterOrder = "sequential") -> list[FilterProblem]:
    """The binding cases (V = 6, gamma = 2, two states, draft lengths 0..2, random rows) under
    ``order``; their own random stream, so the rest of the battery is unchanged (and the cases
    added later draw after the earlier ones, whose rows stay as they were)."""
    if order not in FILTER_ORDERS:
        raise ValueError(f"filter order must be one of {FILTER_ORDERS}, got {order!r}")
    rng = np.random.default_rng([seed, 34])
    gamma, states = 2, 2
    out = []
    for name, params, masses, what, apart in BINDING_CASES:
        raw = raw_rows(rng, (gamma + 1, states), masses, params, apart)
        draft = rng.gamma(0.6, size=(gamma, states, len(masses)))
        draft /= draft.sum(axis=-1, keepdims=True)
        out.append(
            FilterProblem(
                name,
                exact_rows(raw, params, order),
                draft,
                ragged=True,
                requests=(params,),
                description=f"V=6, {what} on tokens with mass, {order} order",
                raw=raw,
                order=order,
            )
        )
    return out


def variant_tv(
    problem: FilterProblem, params: RequestParams | None = None, order: FilterOrder | None = None
) -> float:
    """The exact TV between the audited round law and the round law of the same raw rows
    processed with other ``params`` or in another ``order``: what a verifier that filters
    that way is off by (the power of every statistical row is stated against TV >= delta)."""
    from .laws import exact_round_law

    rows = exact_rows(problem.raw, params or problem.requests[0], order or problem.order)
    mine, theirs = exact_round_law(problem), exact_round_law(replace(problem, target=rows))
    return sum(abs(mine.get(k, 0.0) - theirs.get(k, 0.0)) for k in {*mine, *theirs}) / 2


def order_tv(problem: FilterProblem) -> float:
    """:func:`variant_tv` of the other filter order."""
    return variant_tv(problem, order="joint" if problem.order == "sequential" else "sequential")


def reaches(fn: Verifier, signature: VerifierSignature) -> bool:
    """Whether ``fn`` can be audited on the binding cases with ``signature``."""
    return signature.reaches_filters(fn)


def raw_target(problem: FilterProblem, tokens: torch.Tensor) -> torch.Tensor:
    """[B, gamma + 1, V] float32 raw rows behind each drafted row's target rows."""
    raw = torch.from_numpy(problem.raw).to(torch.float32)
    state = torch.full(tokens.shape[:1], problem.prompt_state, dtype=torch.int64)
    rows = []
    for k in range(problem.gamma + 1):
        rows.append(raw[k][state])
        if k < problem.gamma:
            state = tokens[:, k] % problem.states
    return torch.stack(rows, 1)


def filter_round(fn: Verifier, settings: AuditSettings, drafter: DraftFn | None = None) -> RoundFn:
    """:func:`specproof.audit.rounds.verifier_round`, with binding cases' target rows sent raw
    (``vllm-logits``: logits T log raw; ``hf``: the same logits and the filters as keywords)."""
    signature = settings.signature
    plain = verifier_round(fn, settings, drafter)

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> Any:
        if not isinstance(problem, FilterProblem) or not signature.filters_sent_raw:
            return plain(problem, batch, generator)
        drafts = draft_rounds(problem, batch, generator, drafter=drafter)
        raw = raw_target(problem, drafts.tokens)
        params = problem.requests[0]
        out = signature.call_raw(fn, drafts, raw, params, problem, generator, settings)
        check_structure(out, drafts, problem.vocab)
        return out, drafts

    return run
