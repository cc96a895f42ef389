"""Per-request sampling parameters as engines send them: vLLM's sampling metadata (greedy marker,
temperature, top-k, top-p, min-p, per-request generators) and raw target logits built so that
applying each request's parameters gives the audited (processed) target rows exactly.

A request's processed target is softmax(logits / T) restricted to its top-k tokens and to its
top-p nucleus. The battery's rows keep a set of tokens with mass and have exact zeros elsewhere;
the raw logits give the zero tokens raw mass ``dropped`` (split evenly) that top-k (k = the kept
count) and top-p remove with a wide margin under either order of the two filters: the dropped
mass is at most 1 - top_p, and the dropped mass plus the smallest kept one exceeds it. A request
with neither filter gets the zero tokens at logit -1e4, which every softmax maps to exactly 0.
So every request's processed target equals the problem's row, whatever its parameters, and the
exact laws computed at that row are the laws of the processed target.

Requests marked ``binding`` work the other way round (:mod:`specproof.audit.filters`): their
case gives the raw rows, on which the filters remove tokens that carry mass, and the processed
rows are computed from them by the reference under a declared filter order.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import SimpleNamespace

import torch

from specproof.reference.filters import ORDER_STEPS, TOP_K_TIES

from .settings import CallSettings

GREEDY_TEMPERATURE = 0.0
"""vLLM's greedy marker in its sampling metadata since vLLM PR 27077 (October 2025)."""
LEGACY_GREEDY_TEMPERATURE = -1.0
"""The marker before vLLM PR 27077 (releases up to 0.11; ``--greedy-marker -1``)."""
MASKED_LOGIT = -1.0e4
"""A raw logit whose softmax is exactly 0 at every temperature used here."""


