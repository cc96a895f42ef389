"""HF transformers' assisted generation as an audited engine (the ``hf`` extra).

``generate`` is ``target.generate(prompt, assistant_model=assistant, **kwargs)`` seeded with
``torch.manual_seed``; the candidate generator transformers builds is wrapped (on the target
instance only) to record each round's draft length and accepted count. ``target_probs`` is a
plain teacher-forced pass of the target with transformers' public logits processors built
from the same kwargs, independent of the assisted loop; ``draft_probs`` the same pass of the
assistant, for the acceptance row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from specproof.audit.engine.subject import Emission, Engine, TargetProbs

HF_DEFAULT_TOP_K = 50
"""transformers' generation default: top_k = 50 when sampling and top_k is not given."""
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "min_p")
ASSISTANT_KEYS = (
    "num_assistant_tokens",
    "num_assistant_tokens_schedule",
    "assistant_confidence_threshold",
)
"""Read by the candidate generator from the assistant's generation config, not from generate's
kwargs: :func:`hf_engine` sets them there."""
HF_DEFAULT_DRAFT = 20
"""transformers' default num_assistant_tokens."""
ENGINE_KEYS = (
    "assistant_ensemble_weight",
    "use_mtp",
    "speculation_type",
    "prompt_lookup_num_tokens",
)
"""generate kwargs that choose how the engine drafts or verifies, not the law it claims to
sample: passed to ``generate``, never to the target's law (``assistant_ensemble_weight`` is
transformers' own biased verification, which the audit must catch, not model)."""

Rounds = list[tuple[int, int]]


def load_hf(folder: Path) -> Any:
    """The causal LM saved in ``folder`` as HF transformers runs it: float32, eval mode."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def processors_for(kwargs: Mapping[str, Any]) -> Any:
    """transformers' own processors for these generate kwargs, in generate's order: repetition
    penalty, then (when sampling) temperature, top-k, top-p, min-p."""
    from transformers import (
        LogitsProcessorList,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    unsupported = set(kwargs) - {"do_sample", "repetition_penalty", *SAMPLING_KEYS}
    if unsupported:
        raise ValueError(f"target_probs cannot reproduce generate kwargs {sorted(unsupported)}")
    processors = LogitsProcessorList()
    penalty = kwargs.get("repetition_penalty")
    if penalty is not None and penalty != 1.0:
        processors.append(RepetitionPenaltyLogitsProcessor(penalty))
    if not kwargs.get("do_sample"):
        return processors
    temperature = kwargs.get("temperature")
    if temperature is not None and temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    top_k = kwargs.get("top_k", HF_DEFAULT_TOP_K)
    if top_k:
        processors.append(TopKLogitsWarper(top_k=top_k))
    top_p = kwargs.get("top_p")
    if top_p is not None and top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p=top_p))
    min_p = kwargs.get("min_p")
    if min_p is not None:
        from transformers import MinPLogitsWarper  # transformers >= 4.41

        processors.append(MinPLogitsWarper(min_p=min_p))
    return processors


def effective_kwargs(target: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """What ``generate`` samples with: the model's own generation config (sampling fields it
    sets), overridden by the call's kwargs."""
    config = target.generation_config
    own = {
        key: getattr(config, key)
        for key in ("do_sample", "repetition_penalty", *SAMPLING_KEYS)
        if getattr(config, key, None) is not None
    }
    return {**own, **kwargs}


def hf_target_probs(target: Any, kwargs: Mapping[str, Any]) -> TargetProbs:
    """[B, L] -> [B, L, V]: softmax of the processed logits of one plain forward pass."""
    processors = processors_for(kwargs)

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for t in range(sequences.shape[1]):
            scores = processors(sequences[:, : t + 1], logits[:, t].clone())
            out[:, t] = torch.softmax(scores, dim=-1)
        return out

    return target_probs


def instrument(target: Any, rounds: Rounds) -> None:
    """Record (draft length, accepted) per round from whatever candidate generator the target
    builds; wraps the instance's factory, so a patched factory is recorded too."""
    build = target._get_candidate_generator

    def traced(*args: Any, **kwargs: Any) -> Any:
        generator = build(*args, **kwargs)
        get_candidates = generator.get_candidates
        update = generator.update_candidate_strategy
        drafted: list[int] = []

        def get(input_ids: torch.Tensor, *a: Any, **k: Any) -> Any:
            candidates, logits = get_candidates(input_ids, *a, **k)
            drafted.append(int(candidates.shape[-1] - input_ids.shape[-1]))
            return candidates, logits

        def strategy(input_ids: torch.Tensor, scores: torch.Tensor, num_matches: Any) -> Any:
            rounds.append((drafted[-1] if drafted else 0, int(num_matches)))
            return update(input_ids, scores, num_matches)

        generator.get_candidates = get
        generator.update_candidate_strategy = strategy
        return generator

    target._get_candidate_generator = traced


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers warns on every generate call about flags a tiny model does not use."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    previous = logging.getLogger("transformers").level
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        logging.getLogger("transformers").setLevel(previous)


