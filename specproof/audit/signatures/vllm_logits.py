"""vLLM's ``RejectionSampler.forward`` form of ``rejection_sample``: the call shape of
:mod:`.vllm` with the target rows as raw logits (the sampler applies the requests' parameters)."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import torch

from ..drafting import Drafts
from ..problems import TableProblem
from ..requests import MASKED_LOGIT, RequestParams
from ..settings import CallSettings
from .base import Corrupt, Verifier, corrupted_if
from .vllm import VllmSignature, vllm_call


class VllmLogitsSignature(VllmSignature):
    """vLLM's call shape, target rows as raw logits."""

    name: ClassVar[str] = "vllm-logits"
    target_logits: ClassVar[bool] = True
    filters_sent_raw: ClassVar[bool] = True

    def call_raw(
        self,
        fn: Verifier,
        drafts: Drafts,
        raw: torch.Tensor,
        params: RequestParams,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        logits = (torch.log(raw.double()) * params.temperature).to(torch.float32)
        sent = replace(drafts, target_probs=logits)
        return vllm_call(sent, problem, generator, settings)(fn)

    def sent_target(self, target: torch.Tensor, where: str, corrupt: Corrupt) -> torch.Tensor:
        gamma = target.shape[1] - 1
        logits = torch.log(target[:, :gamma].double()).to(torch.float32)
        return corrupted_if(where, "target", logits, corrupt)

    def hunt_target(self, target: torch.Tensor) -> torch.Tensor:
        return torch.where(target > 0, 0.0, MASKED_LOGIT)
