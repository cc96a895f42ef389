"""The installed vLLM's own rejection sampler, on CPU, in the shapes ``specproof audit`` calls.

- :func:`rejection_sample` (``--signature vllm``): vLLM's
  ``vllm.v1.sample.rejection_sampler.rejection_sample``. Since vLLM takes the processed target
  *logits* there (it applies the softmax itself), the audit's processed probabilities p go in
  as log p: softmax(log p) = p, and a token of mass 0 stays at -inf.
- :func:`forward_logits` (``--signature vllm-logits``): ``RejectionSampler.forward`` on the raw
  target logits and the requests' temperature, top-k and top-p (vLLM applies them itself). The
  forward samples the bonus token from the bonus rows itself; the audit hands it the bonus
  token it drew, so each bonus row here has mass only on that token (the plain sampler's draw of
  a one-token row); the target rows are vLLM's to process.

Both call ``current_platform.register_triton_kernel_overrides()`` first (vLLM's C++ CPU kernels
stand in for its Triton kernels where Triton has no CPU backend) and build vLLM's own
``SamplingMetadata`` from the fields the audit sets.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import torch

# mypy reads optimized/ as the package ``optimized`` (the wheel maps it to specproof.optimized,
# which mypy cannot follow), so the call shapes are imported for it under that name.
if TYPE_CHECKING:
    from optimized.call_shapes import VllmRejectionSample


@functools.cache
def _prepared() -> None:
    from vllm.platforms import current_platform

    current_platform.register_triton_kernel_overrides()


def installed_version() -> str:
    import vllm

    return str(vllm.__version__)


def min_p_processors(fields: Any) -> Any:
    """vLLM's ``LogitsProcessors`` holding its built-in ``MinPLogitsProcessor`` in the state
    an engine's batch gives it when requests set the audit's ``min_p`` (none otherwise): where
    vLLM keeps min-p, which ``SamplingMetadata`` has no field for."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.logits_processor.builtin import MinPLogitsProcessor

    min_p = getattr(fields, "min_p", None)
    if min_p is None or not bool((min_p > 0).any()):
        return LogitsProcessors()
    processor = MinPLogitsProcessor.__new__(MinPLogitsProcessor)  # its state, not a config
    processor.min_p_count = int((min_p > 0).sum())
    processor.min_p = min_p.to(torch.float32).reshape(-1, 1)
    return LogitsProcessors([processor])


def sampling_metadata(fields: Any, batch: int, *, carry_min_p: bool = False) -> Any:
    """vLLM's ``SamplingMetadata`` with the audit's fields (temperature, greedy flags, top-k,
    top-p, generators); no penalties, logprobs, bad words or logits processors, except vLLM's
    min-p processor with ``carry_min_p`` (:func:`min_p_processors`)."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    zeros = torch.zeros(batch, dtype=torch.float32)
    return SamplingMetadata(
        temperature=fields.temperature,
        all_greedy=fields.all_greedy,
        all_random=fields.all_random,
        top_p=fields.top_p,
        top_k=fields.top_k,
        generators=fields.generators,
        max_num_logprobs=None,
        no_penalties=True,
        prompt_token_ids=None,
        frequency_penalties=zeros,
        presence_penalties=zeros,
        repetition_penalties=torch.ones(batch, dtype=torch.float32),
        output_token_ids=[[] for _ in range(batch)],
        allowed_token_ids_mask=None,
        bad_words_token_ids={},
        logitsprocs=min_p_processors(fields) if carry_min_p else LogitsProcessors(),
    )


def rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    metadata: Any,
) -> torch.Tensor:
    _prepared()
    from vllm.v1.sample import rejection_sampler

    with torch.no_grad():
        return rejection_sampler.rejection_sample(
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            draft_probs,
            torch.log(target_probs.to(torch.float32)),
            bonus_token_ids,
            sampling_metadata(metadata, len(num_draft_tokens)),
        )


def drawn_bonus_rows(bonus_token_ids: torch.Tensor, vocab: int, dtype: torch.dtype) -> torch.Tensor:
    """Bonus rows as logits with all their mass on the bonus token the audit drew (0 there,
    -inf elsewhere), so a step that samples the bonus token itself draws that one."""
    batch = bonus_token_ids.numel()
    rows = torch.full((batch, vocab), -torch.inf, dtype=dtype)
    return rows.scatter_(1, bonus_token_ids.reshape(batch, 1).to(torch.int64), 0.0)


def forward_logits(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    metadata: Any,
    *,
    carry_min_p: bool = False,
) -> torch.Tensor:
    _prepared()
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    batch = len(num_draft_tokens)
    tokens, vocab = target_logits.shape
    bonus_rows = drawn_bonus_rows(bonus_token_ids, vocab, target_logits.dtype)
    sampled = torch.tensor(num_draft_tokens, dtype=torch.int32) + 1
    spec = SpecDecodeMetadata(
        draft_token_ids=draft_token_ids,
        num_draft_tokens=list(num_draft_tokens),
        cu_num_draft_tokens=cu_num_draft_tokens.to(torch.int32),
        cu_num_sampled_tokens=torch.cumsum(sampled, 0).to(torch.int32),
        target_logits_indices=torch.arange(tokens, dtype=torch.int32),
        bonus_logits_indices=torch.arange(tokens, tokens + batch, dtype=torch.int32),
        logits_indices=torch.arange(tokens + batch, dtype=torch.int32),
    )
    sampler = RejectionSampler(Sampler())
    logits = torch.cat([target_logits.to(torch.float32), bonus_rows.to(torch.float32)])
    with torch.no_grad():
        out = sampler(
            spec, draft_probs, logits, sampling_metadata(metadata, batch, carry_min_p=carry_min_p)
        )
    return out.sampled_token_ids


def expand_in_place(
    output: torch.Tensor,
    input_val: torch.Tensor,
    cu_num_tokens: torch.Tensor,
    replace_from: float,
    replace_to: float,
    MAX_NUM_TOKENS: int | None = None,  # the Triton kernel's keyword
) -> None:
    """What vLLM's ``expand_kernel`` computes, written into ``output`` whatever its dtype: the
    request's value (``replace_from`` read as ``replace_to``) at each of its draft positions."""
    counts = torch.diff(cu_num_tokens.to(torch.int64), prepend=cu_num_tokens.new_zeros(1))
    values = torch.where(input_val == replace_from, replace_to, input_val).to(output.dtype)
    output.copy_(torch.repeat_interleave(values, counts.to(torch.int64))[: output.numel()])


def forward_logits_expand_fixed(*args: Any) -> torch.Tensor:
    """:func:`forward_logits` with vLLM's CPU ``expand_kernel`` replaced by
    :func:`expand_in_place` before the CPU kernels are registered: the control that ties a
    failure of ``forward_logits`` to that kernel (docs/findings/vllm_cpu_expand_kernel.md)."""
    from vllm.utils import cpu_triton_utils

    if cpu_triton_utils._expand_kernel_impl is not expand_in_place:
        if _prepared.cache_info().currsize:
            raise RuntimeError("the CPU kernels were registered before the replacement")
        cpu_triton_utils._expand_kernel_impl = expand_in_place
    _prepared()
    return forward_logits(*args)


# vLLM's functions keep their call shape behind the wrappers (mypy checks these lines).
_vllm_shapes: list[VllmRejectionSample] = [
    rejection_sample,
    forward_logits,
    forward_logits_expand_fixed,
]