def hf_engine(
    target: Any,
    assistant: Any | None,
    kwargs: Mapping[str, Any],
    *,
    prompt: Sequence[int] = (1, 2, 3),
    name: str = "hf",
) -> Engine:
    """The engine ``target.generate(..., assistant_model=assistant, **kwargs)``; with
    ``assistant=None`` the target alone (the control), drafting with its own MTP head when
    ``kwargs`` has ``use_mtp=True``, or by prompt lookup with ``prompt_lookup_num_tokens``."""
    kwargs = dict(kwargs)
    settings = {key: kwargs.pop(key) for key in ASSISTANT_KEYS if key in kwargs}
    if assistant is not None:
        for key, value in settings.items():
            setattr(assistant.generation_config, key, value)
    eos = target.generation_config.eos_token_id
    pad = eos[0] if isinstance(eos, list) else eos
    law_kwargs = effective_kwargs(
        target, {key: value for key, value in kwargs.items() if key not in ENGINE_KEYS}
    )
    rounds: Rounds = []
    speculating = (
        assistant is not None
        or bool(kwargs.get("use_mtp"))
        or bool(kwargs.get("prompt_lookup_num_tokens"))
    )
    if speculating:
        instrument(target, rounds)

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        rounds.clear()
        torch.manual_seed(seed)
        ids = torch.tensor([list(prompt)], dtype=torch.long)
        extra = {"assistant_model": assistant} if assistant is not None else {}
        with torch.no_grad(), quiet_transformers():
            out = target.generate(
                ids,
                max_new_tokens=num_new_tokens,
                attention_mask=torch.ones_like(ids),
                pad_token_id=pad,
                **extra,
                **kwargs,
            )
        tokens = tuple(int(t) for t in out[0, len(prompt) :].tolist())
        return Emission(tokens, tuple(rounds))

    return Engine(
        name=name,
        generate=generate,
        target_probs=hf_target_probs(target, law_kwargs),
        prompt=tuple(prompt),
        eos=eos,
        greedy=not law_kwargs.get("do_sample", False),
        max_draft=longest_draft(target, assistant, kwargs) if speculating else None,
        draft_probs=draft_law(target, assistant, kwargs, law_kwargs),
    )


def draft_law(
    target: Any, assistant: Any | None, kwargs: Mapping[str, Any], law_kwargs: Mapping[str, Any]
) -> TargetProbs | None:
    """The assistant's processed law where it drafts token by token as a model of the target's
    vocabulary (the candidate generator runs it under the target's own logits processors), for
    the acceptance row; None for prompt lookup, MTP, a block (DFlash) drafter and an assistant
    with another vocabulary (its drafts are translated, so its law is not over the target's)."""
    if assistant is None or kwargs.get("speculation_type") or kwargs.get("use_mtp"):
        return None
    if vocab_size(assistant) != vocab_size(target):
        return None
    return hf_target_probs(assistant, law_kwargs)


def vocab_size(model: Any) -> int | None:
    size = getattr(model.config.get_text_config(), "vocab_size", None)
    return int(size) if size is not None else None


def longest_draft(target: Any, assistant: Any | None, kwargs: Mapping[str, Any]) -> int:
    """The most tokens one round drafts: one per MTP layer; prompt lookup's
    ``prompt_lookup_num_tokens``; a DFlash block less its anchor; the assistant's
    ``num_assistant_tokens`` otherwise."""
    if kwargs.get("use_mtp"):
        return int(target.config.get_text_config().num_mtp_layers)
    if kwargs.get("prompt_lookup_num_tokens"):
        return int(kwargs["prompt_lookup_num_tokens"])
    if assistant is None:
        raise ValueError("no assistant model and no use_mtp: nothing drafts")
    if kwargs.get("speculation_type") == "dflash":
        return int(assistant.config.block_size) - 1
    return int(assistant.generation_config.num_assistant_tokens or HF_DEFAULT_DRAFT)
