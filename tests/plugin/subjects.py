"""Subjects written for the plugin's own tests: a verifier that ignores the target it is handed
(lossless exactly where target and draft agree), a signature whose target argument points past
the call's arguments, a verifier that raises, and an engine whose ``generate`` hangs until
released."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from specproof.audit.engine import Engine
from specproof.audit.signatures import VllmSignature
from specproof.subjects import examples


def ignores_target(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    sampling_metadata: Any,
) -> torch.Tensor:
    """vLLM's call shape, verifying against the draft rows in place of the target rows: correct
    on ``p-equals-q`` (p == q), blind to whatever target it is given."""
    stand_in = target_probs if draft_probs is None else draft_probs
    return examples.rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        stand_in,
        bonus_token_ids,
        sampling_metadata,
    )


class TargetPastTheCall(VllmSignature):
    """vLLM's signature registered with a target argument beyond its eight arguments: the twin
    cannot shift what is not there."""

    name: ClassVar[str] = "vllm-target-past-the-call"
    target_argument: ClassVar[int] = 9


def raises_value_error(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("this verifier refuses every call")


RELEASE = threading.Event()
"""Set by a test to end the hanging calls it abandoned."""


def hanging_generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    RELEASE.wait(60)
    return [0] * num_new_tokens


def uniform_probs(sequences: torch.Tensor) -> torch.Tensor:
    return torch.full((*sequences.shape, 4), 0.25, dtype=torch.float64)


def hanging_engine() -> Engine:
    """``specproof parity-report engine plugin.subjects:hanging_engine``."""
    return Engine("hanging engine", hanging_generate, uniform_probs, (1, 2))


def hf_without_filters(
    draft_tokens: torch.Tensor,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """The hf signature without the top_k, top_p and min_p keywords."""
    return examples.speculative_sampling(draft_tokens, draft_logits, target_logits, temperature)
