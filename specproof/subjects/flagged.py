"""The one chain verifier with bug flags: correct with every flag off, one known bug per flag
(the catalogue, :mod:`specproof.subjects.bugs`, names them). The example verifiers, the
public bug classes' models and the mutants are all built here.

Semantics with every flag off: dense rows (ragged vLLM rows gathered dense), acceptance
u * q(x) < p(x) with a float64 u in [0, 1), the token after a rejection by the inverse CDF of
norm(max(p - q, 0)), the bonus token given (vLLM) or drawn from the next target row, greedy rows
(vLLM temperature <= 0) keep drafts equal to the target argmax, ``draft_probs=None`` means
one-hot (n-gram) drafts, a request with its own generator draws its uniforms from it, rows
holding NaN or inf are refused with a ``ValueError`` (no law is defined there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import torch

from specproof.audit.signatures.base import VerifierSignature
from specproof.audit.signatures.flashinfer import FlashInferSignature
from specproof.audit.signatures.hf import HfSignature
from specproof.audit.signatures.vllm import VllmSignature
from specproof.audit.signatures.vllm_logits import VllmLogitsSignature
from specproof.reference.filters import FilterOrder

# mypy reads optimized/ as the package ``optimized`` (see specproof.subjects.examples).
if TYPE_CHECKING:
    from optimized.call_shapes import FlashInferChainSpeculativeSampling, VllmRejectionSample

PLACEHOLDER = -1
THRESHOLD_EPS = 0.02
TINY_EPS = 1e-6
TOP_K = 2
UNIFORM_GRID = 2.0**16


@dataclass(frozen=True)
class BugFlags:
    """One field per known bug (its catalogue name with underscores); all off: correct."""

    # acceptance test
    shared_uniform: bool = False
    uniform_grid_le: bool = False
    uniform_float32_le: bool = False
    uniform_bf16: bool = False
    ratio_swapped: bool = False
    threshold_eps: bool = False
    threshold_tiny_eps: bool = False
    no_uniform: bool = False
    relaxed_from_3_drafts: bool = False
    independent_acceptance: bool = False
    last_draft_skipped: bool = False
    # rows read
    position_zero_rows: bool = False
    q_bf16: bool = False
    q_top_k: bool = False
    p_tempered: bool = False
    ngram_q_uniform: bool = False
    # the token after a rejection
    residual_from_p: bool = False
    residual_abs: bool = False
    residual_softmax_clamp: bool = False
    residual_unnormalised: bool = False
    residual_by_acceptance: bool = False
    residual_wrong_position: bool = False
    residual_reuses_uniform: bool = False
    residual_lagged_from_3: bool = False
    pq_fallback_draft: bool = False
    mixed_generator_noise: bool = False
    nan_target_emits_vocab_size: bool = False
    nan_draft_recovers_rejected: bool = False
    drop_correction: bool = False
    # the bonus token
    bonus_wrong_row: bool = False
    # greedy rows and streams
    greedy_as_random: bool = False
    greedy_tie_last: bool = False
    greedy_marker_minus_one: bool = False
    always_greedy: bool = False
    identical_streams: bool = False
    request_seed_ignored: bool = False
    # output layout
    zero_length_dropped: bool = False
    padding_zero: bool = False
    # raw target logits (vllm-logits, hf)
    params_at_bonus_only: bool = False
    top_p_all_or_nothing: bool = False
    min_p_skipped: bool = False
    filter_order: FilterOrder | None = None
    """The verifier filters the target in this order whatever the engine's (None: the
    engine's, correct)."""
    # drafters
    draft_greedy_report_softmax: bool = False
    draft_top_k_report_raw: bool = False
    draft_bf16_logits: bool = False

    @classmethod
    def of(cls, *names: str) -> BugFlags:
        """The flags of the named bugs (catalogue names, with dashes) switched on."""
        known = {f.name for f in fields(cls)} - {"filter_order"}
        switched = {}
        for name in names:
            field = name.replace("-", "_")
            if field not in known:
                raise KeyError(f"no bug flag named {name!r}")
            switched[field] = True
        return replace(cls(), **switched)

    def on(self) -> tuple[str, ...]:
        """The catalogue names of the flags switched on."""
        return tuple(
            f.name.replace("_", "-")
            for f in fields(self)
            if f.name != "filter_order" and getattr(self, f.name)
        )


