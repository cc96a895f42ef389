"""Chain verifiers in plain torch, with FlashInfer's and vLLM's signatures: a correct one of each,
and a deliberately biased one of each (the residual drawn from p instead of norm(max(p - q, 0))).

They are what ``specproof audit`` is shown on: it passes the correct ones and fails the biased.
All of them refuse rows holding NaN or inf with a ``ValueError`` (no law is defined there), except
the two bug models of :data:`NONFINITE_BUGS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

# mypy reads optimized/ as the package ``optimized`` (the wheel maps it to specproof.optimized,
# which mypy cannot follow), so the call shapes are imported for it under that name.
if TYPE_CHECKING:
    from optimized.call_shapes import FlashInferChainSpeculativeSampling, VllmRejectionSample

PLACEHOLDER = -1


def _draw(
    rows: torch.Tensor, generator: torch.Generator | None, u: torch.Tensor | None = None
) -> torch.Tensor:
    """Inverse CDF in float64, one token per row (at uniforms ``u`` when given); an all-zero row
    falls back to its argmax."""
    rows64 = rows.to(torch.float64)
    cdf = rows64.cumsum(-1)
    total = cdf[..., -1:]
    if u is None:
        u = torch.rand(rows.shape[:-1], generator=generator, dtype=torch.float64)
    index = torch.searchsorted(cdf, u.unsqueeze(-1) * total, right=True).squeeze(-1)
    index = index.clamp_max(rows.shape[-1] - 1)
    return torch.where(total.squeeze(-1) > 0, index, rows64.argmax(-1))


def _uniforms(
    batch: int,
    width: int,
    generator: torch.Generator | None,
    generators: dict[int, torch.Generator] | None,
) -> torch.Tensor:
    """[batch, width] float64 uniforms; a row with its own generator draws its row from it
    (vLLM's per-request generators: a seeded request's draws do not depend on its batch)."""
    u = torch.rand((batch, width), generator=generator, dtype=torch.float64)
    for row, own in (generators or {}).items():
        u[row] = torch.rand(width, generator=own, dtype=torch.float64)
    return u


NONFINITE_BUGS = ("nan-target-emits-vocab-size", "nan-draft-recovers-rejected")
"""Bug models that take non-finite rows instead of refusing them."""


def _refuse_nonfinite(draft_probs: torch.Tensor, target_probs: torch.Tensor) -> None:
    """No law is defined for a row holding NaN or inf: refuse it instead of guessing."""
    for name, rows in (("draft", draft_probs), ("target", target_probs)):
        if not bool(torch.isfinite(rows).all()):
            raise ValueError(f"non-finite values (NaN or inf) in the {name} rows")


def _verify_rows(
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    target_probs: torch.Tensor,
    lengths: torch.Tensor,
    bonus: torch.Tensor | None,
    generator: torch.Generator | None,
    biased: bool,
    greedy: torch.Tensor | None = None,
    generators: dict[int, torch.Generator] | None = None,
    bug: str | None = None,
) -> torch.Tensor:
    """Dense chain verification: ``target_probs`` holds gamma rows (+1 bonus row when ``bonus``
    is None); row b verifies its first ``lengths[b]`` drafts; ``greedy`` rows keep drafts equal
    to the target argmax and end with the argmax. ``bug`` switches on one of the public bug
    classes of :mod:`specproof.audit.bugclasses`, or "residual-lagged-from-3" (a per-position
    indexing bug: the correction at output position >= 3 drawn from the residual of the
    position before's rows); None: correct."""
    if bug not in NONFINITE_BUGS:
        _refuse_nonfinite(draft_probs, target_probs)
    batch, gamma = draft_tokens.shape
    tokens = draft_tokens.to(torch.int64)
    if bug == "position-zero-rows":  # every position reads the rows of position 0
        target_probs = target_probs[:, :1].expand_as(target_probs)
        draft_probs = draft_probs[:, :1].expand_as(draft_probs)
    p_draft = target_probs[:, :gamma].gather(2, tokens.unsqueeze(2)).squeeze(2).double()
    q_draft = draft_probs.gather(2, tokens.unsqueeze(2)).squeeze(2).double()
    coins = _uniforms(batch, gamma + 2, generator, generators)
    u, u_correction, u_bonus = coins[:, :gamma], coins[:, gamma], coins[:, gamma + 1]
    if bug == "shared-coin":  # one uniform per request for every position
        u = u[:, :1].expand(batch, gamma)
    if bug == "uniform-grid-le":  # a uniform that can be exactly 0, compared with <=
        accept = (q_draft > 0) & (torch.floor(u * 2.0**16) / 2.0**16 * q_draft <= p_draft)
    else:
        ratio = p_draft
        if bug == "relaxed-from-3-drafts":  # a looser rule switched on from 3 drafts
            ratio = torch.where((lengths >= 3).unsqueeze(1), 2 * p_draft, p_draft)
        accept = (q_draft > 0) & (u * q_draft < ratio)  # u in [0, 1): accept w.p. min(1, p/q)
    if bug == "always-greedy":
        greedy = torch.ones(batch, dtype=torch.bool)
    if greedy is not None:
        best = target_probs[:, :gamma].argmax(-1)
        accept = torch.where(greedy.unsqueeze(1), tokens == best, accept)
    accept &= torch.arange(gamma).unsqueeze(0) < lengths.unsqueeze(1)
    accepted = accept.to(torch.int64).cumprod(1).sum(1)  # leading accepted drafts
    out = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    position = torch.arange(gamma + 1).unsqueeze(0)
    out[:, :gamma] = torch.where(position[:, :gamma] < accepted.unsqueeze(1), tokens, PLACEHOLDER)
    rows = torch.arange(batch)
    stop = accepted.clamp_max(max(gamma - 1, 0))
    rejected = accepted < lengths
    if gamma > 0:
        row_of_stop = stop
        if bug == "residual-lagged-from-3":  # from output position 3 on, the previous rows
            row_of_stop = torch.where(stop >= 2, stop - 1, stop)
        p_stop = target_probs[rows, row_of_stop].double()
        q_stop = draft_probs[rows, row_of_stop].double()
        residual = p_stop if biased else (p_stop - q_stop).clamp_min(0)
        correction = _draw(residual, None, u_correction)
        if bug == "mixed-generator-noise" and generators:
            # unseeded rows of a batch with seeded ones: the exponential noise the residual
            # is divided by is never filled in (left at 0), and argmax takes the first NaN
            unseeded = torch.ones(batch, dtype=torch.bool)
            unseeded[list(generators)] = False
            unfilled = (residual / torch.zeros_like(residual)).argmax(-1)
            correction = torch.where(unseeded, unfilled, correction)
        if bug == "nan-target-emits-vocab-size":  # vLLM issue 53029: an all-NaN target row
            # has no maximum, and the search returns its initial index, vocab_size
            correction = torch.where(p_stop.isnan().all(-1), p_stop.shape[-1], correction)
        if bug == "nan-draft-recovers-rejected":  # vLLM PR 41834 (comment): an all-NaN draft
            # row makes the recovered token the draft just rejected
            correction = torch.where(q_stop.isnan().all(-1), tokens[rows, stop], correction)
        if greedy is not None:
            correction = torch.where(greedy, p_stop.argmax(-1), correction)
    else:
        correction = torch.zeros(batch, dtype=torch.int64)
    if bonus is None:
        bonus_row = target_probs[rows, lengths].double()
        if bug == "bonus-from-last-draft-row":
            bonus_row = target_probs[rows, (lengths - 1).clamp_min(0)].double()
        bonus = _draw(bonus_row, None, u_bonus)
    final = torch.where(rejected, correction, bonus.to(torch.int64))
    out[rows, accepted] = final
    return out


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
    """FlashInfer's signature and semantics, in torch: dense [B, n] drafts, -1 padding,
    counters added to in place."""
    return _flashinfer(
        draft_probs,
        draft_token_ids,
        target_probs,
        maybe_output_accepted_token_num,
        maybe_output_emitted_draft_token_num,
        generator,
        biased=False,
    )


def biased_chain_speculative_sampling(
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
    """As :func:`chain_speculative_sampling`, but the token after a rejection is drawn from p."""
    return _flashinfer(
        draft_probs,
        draft_token_ids,
        target_probs,
        maybe_output_accepted_token_num,
        maybe_output_emitted_draft_token_num,
        generator,
        biased=True,
    )


def _flashinfer(
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    accepted_num: torch.Tensor | None,
    emitted_num: torch.Tensor | None,
    generator: torch.Generator | None,
    biased: bool,
    bug: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, gamma = draft_token_ids.shape
    lengths = torch.full((batch,), gamma, dtype=torch.int64)
    out = _verify_rows(
        draft_probs, draft_token_ids, target_probs, lengths, None, generator, biased, bug=bug
    )
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
    """vLLM's signature and semantics in torch: ragged drafts, bonus token given, -1 padding,
    greedy rows (temperature <= 0 in ``sampling_metadata``: vLLM's marker 0, or the older -1),
    per-request generators (``sampling_metadata.generators``: row -> torch.Generator).
    ``draft_probs`` None means one-hot drafts (n-gram)."""
    return _vllm(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
        biased=False,
    )


def rejection_sample_logits(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample`, with raw target logits as current vLLM hands them to its
    rejection sampler: each request's temperature, top-k, top-p and min-p
    (``sampling_metadata``) are applied at every verified position before verification, in
    vLLM's sampler's order (temperature, min-p, top-k, renormalise, top-p: the nucleus is taken
    on the law min-p renormalised)."""
    target_probs = process_target_logits(target_logits, num_draft_tokens, sampling_metadata)
    return rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
    )


def process_target_logits(
    logits: torch.Tensor,
    num_draft_tokens: list[int],
    metadata: Any,
    bug: str | None = None,
    order: str = "vllm",
) -> torch.Tensor:
    """Each flattened row's request parameters (temperature, top-k, top-p, min-p) applied to
    its raw logits (float64 probs) by the steps of ``order``
    (:data:`specproof.reference.filters.ORDER_STEPS`); greedy rows (temperature <= 0) are left
    as softmax(logits): only their argmax is read."""
    from .requests import apply_request

    batch = len(num_draft_tokens)
    row_of = torch.repeat_interleave(torch.arange(batch), torch.tensor(num_draft_tokens))
    temperature = torch.as_tensor(metadata.temperature).reshape(-1).double()
    top_k = None if metadata.top_k is None else torch.as_tensor(metadata.top_k).reshape(-1)
    top_p = None if metadata.top_p is None else torch.as_tensor(metadata.top_p).reshape(-1)
    found = getattr(metadata, "min_p", None)
    min_p = None if found is None else torch.as_tensor(found).reshape(-1)
    if bug == "min-p-skipped":  # min-p applied by the sampler, never at verified positions
        min_p = None
    if bug == "top-p-all-or-nothing" and top_p is not None:
        random = temperature > 0
        if not bool((top_p[random] < 1).all()):
            top_p = None  # applied only when every random request sets it
    probs = torch.softmax(logits.double(), -1)
    if bug == "params-at-bonus-only":
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


def _rejection_sample_logits_in(order: str, *args: Any) -> torch.Tensor:
    tokens, lengths, longest, cu, draft, logits, bonus, metadata = args
    target = process_target_logits(logits, lengths, metadata, order=order)
    return rejection_sample(tokens, lengths, longest, cu, draft, target, bonus, metadata)


def rejection_sample_logits_min_p_last(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, with min-p after top-k and top-p, as transformers'
    warpers apply it (``--filter-order sequential``): where min-p and top-p both bind, the
    nucleus is taken on the law without min-p, lossy against vLLM's sampler."""
    return _rejection_sample_logits_in(
        "sequential",
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def rejection_sample_logits_llama_cpp(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, in llama.cpp's default sampler chain (top-k, top-p,
    min-p on softmax(logits), the temperature last; ``--filter-order llama.cpp``): min-p cuts
    on the untempered law, lossy against vLLM's sampler where that cuts other tokens."""
    return _rejection_sample_logits_in(
        "llama.cpp",
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def rejection_sample_logits_joint(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample_logits`, with top-k and top-p both cut on the full law
    ("joint", FlashInfer's joint sampling and SGLang's regular sampler): correct where the
    engine samples jointly (``--filter-order joint``), lossy against a sequential sampler."""
    target_probs = process_target_logits(
        target_logits, num_draft_tokens, sampling_metadata, order="joint"
    )
    return rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
    )


def biased_rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """As :func:`rejection_sample`, but the recovered token is drawn from p."""
    return _vllm(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        draft_probs,
        target_probs,
        bonus_token_ids,
        sampling_metadata,
        biased=True,
    )


def _greedy_rows(metadata: Any, batch: int, legacy: bool = False) -> torch.Tensor:
    """Greedy rows: temperature <= 0 (``legacy``: only the old marker -1, a bug today)."""
    if getattr(metadata, "all_greedy", False):
        return torch.ones(batch, dtype=torch.bool)
    temperature = getattr(metadata, "temperature", None)
    if temperature is None or getattr(metadata, "all_random", False):
        return torch.zeros(batch, dtype=torch.bool)
    marks = torch.as_tensor(temperature).reshape(-1)
    return marks == -1 if legacy else marks <= 0


def _vllm(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
    biased: bool,
    bug: str | None = None,
) -> torch.Tensor:
    batch, vocab = len(num_draft_tokens), target_probs.shape[-1]
    greedy = _greedy_rows(sampling_metadata, batch, legacy=bug == "greedy-marker-minus-one")
    generators = dict(getattr(sampling_metadata, "generators", None) or {})
    generator = None
    if bug == "identical-streams":  # a fresh stream, seeded alike, on every call
        generator = torch.Generator().manual_seed(0)
    width = max(max_spec_len, 1)
    lengths = torch.tensor(num_draft_tokens, dtype=torch.int64)
    valid = torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)
    dense_tokens = torch.zeros((batch, width), dtype=torch.int64)
    dense_tokens[valid] = draft_token_ids.to(torch.int64)
    if draft_probs is None:
        draft_probs = torch.nn.functional.one_hot(draft_token_ids.to(torch.int64), vocab).float()
    dense_q = torch.zeros((batch, width, vocab), dtype=torch.float64)
    dense_p = torch.zeros((batch, width, vocab), dtype=torch.float64)
    dense_q[valid] = draft_probs.double()
    dense_p[valid] = target_probs.double()
    out = _verify_rows(
        dense_q,
        dense_tokens,
        dense_p,
        lengths,
        bonus_token_ids.reshape(-1),
        generator,
        biased,
        greedy,
        generators,
        bug,
    )
    return out[:, : max_spec_len + 1].to(torch.int32)


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
    """The hf signature (batch 1, logits at a temperature, in the style of HF transformers'
    ``_speculative_sampling``): returns [1, m], m - 1 accepted drafts then one token. The
    request's filters reach the target side only, in transformers' order (temperature, top-k,
    top-p, min-p; top-p on the renormalised top-k law); q is the law the drafts came from."""
    return _hf(draft_tokens, draft_logits, target_logits, temperature, False, top_k, top_p, min_p)


def speculative_sampling_joint(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    *,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, with top-k and top-p cut jointly on the full law: lossy
    against transformers' sequential warpers when both bind."""
    return _hf(
        draft_tokens, draft_logits, target_logits, temperature, False, top_k, top_p, min_p, "joint"
    )


def speculative_sampling_min_p_skipped(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    *,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, but min-p is never applied (vLLM issue 42744's class)."""
    return _hf(draft_tokens, draft_logits, target_logits, temperature, False, top_k, top_p, None)


def biased_speculative_sampling(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """As :func:`speculative_sampling`, but the token after a rejection is drawn from p."""
    return _hf(draft_tokens, draft_logits, target_logits, temperature, biased=True)


def _hf(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
    biased: bool,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    order: str = "sequential",
) -> torch.Tensor:
    from .requests import apply_request

    q = torch.softmax(draft_logits.double() / temperature, -1)
    p = apply_request(target_logits[0], temperature, top_k, top_p, min_p, order)[None]
    n = draft_tokens.shape[1]
    lengths = torch.full((1,), n, dtype=torch.int64)
    out = _verify_rows(q, draft_tokens, p, lengths, None, None, biased)
    return out[:, : int((out != PLACEHOLDER).sum())]


def sample_draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """A drafter with the audit's drafter signature: samples from softmax(logits / T) and reports
    those probabilities."""
    probs = torch.softmax(logits.double() / temperature, -1)
    return _draw(probs, None), probs.float()


def greedy_draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Drafts the argmax while reporting the softmax (HF issue 32867's class): lossy."""
    probs = torch.softmax(logits.double() / temperature, -1)
    return probs.argmax(-1), probs.float()


def algorithm1_schedule(confidences: list[list[Any]], sps: Any) -> list[int]:
    """DSpark's Algorithm 1 with the early break, with the public scheduler signature."""
    from specproof.reference import Algorithm1

    return Algorithm1()(confidences, sps)


def global_search_schedule(confidences: list[list[Any]], sps: Any) -> list[int]:
    """Algorithm 1 without the break (reads c_{k+1} before x_k is verified): lossy."""
    from specproof.reference import GlobalSearch

    return GlobalSearch()(confidences, sps)


# The example verifiers have the engines' call shapes (mypy checks these lines).
_flashinfer_shapes: list[FlashInferChainSpeculativeSampling] = [
    chain_speculative_sampling,
    biased_chain_speculative_sampling,
]
_vllm_shapes: list[VllmRejectionSample] = [
    rejection_sample,
    rejection_sample_logits,
    rejection_sample_logits_min_p_last,
    rejection_sample_logits_llama_cpp,
    rejection_sample_logits_joint,
    biased_rejection_sample,
]