def checked_request(
    temperature: float, top_k: int | None, top_p: float | None, min_p: float | None
) -> None:
    """Refuse a request's parameters unless finite and in range (vLLM's own bounds)."""
    if isinstance(temperature, bool) or not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {temperature}")
    if top_k is not None and not (
        isinstance(top_k, numbers.Integral) and not isinstance(top_k, bool) and top_k >= 1
    ):
        raise ValueError(f"top_k must be an integer of at least 1, got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:  # also refuses NaN
        raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
    if min_p is not None and not 0 <= min_p <= 1:
        raise ValueError(f"min_p must lie in [0, 1], got {min_p}")


@dataclass(frozen=True)
class RequestParams:
    """One request's sampling parameters (temperature > 0: a random request)."""

    temperature: float
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    binding: bool = False
    """The case supplies raw rows on which these filters remove tokens with mass (the processed
    rows are computed from them, not the raw logits from the processed rows)."""

    def __post_init__(self) -> None:
        checked_request(self.temperature, self.top_k, self.top_p, self.min_p)

    @property
    def filters(self) -> bool:
        return self.top_k is not None or self.top_p is not None or self.min_p is not None

    def dropped_mass(self) -> float:
        """Raw mass given to the tokens the filters remove (0 when there is no filter)."""
        if not self.filters:
            return 0.0
        return 0.05 if self.top_p is None else (1.0 - self.top_p) / 2


def request_kinds(kept: int) -> tuple[RequestParams, ...]:
    """Random requests mixed in one batch: temperatures 0.6-1.3, top-k = ``kept``, and two
    different top-p values below 1 that drop mass. ``kept`` is the number of tokens with mass
    in every row; every kept token needs mass above (1 - 0.9) / (1 - 0.05) for the margins."""
    return (
        RequestParams(1.0),
        RequestParams(0.7, top_k=kept),
        RequestParams(1.3, top_p=0.9),
        RequestParams(0.6, top_k=kept, top_p=0.95),
    )


def raw_logits(
    rows: torch.Tensor, temperature: torch.Tensor, dropped: torch.Tensor
) -> torch.Tensor:
    """Raw float32 logits ``[N, V]`` whose processed rows (temperature, then the request's
    filters) are ``rows``: kept tokens at T log p, zero tokens sharing raw mass ``dropped``
    (or at :data:`MASKED_LOGIT` where ``dropped`` is 0). ``temperature`` <= 0 marks greedy rows,
    built at T = 1 (their processed row is the argmax of either)."""
    rows64 = rows.double()
    scale = torch.where(temperature > 0, temperature.double(), 1.0).unsqueeze(1)
    kept = rows64 > 0
    zeros = (~kept).sum(1, keepdim=True).clamp_min(1)
    share = dropped.double().unsqueeze(1) / zeros / (1 - dropped.double().unsqueeze(1))
    log_kept = torch.log(torch.where(kept, rows64, 1.0))
    log_zero = torch.log(share.clamp_min(1e-300)).expand_as(rows64)
    logits = torch.where(kept, log_kept, log_zero) * scale
    masked = (~kept) & (dropped.unsqueeze(1) <= 0)
    return torch.where(masked, MASKED_LOGIT, logits).to(torch.float32)


def check_margins(rows: torch.Tensor, params: RequestParams) -> None:
    """Refuse rows on which the request's filters would not remove exactly the zero tokens."""
    if not params.filters or params.binding:
        return
    if params.min_p is not None:
        raise ValueError("min_p is audited on binding rows only (specproof.audit.filters)")
    kept = rows > 0
    smallest = torch.where(kept, rows.double(), 2.0).min(1).values
    dropped = params.dropped_mass()
    if params.top_k is not None and bool((kept.sum(1) != params.top_k).any()):
        raise ValueError(f"top_k = {params.top_k} needs exactly that many kept tokens per row")
    zeros = (~kept).sum(1).clamp_min(1).double()
    if bool((dropped / zeros >= smallest * (1 - dropped)).any()):
        raise ValueError("a dropped token would outrank a kept one")
    if params.top_p is not None:
        tail = 1 - params.top_p
        if not (dropped <= tail and bool((dropped + smallest * (1 - dropped) > tail).all())):
            raise ValueError(f"top_p = {params.top_p} would not remove exactly the zero tokens")
        if bool((smallest <= tail).any()):
            raise ValueError(f"top_p = {params.top_p} after top-k would remove a kept token")


def vllm_metadata(
    batch: int,
    greedy: torch.Tensor | None = None,
    *,
    settings: CallSettings | None = None,
    params: list[RequestParams] | None = None,
    generators: dict[int, torch.Generator] | None = None,
    vocab: int | None = None,
) -> SimpleNamespace:
    """The fields of vLLM's SamplingMetadata that rejection sampling reads: greedy rows carry
    ``settings.marker`` as temperature (no settings: :data:`GREEDY_TEMPERATURE`); ``top_k``
    (int tensor, ``vocab`` = off), ``top_p`` (float
    tensor, 1 = off) and ``min_p`` (float tensor, 0 = off) are None when no request in the batch
    sets them, as vLLM sends them;
    ``generators`` maps a request's row to its own torch.Generator (seeded requests only)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 0:
        raise ValueError(f"batch must be an integer >= 0, got {batch!r}")
    marker = GREEDY_TEMPERATURE if settings is None else settings.marker
    if greedy is None:
        greedy = torch.zeros(batch, dtype=torch.bool)
    if params is None:
        params = [RequestParams(1.0)] * batch
    temperature = torch.tensor([p.temperature for p in params], dtype=torch.float32)
    temperature = torch.where(greedy, marker, temperature).to(torch.float32)
    random = [p for p, g in zip(params, greedy.tolist(), strict=True) if not g]
    top_k = top_p = None
    if any(p.top_k is not None for p in random):
        off = vocab if vocab is not None else 2**31 - 1
        top_k = torch.tensor(
            [off if p.top_k is None or g else p.top_k for p, g in zip(params, greedy, strict=True)],
            dtype=torch.int32,
        )
    if any(p.top_p is not None for p in random):
        top_p = torch.tensor(
            [1.0 if p.top_p is None or g else p.top_p for p, g in zip(params, greedy, strict=True)],
            dtype=torch.float32,
        )
    min_p = None
    if any(p.min_p is not None for p in random):
        min_p = torch.tensor(
            [0.0 if p.min_p is None or g else p.min_p for p, g in zip(params, greedy, strict=True)],
            dtype=torch.float32,
        )
    return SimpleNamespace(
        all_greedy=bool(greedy.all()) and batch > 0,
        all_random=not bool(greedy.any()),
        temperature=temperature,
        generators=dict(generators or {}),
        top_k=top_k,
        top_p=top_p,
        min_p=min_p,
        max_num_logprobs=None,
    )


def apply_request(
    logits: torch.Tensor,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    min_p: float | None = None,
    order: str = "sequential",
) -> torch.Tensor:
    """softmax(logits / T) filtered, in float64: what an engine does to the target logits of a
    random request before verification, by the steps of ``order``
    (:data:`specproof.reference.filters.ORDER_STEPS`; each step cuts the law the steps before it
    left, renormalised; before the temperature step that law is softmax(logits)). Top-k keeps
    the k largest logits left and, by the order's tie rule
    (:data:`specproof.reference.filters.TOP_K_TIES`), every logit equal to the k-th or exactly k
    (the lower ids of tied ones). The nucleus is the smallest set of most probable tokens
    holding >= top_p of the mass; min-p keeps tokens with mass >= min_p times the largest."""
    if order not in ORDER_STEPS:
        raise ValueError(f"unknown filter order {order!r}")
    checked_request(temperature, top_k, top_p, min_p)
    scaled = logits.double() / temperature
    laws = {True: torch.softmax(scaled, -1), False: torch.softmax(logits.double(), -1)}
    tempered = False  # whether the engine has applied the temperature yet
    keep = laws[True] > 0
    cuts_top_k = top_k is not None and top_k < logits.shape[-1]
    for step in ORDER_STEPS[order]:
        seen = torch.where(keep, laws[tempered], 0.0)
        seen = seen / seen.sum(-1, keepdim=True)
        if step == "temperature":
            tempered = True
        elif step in ("top-k", "top-k and top-p") and cuts_top_k:
            left = torch.where(keep, scaled, -math.inf)
            if TOP_K_TIES[order] == "exactly k":
                first = left.sort(dim=-1, descending=True, stable=True).indices[..., :top_k]
                keep &= torch.zeros_like(keep).scatter(-1, first, True)
            else:
                keep &= left >= left.topk(int(top_k), dim=-1).values[..., -1:]  # type: ignore[arg-type]
        if step in ("top-p", "top-k and top-p") and top_p is not None and top_p < 1:
            ordered, index = seen.sort(dim=-1, descending=True, stable=True)
            before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
            drop_sorted = before >= top_p
            keep &= ~torch.zeros_like(drop_sorted).scatter(-1, index, drop_sorted)
        elif step == "min-p" and min_p is not None and min_p > 0:
            keep &= seen >= min_p * seen.max(-1, keepdim=True).values
    out = torch.where(keep, laws[True], 0.0)
    return out / out.sum(-1, keepdim=True)
