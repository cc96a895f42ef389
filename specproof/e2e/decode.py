"""The speculative round loop on the small target, with KV caches for target and drafter.

Each round: the drafter proposes gamma tokens per request (with confidences for DSpark); a
scheduler from :mod:`specproof.reference.schedulers` (the public ``schedule(confidences, sps)``
signature, on floats) picks l_r; the target scores [x_0, x_1..x_{l_r}] in one ragged cached
pass; chain verification (by default :func:`specproof.optimized.chain_verify`, Philox
randomness) returns the accepted drafts and the residual or bonus token; both caches commit
what was accepted. Temperature 0 is greedy: drafts are argmaxes, acceptance is equality.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from specproof.optimized import chain_verify

from .drafters import Proposal, tempered_probs
from .target import Target, TargetOutput

Schedule = Callable[[Sequence[Sequence[float]], Callable[[int], float] | None], list[int]]


class VerifyStep(Protocol):
    """Chain verification of one round: target rows [R, n + 1, V] and draft rows [R, n, V]
    (float32 probabilities), drafts [R, n], lengths [R]; returns the emitted tokens [R, n + 1]
    (accepted drafts, then the residual or bonus token, then -1) and the accepted counts."""

    def __call__(
        self,
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        lengths: torch.Tensor,
        *,
        seed: int,
        round_index: int,
        request_ids: torch.Tensor,
        temperature: float,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


def optimized_chain_verify(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    *,
    seed: int,
    round_index: int,
    request_ids: torch.Tensor,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`specproof.optimized.chain_verify` (torch backend) on probability rows."""
    result = chain_verify(
        target_probs,
        draft_probs,
        draft_tokens,
        seed=seed,
        num_draft_tokens=lengths,
        round=round_index,
        request_ids=request_ids,
        temperature=float(temperature),
        backend="torch",
    )
    return result.tokens, result.num_accepted


class Drafter(Protocol):
    gamma: int

    def start(self, batch: int) -> Any: ...

    def observe(
        self, state: Any, output: TargetOutput, next_tokens: torch.Tensor, counts: torch.Tensor
    ) -> None: ...

    def propose(
        self, state: Any, pending: torch.Tensor, temperature: float, generator: torch.Generator
    ) -> Proposal: ...


@dataclass
class RoundLog:
    """One round of the active requests: scheduled lengths, accepted counts, the raw
    confidence logits [R_active, gamma] (None for drafters without a confidence head), and
    the round's wall time from the proposal to the drafter's update."""

    scheduled: list[int]
    accepted: list[int]
    confidence_logits: np.ndarray | None
    seconds: float = 0.0


