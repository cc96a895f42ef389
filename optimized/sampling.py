"""Draft-token sampling: the public entry point."""

from __future__ import annotations

import torch

from .backend import Backend, resolve_backend
from .checks.arguments import as_integer, request_arguments
from .checks.content import defer_request_ids, defer_rows, defer_temperature
from .checks.contract import InvalidInputError, check_float
from .checks.recorded import DeferredChecks


def sample_draft_tokens(
    scores: torch.Tensor,
    *,
    seed: int,
    index: int,
    round: int = 0,
    offset: int = 0,
    request_ids: torch.Tensor | None = None,
    is_logits: bool = False,
    temperature: torch.Tensor | float | None = None,
    backend: Backend = "auto",
    validate: bool = True,
) -> torch.Tensor:
    """One token per row of ``scores`` [B, V] (probabilities, or logits at ``temperature``),
    the inverse CDF at the Philox uniform of (round, request_ids[b], "draft", index); rows with
    temperature 0 take the argmax. Returns int64 [B]."""
    if not isinstance(scores, torch.Tensor):
        raise InvalidInputError(f"scores must be a torch.Tensor, got {type(scores).__name__}")
    check_float("scores", scores, 2)
    batch = scores.shape[0]
    device = scores.device
    seed, round, offset, _, requests, temperatures = request_arguments(
        batch,
        device,
        seed=seed,
        round=round,
        offset=offset,
        request_ids=request_ids,
        temperature=temperature,
    )
    index = as_integer("index", index, 1 << 30)
    if validate:
        if scores.shape[1] < 1:
            raise InvalidInputError("the vocabulary must hold at least one token")
        checks = DeferredChecks()
        if request_ids is not None:
            defer_request_ids(checks, requests)
        if temperature is not None:
            defer_temperature(checks, temperatures, only=() if is_logits else (0.0, 1.0))
        defer_rows(checks, "scores", scores, is_logits)
        checks.raise_if_any()  # one host synchronisation
    if resolve_backend(backend, device) == "triton":
        from .kernels.draft_sample import draft_sample_triton as run
    else:
        from .torch_backend.draft_sample import draft_sample_torch as run
    return run(
        scores,
        requests.contiguous(),
        temperatures.contiguous(),
        is_logits=is_logits,
        seed=seed,
        round=round,
        offset=offset,
        index=index,
    )
