"""specproof's verification as a running vLLM engine's verification step.

    from specproof.adapters import vllm_verifier
    vllm_verifier.install()     # before vllm.LLM(...) starts its engine
    ...
    vllm_verifier.uninstall()   # vLLM's own step again

The seam: ``vllm.v1.sample.rejection_sampler.RejectionSampler.forward`` (a class attribute,
replaced in this process), the whole step from the target's raw logits and the requests'
sampling metadata to the output tokens, bonus token included
(:func:`specproof.optimized.vllm_step.verify_step`). An engine whose core and worker run in
this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) uses it at once. For an engine core in a
child process, :func:`install` also sets :data:`PLUGIN_ENV`, and vLLM's general-plugin entry
point (``vllm.general_plugins``, declared in pyproject.toml: :func:`register`) installs it in
every vLLM process that inherits that variable; it does nothing without it.

:func:`install` refuses an installed vLLM whose interfaces differ from the tested ones
(:data:`TESTED_VERSIONS`, the forward's parameters, the fields of ``SamplingMetadata`` and
``SpecDecodeMetadata``). The step refuses, with :class:`UnsupportedRequest`, what it does not
implement: logprobs, vLLM's synthetic acceptance mode, penalties, bad words, allowed token ids,
logit bias, min-tokens, thinking budgets and logits processors other than vLLM's built-in ones.
Nothing here imports vllm at module level (the pure parts are tested without it).
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import torch

from specproof.adapters.vllm_sampler import drawn_bonus_rows
from specproof.optimized.vllm_step import verify_step

if TYPE_CHECKING:  # mypy reads optimized/ as ``optimized`` (see vllm_sampler.py)
    from optimized.call_shapes import VllmRejectionSample

PLUGIN_ENV = "SPECPROOF_VLLM_VERIFIER"
"""Set to "1" by :func:`install`: vLLM processes started afterwards install the step too."""
TESTED_VERSIONS = ("0.32.0",)
FORWARD_PARAMETERS = ("self", "metadata", "draft_probs", "logits", "sampling_metadata")
SAMPLING_FIELDS = (
    "temperature", "all_greedy", "all_random", "top_p", "top_k", "generators",
    "max_num_logprobs", "no_penalties", "prompt_token_ids", "frequency_penalties",
    "presence_penalties", "repetition_penalties", "output_token_ids", "allowed_token_ids_mask",
    "bad_words_token_ids", "logitsprocs", "logprob_token_ids", "spec_token_ids",
    "thinking_budget_state_holder",
)  # fmt: skip
SPEC_DECODE_FIELDS = (
    "draft_token_ids", "num_draft_tokens", "cu_num_draft_tokens", "cu_num_sampled_tokens",
    "target_logits_indices", "bonus_logits_indices", "logits_indices",
)  # fmt: skip
BUILTIN_PROCESSORS = ("MinPLogitsProcessor", "LogitBiasLogitsProcessor", "MinTokensLogitsProcessor")

_original: dict[str, Any] = {}
"""vLLM's own forward while the step is installed ("forward")."""


class InterfaceMismatch(RuntimeError):
    """The installed vLLM's interfaces differ from the ones the step was tested on."""


class UnsupportedRequest(ValueError):
    """A batch asks for something the step does not implement."""


def interface_differences(
    version: str, forward_parameters: Sequence[str], sampling: Iterable[str], spec: Iterable[str]
) -> list[str]:
    """How an installed vLLM differs from the tested one (empty: it does not)."""
    out = []
    if version not in TESTED_VERSIONS:
        out.append(f"vLLM {version} (tested: {', '.join(TESTED_VERSIONS)})")
    if tuple(forward_parameters) != FORWARD_PARAMETERS:
        out.append(
            f"RejectionSampler.forward{tuple(forward_parameters)} (tested: {FORWARD_PARAMETERS})"
        )
    for name, found, tested in (
        ("SamplingMetadata", set(sampling), set(SAMPLING_FIELDS)),
        ("SpecDecodeMetadata", set(spec), set(SPEC_DECODE_FIELDS)),
    ):
        added, missing = sorted(found - tested), sorted(tested - found)
        if added or missing:
            out.append(f"{name} fields added {added}, missing {missing}")
    return out


def installed_differences() -> list[str]:
    """:func:`interface_differences` of the installed vLLM."""
    import vllm
    from vllm.v1.sample.metadata import SamplingMetadata
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    forward = _original.get("forward", RejectionSampler.forward)
    return interface_differences(
        str(vllm.__version__),
        list(inspect.signature(forward).parameters),
        [f.name for f in fields(SamplingMetadata)],
        [f.name for f in fields(SpecDecodeMetadata)],
    )


def install() -> None:
    """Make specproof's step the verification step of vLLM engines started from now on in
    this process (and, through :data:`PLUGIN_ENV`, in their child processes). Idempotent;
    raises :class:`InterfaceMismatch` (one line naming the difference) on an untested vLLM."""
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    if "forward" not in _original:
        differences = installed_differences()
        if differences:
            raise InterfaceMismatch(
                "specproof's vLLM verifier refuses this vLLM: " + "; ".join(differences)
            )
        _original["forward"] = RejectionSampler.forward
        RejectionSampler.forward = verifier_forward
    os.environ[PLUGIN_ENV] = "1"


def uninstall() -> None:
    """Put vLLM's own ``RejectionSampler.forward`` back (idempotent)."""
    os.environ.pop(PLUGIN_ENV, None)
    if "forward" in _original:
        from vllm.v1.sample.rejection_sampler import RejectionSampler

        RejectionSampler.forward = _original.pop("forward")


def installed() -> bool:
    return "forward" in _original


