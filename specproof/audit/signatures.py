"""Calling a verifier with an engine's signature: FlashInfer's chain_speculative_sampling,
vLLM's rejection_sample (probabilities or raw logits) and the batch-1 logits signature ``hf``;
each call returns the emitted tokens [B, gamma + 1], -1 padded."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Literal

import torch

from .drafting import Drafts, draw_states
from .errors import VerifierError
from .ids import integer_ids
from .problems import PLACEHOLDER, TableProblem
from .requests import GREEDY_TEMPERATURE, raw_logits, vllm_metadata
from .structure import emitted_lengths

Signature = Literal["flashinfer", "vllm", "vllm-logits", "hf"]
Verifier = Callable[..., Any]


def accepts_generator(fn: Verifier) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def seed_torch(generator: torch.Generator) -> None:
    """Verifiers that draw from torch's default generator get a seed from the audit's stream.
    Without CUDA only the CPU generator is seeded: ``torch.manual_seed`` would also queue a
    lazy seed per device type, formatting a stack trace each time (0.3 ms, most of a small
    call's harness cost)."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    if torch.cuda.is_available():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


DEFAULT_MAX_BATCH = 1024
"""Requests per verifier call (``--max-batch``): the order of what an engine verifies in one
step. Larger calls can exhaust a verifier that is correct at engine sizes (vllm-ascend's
pure-PyTorch fallback builds tokens x requests masks); the audit calls more often instead."""


def row_slices(batch: int, max_batch: int) -> list[slice]:
    """Consecutive rows of at most ``max_batch`` (one slice for an empty batch)."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    return [
        slice(start, min(start + max_batch, batch)) for start in range(0, batch, max_batch)
    ] or [slice(0, 0)]


def call_flashinfer(
    fn: Verifier,
    drafts: Drafts,
    generator: torch.Generator,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> torch.Tensor:
    """Call ``fn`` with FlashInfer's chain_speculative_sampling signature, once per draft
    length (its layout is dense) and per ``max_batch`` rows, and check its counters."""
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    for length in torch.unique(drafts.lengths).tolist():
        same_length = torch.nonzero(drafts.lengths == length).squeeze(1)
        for part in row_slices(len(same_length), max_batch):
            _call_flashinfer_rows(fn, drafts, generator, same_length[part], length, padded)
    return padded


def _call_flashinfer_rows(
    fn: Verifier,
    drafts: Drafts,
    generator: torch.Generator,
    rows: torch.Tensor,
    length: int,
    padded: torch.Tensor,
) -> None:
    """One call on ``rows`` (all of draft length ``length``), written into ``padded``."""
    accepted = torch.zeros(len(rows), dtype=torch.int32)
    emitted = torch.zeros(len(rows), dtype=torch.int32)
    kwargs: dict[str, Any] = {"deterministic": True}
    if accepts_generator(fn):
        kwargs["generator"] = generator
    else:
        seed_torch(generator)
    result = fn(
        drafts.draft_probs[rows, :length].contiguous(),
        drafts.tokens[rows, :length].to(torch.int32).contiguous(),
        drafts.target_probs[rows, : length + 1].contiguous(),
        accepted,
        emitted,
        **kwargs,
    )
    out = result[0] if isinstance(result, tuple | list) else result
    out = integer_ids(out, "output_token_ids")
    if out.shape != (len(rows), length + 1):
        raise VerifierError(
            f"output_token_ids has shape {tuple(out.shape)}, expected {(len(rows), length + 1)}"
        )
    if isinstance(result, tuple | list) and len(result) >= 3:
        reported = integer_ids(result[2], "emitted_num")
        wrong = torch.nonzero(reported != emitted_lengths(out) - 1)
        if len(wrong):
            raise VerifierError(
                "emitted_num differs from the drafts kept in output_token_ids",
                int(rows[int(wrong[0, 0])]),
            )
    padded[rows, : length + 1] = out


def bonus_tokens(problem: TableProblem, drafts: Drafts, generator: torch.Generator) -> torch.Tensor:
    """The bonus token of every row, from the target row after its last draft (argmax for
    greedy rows): what an engine samples before calling vLLM's rejection_sample."""
    lengths = drafts.lengths
    last_state = torch.where(
        lengths > 0,
        drafts.tokens.gather(1, (lengths - 1).clamp_min(0).unsqueeze(1)).squeeze(1) % problem.states
        if drafts.tokens.shape[1]
        else torch.zeros_like(lengths),
        torch.full_like(lengths, problem.prompt_state),
    )
    keys = lengths * problem.states + last_state
    flat = problem.target_cdf.reshape(-1, problem.vocab)
    drawn = draw_states(flat, keys, generator)
    if not bool(drafts.greedy.any()):
        return drawn
    best = problem.target32.reshape(-1, problem.vocab).argmax(-1)[keys]
    return torch.where(drafts.greedy, best, drawn)


def vllm_call(
    drafts: Drafts,
    problem: TableProblem,
    generator: torch.Generator,
    *,
    logits: bool = False,
    marker: float = GREEDY_TEMPERATURE,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> Callable[..., torch.Tensor]:
    """vLLM's rejection_sample inputs for these drafts (ragged, flattened rows), built once;
    the returned call can be repeated on identical inputs (fresh per-request generators with
    the same seeds each time, or ``seeds`` instead). ``logits``: target rows as raw logits
    (current vLLM hands its sampler raw logits and the request's parameters) instead of
    processed probabilities. The call reaches ``fn`` once per ``max_batch`` requests."""
    batch, gamma = drafts.tokens.shape
    bonus = bonus_tokens(problem, drafts, generator).to(torch.int32).unsqueeze(1)
    parts = [
        (rows, _vllm_args(drafts.select(rows), bonus[rows], problem, logits))
        for rows in row_slices(batch, max_batch)
    ]

    def call(fn: Verifier, seeds: torch.Tensor | None = None) -> torch.Tensor:
        seed_torch(generator)
        own = drafts if seeds is None else replace(drafts, seeds=seeds)
        padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
        for rows, args in parts:
            part = own.select(rows)
            size = len(part.lengths)
            metadata = vllm_metadata(
                size,
                part.greedy,
                marker=marker,
                params=part.params(problem),
                generators=part.generators(),
                vocab=problem.vocab,
            )
            out = integer_ids(fn(*args, metadata), "output_token_ids")
            if out.dim() != 2 or out.shape[0] != size:
                raise VerifierError(
                    f"output has shape {tuple(out.shape)}, expected [{size}, n + 1]"
                )
            width = min(out.shape[1], gamma + 1)
            padded[rows, :width] = out[:, :width]
            if out.shape[1] > gamma + 1:
                extra = torch.nonzero((out[:, gamma + 1 :] != PLACEHOLDER).any(1))
                if len(extra):
                    raise VerifierError(
                        "a row emitted more than its drafts plus one", rows.start + int(extra[0, 0])
                    )
        return padded

    return call


def _vllm_args(
    drafts: Drafts, bonus: torch.Tensor, problem: TableProblem, logits: bool
) -> tuple[Any, ...]:
    """The arguments of one rejection_sample call on ``drafts`` (metadata aside)."""
    batch, gamma = drafts.tokens.shape
    lengths = drafts.lengths
    keep = torch.arange(gamma).unsqueeze(0) < lengths.unsqueeze(1)  # [B, gamma]
    num_draft = lengths.tolist()
    params = drafts.params(problem)
    target = drafts.target_probs[:, :gamma][keep].contiguous()
    if logits:
        row_of = torch.arange(batch).unsqueeze(1).expand(batch, gamma)[keep]
        temperature = torch.tensor([p.temperature for p in params], dtype=torch.float64)
        temperature = torch.where(drafts.greedy, 0.0, temperature)[row_of]
        dropped = torch.tensor([p.dropped_mass() for p in params], dtype=torch.float64)
        target = raw_logits(target, temperature, torch.where(drafts.greedy, 0.0, dropped)[row_of])
    return (
        drafts.tokens[keep].to(torch.int32).contiguous(),
        num_draft,
        max(num_draft) if num_draft else 0,
        torch.cumsum(lengths, 0).to(torch.int32),
        None if problem.ngram else drafts.draft_probs[keep].contiguous(),
        target,
        bonus.contiguous(),
    )


def call_vllm(
    fn: Verifier,
    drafts: Drafts,
    problem: TableProblem,
    generator: torch.Generator,
    *,
    logits: bool = False,
    marker: float = GREEDY_TEMPERATURE,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> torch.Tensor:
    """Call ``fn`` with vLLM's rejection_sample signature, once per ``max_batch`` requests (see
    :func:`vllm_call`)."""
    return vllm_call(drafts, problem, generator, logits=logits, marker=marker, max_batch=max_batch)(
        fn
    )


HF_TEMPERATURE = 0.5
"""Temperature of the hf signature's cases (each request's own temperature where the problem
has requests): the logits are T log p, so softmax(logits / T) = p exactly when (and only when)
the temperature is applied to both sides."""


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's intra-op threads set to one, then restored: a batch-1 call's tensors hold a few
    rows, so a second thread only adds its hand-off to every op (on a busy 2-core machine the
    hand-off waits for a core: HF's loop then cost 2 to 50 times the CPU of one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def call_hf(
    fn: Verifier, drafts: Drafts, problem: TableProblem, generator: torch.Generator
) -> torch.Tensor:
    """Call ``fn`` once per row with the hf signature (batch 1, logits and a temperature):

    ``fn(draft_tokens [1, n] int64, draft_logits [1, n, V], target_logits [1, n + 1, V],
    temperature: float)`` returns the emitted tokens [1, m] (or a tuple whose first item they
    are): m - 1 accepted drafts, then the correction or bonus token.
    """
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    temperatures = [
        p.temperature if problem.requests else HF_TEMPERATURE for p in drafts.params(problem)
    ]
    scale = torch.tensor(temperatures, dtype=torch.float64).reshape(-1, 1, 1)
    draft_logits = (torch.log(drafts.draft_probs.double()) * scale).to(torch.float32)
    target_logits = (torch.log(drafts.target_probs.double()) * scale).to(torch.float32)
    seed_torch(generator)
    with one_torch_thread():
        _call_hf_rows(fn, drafts, draft_logits, target_logits, temperatures, padded)
    return padded


def _call_hf_rows(
    fn: Verifier,
    drafts: Drafts,
    draft_logits: torch.Tensor,
    target_logits: torch.Tensor,
    temperatures: list[float],
    padded: torch.Tensor,
) -> None:
    """One call of ``fn`` per row, its emitted tokens written into ``padded``."""
    for row in range(len(temperatures)):
        n = int(drafts.lengths[row])
        result = fn(
            drafts.tokens[row : row + 1, :n].clone(),
            draft_logits[row : row + 1, :n].clone(),
            target_logits[row : row + 1, : n + 1].clone(),
            temperatures[row],
        )
        out = result[0] if isinstance(result, tuple | list) else result
        out = integer_ids(out, "the emitted tokens").reshape(-1)
        if not 1 <= out.numel() <= n + 1:
            raise VerifierError(f"emitted {out.numel()} tokens for {n} drafts", row)
        padded[row, : out.numel()] = out