CORRECT = BugFlags()


def draw(
    rows: torch.Tensor,
    generator: torch.Generator | None,
    u: torch.Tensor | None = None,
    total: torch.Tensor | None = None,
) -> torch.Tensor:
    """Inverse CDF in float64, one token per row (at uniforms ``u`` when given, scaled by the
    row's sum or by ``total``); an all-zero row falls back to its argmax."""
    rows64 = rows.to(torch.float64)
    cdf = rows64.cumsum(-1)
    row_sum = cdf[..., -1:]
    scale = row_sum if total is None else total.unsqueeze(-1)
    if u is None:
        u = torch.rand(rows.shape[:-1], generator=generator, dtype=torch.float64)
    index = torch.searchsorted(cdf, u.unsqueeze(-1) * scale, right=True).squeeze(-1)
    index = index.clamp_max(rows.shape[-1] - 1)
    return torch.where(row_sum.squeeze(-1) > 0, index, rows64.argmax(-1))


def _uniforms(
    batch: int,
    width: int,
    generator: torch.Generator | None,
    generators: dict[int, torch.Generator] | None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """[batch, width] uniforms; a row with its own generator draws its row from it (vLLM's
    per-request generators: a seeded request's draws do not depend on its batch)."""
    u = torch.rand((batch, width), generator=generator, dtype=dtype)
    for row, own in (generators or {}).items():
        u[row] = torch.rand(width, generator=own, dtype=dtype)
    return u


def _refuse_nonfinite(draft_probs: torch.Tensor, target_probs: torch.Tensor) -> None:
    """No law is defined for a row holding NaN or inf: refuse it instead of guessing."""
    for name, rows in (("draft", draft_probs), ("target", target_probs)):
        if not bool(torch.isfinite(rows).all()):
            raise ValueError(f"non-finite values (NaN or inf) in the {name} rows")


def _top_k(q: torch.Tensor) -> torch.Tensor:
    values, index = q.topk(min(TOP_K, q.shape[-1]), dim=-1)
    kept = torch.zeros_like(q).scatter_(-1, index, values)
    return kept / kept.sum(-1, keepdim=True).clamp_min(1e-300)


def _accept(
    flags: BugFlags,
    u: torch.Tensor,
    p: torch.Tensor,
    q: torch.Tensor,
    lengths: torch.Tensor,
    generator: torch.Generator | None,
    generators: dict[int, torch.Generator] | None,
) -> torch.Tensor:
    """The acceptance test of each drafted token (target mass p, draft mass q)."""
    if flags.uniform_grid_le:  # a uniform that can be exactly 0, compared with <=
        return (q > 0) & (torch.floor(u * UNIFORM_GRID) / UNIFORM_GRID * q <= p)
    if flags.uniform_float32_le or flags.uniform_bf16:
        batch, width = u.shape
        u32 = _uniforms(batch, width, generator, generators, torch.float32)
        if flags.uniform_float32_le:
            return u32.double() * q <= p
        return u32.to(torch.bfloat16).double() * q < p
    if flags.ratio_swapped:
        return u * p < q
    if flags.threshold_eps:
        return u * q < p + THRESHOLD_EPS * q
    if flags.threshold_tiny_eps:
        return u * q < p + TINY_EPS * q
    if flags.no_uniform:
        return q <= p
    if flags.relaxed_from_3_drafts:  # a looser rule switched on from 3 drafts
        p = torch.where((lengths >= 3).unsqueeze(1), 2 * p, p)
    return (q > 0) & (u * q < p)  # u in [0, 1): accept w.p. min(1, p/q)


def _residual(
    flags: BugFlags, p: torch.Tensor, q: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The weights the token after a rejection is drawn from, and the total they are scaled by
    (None: their sum)."""
    if flags.residual_from_p:
        weights = p
    elif flags.residual_abs:
        weights = (p - q).abs()
    elif flags.residual_softmax_clamp:
        weights = torch.softmax((p - q).clamp_min(0), -1)
    else:
        weights = (p - q).clamp_min(0)
    total = None
    if flags.residual_unnormalised:
        total = torch.ones(p.shape[0], dtype=torch.float64)
    elif flags.residual_by_acceptance:
        total = 1 - torch.minimum(p, q).sum(-1)
    return weights, total


def verify_rows(
    flags: BugFlags,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    target_probs: torch.Tensor,
    lengths: torch.Tensor,
    bonus: torch.Tensor | None,
    generator: torch.Generator | None,
    greedy: torch.Tensor | None = None,
    generators: dict[int, torch.Generator] | None = None,
) -> torch.Tensor:
    """Dense chain verification: ``target_probs`` holds gamma rows (+1 bonus row when ``bonus``
    is None); row b verifies its first ``lengths[b]`` drafts; ``greedy`` rows keep drafts equal
    to the target argmax and end with the argmax. Returns [B, gamma + 1], -1 padded."""
    if not (flags.nan_target_emits_vocab_size or flags.nan_draft_recovers_rejected):
        _refuse_nonfinite(draft_probs, target_probs)
    batch, gamma = draft_tokens.shape
    tokens = draft_tokens.to(torch.int64)
    if flags.position_zero_rows:  # every position reads the rows of position 0
        target_probs = target_probs[:, :1].expand_as(target_probs)
        draft_probs = draft_probs[:, :1].expand_as(draft_probs)
    if flags.q_bf16:
        draft_probs = draft_probs.double().to(torch.bfloat16).double()
    elif flags.q_top_k:
        draft_probs = _top_k(draft_probs.double())
    if flags.p_tempered:  # temperature 1/2 on the verified rows only
        squared = target_probs[:, :gamma].double() ** 2
        tempered = squared / squared.sum(-1, keepdim=True).clamp_min(1e-300)
        target_probs = torch.cat([tempered, target_probs[:, gamma:].double()], 1)
    p_draft = target_probs[:, :gamma].gather(2, tokens.unsqueeze(2)).squeeze(2).double()
    q_draft = draft_probs.gather(2, tokens.unsqueeze(2)).squeeze(2).double()
    coins = _uniforms(batch, gamma + 2, generator, generators)
    u, u_correction, u_bonus = coins[:, :gamma], coins[:, gamma], coins[:, gamma + 1]
    if flags.shared_uniform:  # one uniform per request for every position
        u = u[:, :1].expand(batch, gamma)
    accept = _accept(flags, u, p_draft, q_draft, lengths, generator, generators)
    if flags.always_greedy:
        greedy = torch.ones(batch, dtype=torch.bool)
    if flags.greedy_as_random:
        greedy = None
    best = target_probs[:, :gamma].argmax(-1)
    if flags.greedy_tie_last:
        best = target_probs.shape[-1] - 1 - target_probs[:, :gamma].flip(-1).argmax(-1)
    is_greedy = torch.zeros(batch, dtype=torch.bool) if greedy is None else greedy
    accept = torch.where(is_greedy.unsqueeze(1), tokens == best, accept)
    verified = lengths
    if flags.last_draft_skipped:  # this bug and the next touch random rows only
        verified = torch.where(is_greedy, lengths, (lengths - 1).clamp_min(0))
    accept &= torch.arange(gamma).unsqueeze(0) < verified.unsqueeze(1)
    accepted = accept.to(torch.int64).cumprod(1).sum(1)  # leading accepted drafts
    if flags.independent_acceptance:
        accepted = torch.where(is_greedy, accepted, accept.sum(1))
    out = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    position = torch.arange(gamma + 1).unsqueeze(0)
    out[:, :gamma] = torch.where(position[:, :gamma] < accepted.unsqueeze(1), tokens, PLACEHOLDER)
    rows = torch.arange(batch)
    stop = accepted.clamp_max(max(gamma - 1, 0))
    rejected = accepted < verified
    if gamma > 0:
        correction = _correction(
            flags, draft_probs, target_probs, tokens, lengths, stop, u, u_correction, rejected
        )
        if flags.mixed_generator_noise and generators:
            # unseeded rows of a batch with seeded ones: the exponential noise the residual
            # is divided by is never filled in (left at 0), and argmax takes the first NaN
            unseeded = torch.ones(batch, dtype=torch.bool)
            unseeded[list(generators)] = False
            p_stop = target_probs[rows, stop].double()
            weights = (p_stop - draft_probs[rows, stop].double()).clamp_min(0)
            unfilled = (weights / torch.zeros_like(weights)).argmax(-1)
            correction = torch.where(unseeded, unfilled, correction)
        correction = torch.where(is_greedy, best[rows, stop], correction)
    else:
        correction = torch.zeros(batch, dtype=torch.int64)
    if bonus is None:
        row = (lengths - 1).clamp_min(0) if flags.bonus_wrong_row else lengths
        bonus = draw(target_probs[rows, row].double(), None, u_bonus)
    elif flags.bonus_wrong_row:  # the given bonus replaced by a draw from the last draft's row
        wrong = draw(target_probs[rows, (lengths - 1).clamp_min(0)].double(), None, u_bonus)
        bonus = torch.where((lengths > 0) & ~is_greedy, wrong, bonus.to(torch.int64))
    final = torch.where(rejected, correction, bonus.to(torch.int64))
    out[rows, accepted] = final
    if flags.drop_correction:
        out[rows, accepted] = torch.where(rejected & ~is_greedy, PLACEHOLDER, final)
    if flags.zero_length_dropped:
        out[lengths == 0] = PLACEHOLDER
    if flags.padding_zero:
        out[out == PLACEHOLDER] = 0
    return out


def _correction(
    flags: BugFlags,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    stop: torch.Tensor,
    u: torch.Tensor,
    u_correction: torch.Tensor,
    rejected: torch.Tensor,
) -> torch.Tensor:
    """The token after a rejection at ``stop`` (random rows)."""
    rows = torch.arange(tokens.shape[0])
    row_of_stop = stop
    if flags.residual_lagged_from_3:  # from output position 3 on, the previous rows
        row_of_stop = torch.where(stop >= 2, stop - 1, stop)
    if flags.residual_wrong_position:  # the residual one position later
        row_of_stop = torch.minimum(stop + 1, (lengths - 1).clamp_min(0))
    p_stop = target_probs[rows, row_of_stop].double()
    q_stop = draft_probs[rows, row_of_stop].double()
    weights, total = _residual(flags, p_stop, q_stop)
    if flags.residual_reuses_uniform:  # the rejected test's u, in [r, 1)
        u_correction = torch.where(rejected, u[rows, stop], u_correction)
    correction = draw(weights, None, u_correction, total)
    if flags.pq_fallback_draft:  # an empty residual (p == q) emits the rejected draft
        correction = torch.where(weights.sum(-1) == 0, tokens[rows, stop], correction)
    if flags.nan_target_emits_vocab_size:  # vLLM issue 53029: an all-NaN target row
        # has no maximum, and the search returns its initial index, vocab_size
        correction = torch.where(p_stop.isnan().all(-1), p_stop.shape[-1], correction)
    if flags.nan_draft_recovers_rejected:  # vLLM PR 41834 (comment): an all-NaN draft
        # row makes the recovered token the draft just rejected
        correction = torch.where(q_stop.isnan().all(-1), tokens[rows, stop], correction)
    return correction


# Signatures -------------------------------------------------------------------------------


def greedy_rows(metadata: Any, batch: int, legacy: bool = False) -> torch.Tensor:
    """Greedy rows: temperature <= 0 (``legacy``: only the old marker -1, a bug today)."""
    if getattr(metadata, "all_greedy", False):
        return torch.ones(batch, dtype=torch.bool)
    temperature = getattr(metadata, "temperature", None)
    if temperature is None or getattr(metadata, "all_random", False):
        return torch.zeros(batch, dtype=torch.bool)
    marks = torch.as_tensor(temperature).reshape(-1)
    return marks == -1 if legacy else marks <= 0


def verify_vllm(
    flags: BugFlags,
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """vLLM's ``rejection_sample`` semantics: ragged drafts gathered dense, bonus given,
    [B, max_spec_len + 1] int32, -1 padded."""
    batch, vocab = len(num_draft_tokens), target_probs.shape[-1]
    greedy = greedy_rows(sampling_metadata, batch, legacy=flags.greedy_marker_minus_one)
    generators = dict(getattr(sampling_metadata, "generators", None) or {})
    if flags.request_seed_ignored:  # every request draws from the one global stream
        generators = {}
    generator = None
    if flags.identical_streams:  # a fresh stream, seeded alike, on every call
        generator = torch.Generator().manual_seed(0)
    width = max(max_spec_len, 1)
    lengths = torch.tensor(num_draft_tokens, dtype=torch.int64)
    valid = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    dense_tokens = torch.zeros((batch, width), dtype=torch.int64)
    dense_tokens[valid] = draft_token_ids.to(torch.int64)
    if draft_probs is None:
        draft_probs = torch.nn.functional.one_hot(draft_token_ids.to(torch.int64), vocab).float()
        if flags.ngram_q_uniform:
            draft_probs = torch.full_like(draft_probs, 1.0 / vocab)
    dense_q = torch.zeros((batch, width, vocab), dtype=torch.float64)
    dense_p = torch.zeros((batch, width, vocab), dtype=torch.float64)
    dense_q[valid] = draft_probs.double()
    dense_p[valid] = target_probs.double()
    out = verify_rows(
        flags,
        dense_q,
        dense_tokens,
        dense_p,
        lengths,
        bonus_token_ids.reshape(-1),
        generator,
        greedy,
        generators,
    )
    return out[:, : max_spec_len + 1].to(torch.int32)


def process_target_logits(
    logits: torch.Tensor,
    num_draft_tokens: list[int],
    metadata: Any,
    flags: BugFlags = CORRECT,
    order: FilterOrder = "vllm",
) -> torch.Tensor:
    """Each flattened row's request parameters (temperature, top-k, top-p, min-p) applied to
    its raw logits (float64 probs) by the steps of ``order`` (the engine's;
    :data:`specproof.reference.filters.ORDER_STEPS`); greedy rows (temperature <= 0) are left
    as softmax(logits): only their argmax is read."""
    from specproof.audit.requests import apply_request

    order = flags.filter_order or order
    batch = len(num_draft_tokens)
    row_of = torch.repeat_interleave(torch.arange(batch), torch.tensor(num_draft_tokens))
    temperature = torch.as_tensor(metadata.temperature).reshape(-1).double()
    top_k = None if metadata.top_k is None else torch.as_tensor(metadata.top_k).reshape(-1)
    top_p = None if metadata.top_p is None else torch.as_tensor(metadata.top_p).reshape(-1)
    found = getattr(metadata, "min_p", None)
    min_p = None if found is None else torch.as_tensor(found).reshape(-1)
    if flags.min_p_skipped:  # min-p applied by the sampler, never at verified positions
        min_p = None
    if flags.top_p_all_or_nothing and top_p is not None:
        random = temperature > 0
        if not bool((top_p[random] < 1).all()):
            top_p = None  # applied only when every random request sets it
    probs = torch.softmax(logits.double(), -1)
    if flags.params_at_bonus_only:
        return probs
    ks = top_k if top_k is not None else torch.zeros(batch, dtype=torch.int64)
    ps = top_p if top_p is not None else torch.ones(batch)
    ms = min_p if min_p is not None else torch.zeros(batch)
    params = torch.stack([temperature, ks.double(), ps.double(), ms.double()], 1)
    for values in torch.unique(params[temperature > 0], dim=0).tolist():
        t, k, p, m = values
        rows = (params == torch.tensor(values, dtype=torch.float64)).all(1)
        mask = rows[row_of]
        k_used = None if top_k is None else int(k)
        p_used = None if top_p is None else p
        m_used = None if min_p is None else m
        probs[mask] = apply_request(logits[mask], t, k_used, p_used, m_used, order)
    return probs


def verify_flashinfer(
    flags: BugFlags,
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    accepted_num: torch.Tensor | None,
    emitted_num: torch.Tensor | None,
    generator: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FlashInfer's ``chain_speculative_sampling`` semantics: dense [B, n] drafts, the bonus
    drawn from row n, -1 padding, counters added to in place."""
    batch, gamma = draft_token_ids.shape
    lengths = torch.full((batch,), gamma, dtype=torch.int64)
    out = verify_rows(flags, draft_probs, draft_token_ids, target_probs, lengths, None, generator)
    emitted = ((out != PLACEHOLDER).sum(1) - 1).to(torch.int32)  # kept drafts, no bonus
    # accepted_num judges every position on its own (an alignment metric, not a prefix).
    tokens = draft_token_ids.to(torch.int64).unsqueeze(2)
    p_draft = target_probs[:, :gamma].gather(2, tokens).squeeze(2)
    q_draft = draft_probs.gather(2, tokens).squeeze(2)
    independent = (p_draft >= q_draft).sum(1).to(torch.int32)
    if accepted_num is None:
        accepted_num = torch.zeros(batch, dtype=torch.int32)
    if emitted_num is None:
        emitted_num = torch.zeros(batch, dtype=torch.int32)
    accepted_num += independent
    emitted_num += emitted
    return out.to(torch.int32), accepted_num, emitted_num


def verify_hf(
    flags: BugFlags,
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    order: FilterOrder = "sequential",
) -> torch.Tensor:
    """The hf signature's semantics (batch 1, logits at a temperature): [1, m], m - 1 accepted
    drafts then one token; the request's filters reach the target side only, by ``order``."""
    from specproof.audit.requests import apply_request

    if flags.min_p_skipped:
        min_p = None
    q = torch.softmax(draft_logits.double() / temperature, -1)
    p = apply_request(
        target_logits[0], temperature, top_k, top_p, min_p, flags.filter_order or order
    )
    n = draft_tokens.shape[1]
    lengths = torch.full((1,), n, dtype=torch.int64)
    out = verify_rows(flags, q, draft_tokens, p[None], lengths, None, None)
    return out[:, : int((out != PLACEHOLDER).sum())]


def draft(
    flags: BugFlags, logits: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The audit's drafter signature: samples from softmax(logits / T) and reports those
    probabilities (with every drafting flag off)."""
    probs = torch.softmax(logits.double() / temperature, -1)
    if flags.draft_greedy_report_softmax:  # the argmax drafted, the softmax reported
        return probs.argmax(-1), probs.float()
    if flags.draft_bf16_logits:  # drawn from softmax(bf16 logits / T) in bf16, q in float32
        drawn_from = torch.softmax(logits.to(torch.bfloat16) / temperature, -1)
        return draw(drawn_from.double(), None), torch.softmax(logits.float() / temperature, -1)
    drawn = probs
    if flags.draft_top_k_report_raw:  # top-2 drafted, the raw softmax reported
        drawn = _top_k(probs)
    return draw(drawn, None), probs.float()


# Callables with each engine's signature ------------------------------------------------------

Verifier = Callable[..., Any]


def vllm_verifier(flags: BugFlags, name: str = "rejection_sample") -> VllmRejectionSample:
    def rejection_sample(
        draft_token_ids: torch.Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: torch.Tensor,
        draft_probs: torch.Tensor | None,
        target_probs: torch.Tensor,
        bonus_token_ids: torch.Tensor,
        sampling_metadata: Any,
    ) -> torch.Tensor:
        return verify_vllm(
            flags,
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            draft_probs,
            target_probs,
            bonus_token_ids,
            sampling_metadata,
        )

    rejection_sample.__name__ = rejection_sample.__qualname__ = name
    return rejection_sample


def vllm_logits_verifier(
    flags: BugFlags, order: FilterOrder = "vllm", name: str = "rejection_sample"
) -> VllmRejectionSample:
    """vLLM's signature with raw target logits, filtered in the engine's ``order``."""

    def rejection_sample(
        draft_token_ids: torch.Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: torch.Tensor,
        draft_probs: torch.Tensor | None,
        target_logits: torch.Tensor,
        bonus_token_ids: torch.Tensor,
        sampling_metadata: Any,
    ) -> torch.Tensor:
        target_probs = process_target_logits(
            target_logits, num_draft_tokens, sampling_metadata, flags, order
        )
        return verify_vllm(
            flags,
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            draft_probs,
            target_probs,
            bonus_token_ids,
            sampling_metadata,
        )

    rejection_sample.__name__ = rejection_sample.__qualname__ = name
    return rejection_sample


def flashinfer_verifier(
    flags: BugFlags, name: str = "chain_speculative_sampling"
) -> FlashInferChainSpeculativeSampling:
    def chain_speculative_sampling(
        draft_probs: torch.Tensor,
        draft_token_ids: torch.Tensor,
        target_probs: torch.Tensor,
        maybe_output_accepted_token_num: torch.Tensor | None = None,
        maybe_output_emitted_draft_token_num: torch.Tensor | None = None,
        deterministic: bool = True,
        generator: torch.Generator | None = None,
        seed: int | None = None,
        offset: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return verify_flashinfer(
            flags,
            draft_probs,
            draft_token_ids,
            target_probs,
            maybe_output_accepted_token_num,
            maybe_output_emitted_draft_token_num,
            generator,
        )

    chain_speculative_sampling.__name__ = chain_speculative_sampling.__qualname__ = name
    return chain_speculative_sampling


def hf_verifier(
    flags: BugFlags, order: FilterOrder = "sequential", name: str = "speculative_sampling"
) -> Verifier:
    def speculative_sampling(
        draft_tokens: torch.Tensor,
        draft_logits: torch.Tensor,
        target_logits: torch.Tensor,
        temperature: float,
        *,
        top_k: int | None = None,
        top_p: float | None = None,
        min_p: float | None = None,
    ) -> torch.Tensor:
        return verify_hf(
            flags,
            draft_tokens,
            draft_logits,
            target_logits,
            temperature,
            top_k,
            top_p,
            min_p,
            order,
        )

    speculative_sampling.__name__ = speculative_sampling.__qualname__ = name
    return speculative_sampling


def drafter(flags: BugFlags, name: str = "draft") -> Callable[..., Any]:
    def draft_tokens(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
        return draft(flags, logits, temperature)

    draft_tokens.__name__ = draft_tokens.__qualname__ = name
    return draft_tokens


def verifier_for(
    signature: VerifierSignature, flags: BugFlags, order: FilterOrder | None, name: str
) -> Verifier:
    """The flagged verifier with ``signature``'s call shape; ``order``: the filter order of the
    signatures that filter raw logits themselves (their default when None)."""
    kind = type(signature)
    if kind not in _BUILDERS:
        raise ValueError(f"no flagged verifier has the {signature.name} signature")
    return _BUILDERS[kind](flags, order or signature.default_filter_order, name)


_BUILDERS: dict[type[VerifierSignature], Callable[[BugFlags, FilterOrder, str], Verifier]] = {
    VllmSignature: lambda flags, _order, name: vllm_verifier(flags, name),
    VllmLogitsSignature: vllm_logits_verifier,
    FlashInferSignature: lambda flags, _order, name: flashinfer_verifier(flags, name),
    HfSignature: hf_verifier,
}