def register() -> None:
    """vLLM's general-plugin entry point: installs the step where :data:`PLUGIN_ENV` is "1"."""
    if os.environ.get(PLUGIN_ENV) == "1" and not installed():
        install()
        print(f"specproof's vLLM verifier installed in process {os.getpid()}", file=sys.stderr)


def unsupported(sampling_metadata: Any, synthetic_mode: bool = False) -> list[str]:
    """What in a batch the step does not implement (empty: nothing). Read duck-typed."""

    def field(name: str, default: Any = None) -> Any:
        return getattr(sampling_metadata, name, default)

    out = []
    if synthetic_mode:
        out.append("synthetic acceptance (rejection_sample_method='synthetic')")
    if field("max_num_logprobs") is not None or field("logprob_token_ids"):
        out.append("logprobs")
    if not field("no_penalties", True):
        out.append("penalties")
    if field("bad_words_token_ids"):
        out.append("bad_words")
    if field("allowed_token_ids_mask") is not None:
        out.append("allowed_token_ids")
    holder = field("thinking_budget_state_holder")
    if holder is not None and holder.has_tracked_requests():
        out.append("thinking token budgets")
    processors = field("logitsprocs")
    for processor in [] if processors is None else processors.all:
        kind = type(processor).__name__
        if kind not in BUILTIN_PROCESSORS:
            out.append(f"logits processor {kind}")
        elif kind == "LogitBiasLogitsProcessor" and processor.biases:
            out.append("logit_bias")
        elif kind == "MinTokensLogitsProcessor" and processor.min_toks:
            out.append("min_tokens")
    return out


def min_p_of(sampling_metadata: Any) -> torch.Tensor | None:
    """The requests' min-p: vLLM keeps it in its built-in ``MinPLogitsProcessor`` (None where
    no request sets one); the audit's metadata carries it as a ``min_p`` field."""
    if hasattr(sampling_metadata, "min_p"):
        value: torch.Tensor | None = sampling_metadata.min_p
        return value
    processors = getattr(sampling_metadata, "logitsprocs", None)
    for processor in [] if processors is None else processors.argmax_invariant:
        if type(processor).__name__ == "MinPLogitsProcessor" and processor.min_p_count:
            found: torch.Tensor = processor.min_p  # [B, 1] in vLLM's batch
            return found.reshape(-1)
    return None


def run_step(
    spec: Any,
    draft_probs: torch.Tensor | None,
    logits: torch.Tensor,
    sampling_metadata: Any,
    *,
    synthetic_mode: bool = False,
    validate: bool = True,
) -> torch.Tensor:
    """Output tokens of one step from vLLM's ``SpecDecodeMetadata`` ``spec``, the raw logits
    and ``SamplingMetadata`` (refusing what :func:`unsupported` names)."""
    refused = unsupported(sampling_metadata, synthetic_mode)
    if refused:
        raise UnsupportedRequest(
            "specproof's vLLM verifier does not implement " + ", ".join(refused)
        )
    with torch.no_grad():
        return verify_step(
            logits,
            spec.target_logits_indices,
            spec.bonus_logits_indices,
            spec.draft_token_ids,
            list(spec.num_draft_tokens),
            spec.cu_num_draft_tokens,
            draft_probs,
            sampling_metadata.temperature,
            top_k=sampling_metadata.top_k,
            top_p=sampling_metadata.top_p,
            min_p=min_p_of(sampling_metadata),
            generators=sampling_metadata.generators,
            all_greedy=bool(sampling_metadata.all_greedy),
            validate=validate,
        )


def verifier_forward(
    self: Any, metadata: Any, draft_probs: torch.Tensor | None, logits: torch.Tensor,
    sampling_metadata: Any,
) -> Any:  # fmt: skip
    """``RejectionSampler.forward`` as installed: vLLM's ``SamplerOutput`` of :func:`run_step`."""
    from vllm.v1.outputs import SamplerOutput

    tokens = run_step(
        metadata, draft_probs, logits, sampling_metadata,
        synthetic_mode=bool(getattr(self, "synthetic_mode", False)),
    )  # fmt: skip
    return SamplerOutput(sampled_token_ids=tokens, logprobs_tensors=None)


def step_logits(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    metadata: Any,
) -> torch.Tensor:
    """The step in the audit's ``vllm-logits`` call shape (``specproof audit
    specproof.adapters.vllm_verifier:step_logits --signature vllm-logits``): the audit draws
    the bonus token itself, so each request's bonus row has mass only on it, as in
    :func:`.vllm_sampler.forward_logits`; no vLLM needed."""
    del max_spec_len
    batch = len(num_draft_tokens)
    tokens, vocab = target_logits.shape
    bonus_rows = drawn_bonus_rows(bonus_token_ids, vocab, torch.float32)
    logits = torch.cat([target_logits.to(torch.float32), bonus_rows])
    with torch.no_grad():
        return verify_step(
            logits,
            torch.arange(tokens),
            torch.arange(tokens, tokens + batch),
            draft_token_ids,
            list(num_draft_tokens),
            cu_num_draft_tokens,
            draft_probs,
            metadata.temperature,
            top_k=metadata.top_k,
            top_p=metadata.top_p,
            min_p=getattr(metadata, "min_p", None),
            generators=metadata.generators,
            all_greedy=bool(metadata.all_greedy),
        )


def forward_installed(*args: Any) -> torch.Tensor:
    """vLLM's own ``RejectionSampler.forward`` path (:func:`.vllm_sampler.forward_logits`,
    min-p in vLLM's ``MinPLogitsProcessor``) with the step installed: the function-level audit
    of the installed seam."""
    from specproof.adapters.vllm_sampler import forward_logits

    install()
    return forward_logits(*args, carry_min_p=True)


# The audit's call shape (mypy checks these lines).
_vllm_shapes: list[VllmRejectionSample] = [step_logits, forward_installed]