@dataclass
class DecodeResult:
    tokens: list[list[int]]
    rounds: list[RoundLog] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time of the rounds (prefill excluded)."""

    @property
    def generated(self) -> int:
        return sum(len(t) for t in self.tokens)

    @property
    def tokens_per_second(self) -> float:
        return self.generated / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mean_accepted_length(self) -> float:
        """tau: tokens emitted per request-round (accepted drafts + 1)."""
        total = sum(a + 1 for r in self.rounds for a in r.accepted)
        count = sum(len(r.accepted) for r in self.rounds)
        return total / count if count else float("nan")


def calibrated(logits: torch.Tensor, temperatures: Sequence[float] | None) -> torch.Tensor:
    """c_k = sigmoid(z_k / t_k) (STS temperatures; t = 1 when None)."""
    if temperatures is None:
        return torch.sigmoid(logits)
    return torch.sigmoid(logits / torch.tensor(temperatures, dtype=logits.dtype))


@torch.no_grad()
def speculative_generate(
    target: Target,
    drafter: Drafter,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    temperature: float,
    schedule: Schedule,
    sps: Callable[[int], float] | None = None,
    confidence_temperatures: Sequence[float] | None = None,
    seed: int = 0,
    verify: VerifyStep = optimized_chain_verify,
) -> DecodeResult:
    """Decode ``max_new_tokens`` per prompt (prompts may differ in length, at least 2 tokens).

    ``schedule`` receives the active requests' confidences c_{r,k} as floats (all 1.0 for a
    drafter without a confidence head) and must be non-anticipating for the output to follow
    the target's law (Algorithm 1 with its break, fixed gamma and static thresholds are).
    """
    batch = len(prompts)
    gamma = drafter.gamma
    generator = torch.Generator().manual_seed(seed)
    request_ids = torch.arange(batch, dtype=torch.int64)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64)
    if int(lengths.min()) < 2:
        raise ValueError("every prompt needs at least 2 tokens")
    needed = int(lengths.max()) + max_new_tokens + gamma + 1
    if needed > target.config.max_len:
        raise ValueError(f"needs {needed} positions, the target has {target.config.max_len}")
    width = int(lengths.max())
    padded = torch.zeros(batch, width, dtype=torch.int64)
    for r, p in enumerate(prompts):
        padded[r, : len(p)] = torch.tensor(list(p))

    cache = target.new_cache(batch)
    state = drafter.start(batch)
    prefill_counts = lengths - 1
    output = target.extend(padded[:, :-1], prefill_counts, cache)
    cache.commit(prefill_counts)
    drafter.observe(state, output, padded[:, 1:], prefill_counts)
    pending = padded[torch.arange(batch), lengths - 1]

    generated: list[list[int]] = [[] for _ in range(batch)]
    result = DecodeResult(generated)
    round_index = 0
    start = time.perf_counter()
    while True:
        active = [r for r in range(batch) if len(generated[r]) < max_new_tokens]
        if not active:
            break
        round_start = time.perf_counter()
        proposal = drafter.propose(state, pending, temperature, generator)
        logits = proposal.confidence_logits
        if logits is None:
            rows = [[1.0] * gamma for _ in active]
        else:
            rows = calibrated(logits[active], confidence_temperatures).tolist()
        scheduled = schedule(rows, sps)
        schedule_lengths = torch.zeros(batch, dtype=torch.int64)
        schedule_lengths[active] = torch.tensor(scheduled, dtype=torch.int64)
        counts = torch.zeros(batch, dtype=torch.int64)
        counts[active] = schedule_lengths[active] + 1
        n = int(schedule_lengths.max())
        verify_tokens = torch.cat((pending[:, None], proposal.tokens[:, :n]), dim=1)
        output = target.extend(verify_tokens, counts, cache)
        target_probs = tempered_probs(output.logits, temperature)
        emitted, accepted = verify(
            target_probs,
            proposal.probs[:, :n],
            proposal.tokens[:, :n],
            schedule_lengths,
            seed=seed,
            round_index=round_index,
            request_ids=request_ids,
            temperature=temperature,
        )
        keep = torch.zeros(batch, dtype=torch.int64)
        keep[active] = accepted[active] + 1
        cache.commit(keep)
        drafter.observe(state, output, emitted.clamp(min=0), keep)
        for r in active:
            count = int(keep[r])
            generated[r].extend(emitted[r, :count].tolist())
            pending[r] = emitted[r, count - 1]
        result.rounds.append(
            RoundLog(
                scheduled=[int(schedule_lengths[r]) for r in active],
                accepted=[int(accepted[r]) for r in active],
                confidence_logits=None if logits is None else logits[active].numpy().copy(),
                seconds=time.perf_counter() - round_start,
            )
        )
        round_index += 1
    result.seconds = time.perf_counter() - start
    result.tokens = [g[:max_new_tokens] for g in generated]
    return result


@torch.no_grad()
def autoregressive_generate(
    target: Target,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    temperature: float,
    seed: int = 0,
) -> DecodeResult:
    """Plain decoding with the target's KV cache (one token per request per step)."""
    batch = len(prompts)
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64)
    width = int(lengths.max())
    padded = torch.zeros(batch, width, dtype=torch.int64)
    for r, p in enumerate(prompts):
        padded[r, : len(p)] = torch.tensor(list(p))
    cache = target.new_cache(batch)
    cache.commit(torch.zeros(batch, dtype=torch.int64))
    output = target.extend(padded, lengths, cache)
    cache.commit(lengths)
    last = output.logits[torch.arange(batch), lengths - 1]
    generated: list[list[int]] = [[] for _ in range(batch)]
    ones = torch.ones(batch, dtype=torch.int64)
    start = time.perf_counter()
    for _ in range(max_new_tokens):
        probs = tempered_probs(last, temperature)
        if temperature == 0:
            token = probs.argmax(-1)
        else:
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        for r in range(batch):
            generated[r].append(int(token[r]))
        last = target.extend(token[:, None], ones, cache).logits[:, 0]
        cache.commit(ones)
    seconds = time.perf_counter() - start
    return DecodeResult(generated, [], seconds)
