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

from ..models.drafting import Proposal, Truncation, tempered_probs, truncated
from ..models.target import FrozenTarget, TargetOutput

PHASES = ("draft", "confidences", "schedule", "target pass", "verify", "commit")
"""The phases of a round; "draft" includes DSpark's confidence head (computed with the block),
"confidences" is their calibration and the copy to the host, "commit" the cache commits,
the drafter's update and the scatter of the emitted tokens."""

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
        generator: torch.Generator,
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
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`specproof.optimized.chain_verify` (torch backend) on probability rows; its
    Philox uniforms are addressed by (seed, round, request), so ``generator`` is unused."""
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

    def start(self, batch: int, capacity: int | None = None) -> Any: ...

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
    phases: list[float] = field(default_factory=list)
    """Seconds per phase, in the order of :data:`PHASES`."""


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
    def accepted_totals(self) -> tuple[int, int]:
        """(tokens the rounds emitted, accepted drafts + 1 per request-round; request-rounds):
        tau is their ratio."""
        emitted = sum(a + 1 for r in self.rounds for a in r.accepted)
        return emitted, sum(len(r.accepted) for r in self.rounds)

    @property
    def mean_accepted_length(self) -> float:
        """tau: tokens emitted per request-round (accepted drafts + 1)."""
        emitted, rounds = self.accepted_totals
        return emitted / rounds if rounds else float("nan")


def calibrated(logits: torch.Tensor, temperatures: Sequence[float] | None) -> torch.Tensor:
    """c_k = sigmoid(z_k / t_k) (STS temperatures; t = 1 when None)."""
    if temperatures is None:
        return torch.sigmoid(logits)
    return torch.sigmoid(logits / torch.tensor(temperatures, dtype=logits.dtype))


@torch.no_grad()
def speculative_generate(
    target: FrozenTarget,
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
    truncation: Truncation | None = None,
) -> DecodeResult:
    """Decode ``max_new_tokens`` per prompt (prompts may differ in length, at least 2 tokens).

    ``schedule`` receives the active requests' confidences c_{r,k} as floats (all 1.0 for a
    drafter without a confidence head) and must be non-anticipating for the output to follow
    the target's law (Algorithm 1 with its break, fixed gamma and static thresholds are).

    The round has no loop over requests: emitted tokens are scattered into one output buffer.
    Its host syncs are the ones an engine makes too: the confidences for the scheduler, which
    runs on the host, and the number of requests still decoding. Round logs are read back once,
    after the last round.
    """
    batch = len(prompts)
    gamma = drafter.gamma
    generator = torch.Generator().manual_seed(seed)
    request_ids = torch.arange(batch, dtype=torch.int64)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64)
    if int(lengths.min()) < 2:
        raise ValueError("every prompt needs at least 2 tokens")
    # A request that has finished keeps being drafted for (its rows are ignored), so its
    # drafter may write gamma scratch positions past its last round's overshoot.
    needed = int(lengths.max()) + max_new_tokens + 2 * gamma + 1
    if needed > target.config.max_len:
        raise ValueError(f"needs {needed} positions, the target has {target.config.max_len}")
    width = int(lengths.max())
    padded = torch.zeros(batch, width, dtype=torch.int64)
    for r, p in enumerate(prompts):
        padded[r, : len(p)] = torch.tensor(list(p))

    cache = target.new_cache(batch, needed)
    state = drafter.start(batch, needed)
    prefill_counts = lengths - 1
    if batch > 1 and all(list(p) == list(prompts[0]) for p in prompts[1:]):
        # One prompt for every request (the losslessness checks): prefill it once.
        shared = target.new_cache(1, needed)
        one = target.extend(padded[:1, :-1], prefill_counts[:1], shared)
        cache.keys[:] = shared.keys
        cache.values[:] = shared.values
        output = TargetOutput(*(t.expand(batch, *t.shape[1:]) for t in one))
    else:
        output = target.extend(padded[:, :-1], prefill_counts, cache)
    cache.commit(prefill_counts)
    drafter.observe(state, output, padded[:, 1:], prefill_counts)
    pending = padded[torch.arange(batch), lengths - 1]

    buffer = torch.zeros(batch, max_new_tokens + gamma + 1, dtype=torch.int64)
    produced = torch.zeros(batch, dtype=torch.int64)
    columns = torch.arange(gamma + 1)
    logged: list[tuple[list[int], torch.Tensor, torch.Tensor, torch.Tensor | None]] = []
    phase_log: list[list[float]] = []
    round_index = 0
    clock = time.perf_counter
    start = clock()
    while True:
        active_mask = produced < max_new_tokens
        active = active_mask.nonzero().squeeze(1).tolist()
        if not active:
            break
        t0 = clock()
        if truncation is None or temperature == 0:
            proposal = drafter.propose(state, pending, temperature, generator)
        else:
            proposal = drafter.propose(  # type: ignore[call-arg]
                state, pending, temperature, generator, truncation=truncation
            )
        t1 = clock()
        logits = proposal.confidence_logits
        if logits is None:
            rows = [[1.0] * gamma for _ in active]
        else:
            rows = calibrated(logits[active], confidence_temperatures).tolist()
        t2 = clock()
        scheduled = schedule(rows, sps)
        schedule_lengths = torch.zeros(batch, dtype=torch.int64)
        schedule_lengths[active] = torch.tensor(scheduled, dtype=torch.int64)
        counts = torch.where(active_mask, schedule_lengths + 1, 0)
        n = max(scheduled)
        t3 = clock()
        verify_tokens = torch.cat((pending[:, None], proposal.tokens[:, :n]), dim=1)
        output = target.extend(verify_tokens, counts, cache)
        target_probs = tempered_probs(output.logits, temperature)
        if temperature != 0:
            target_probs = truncated(target_probs, truncation)
        t4 = clock()
        emitted, accepted = verify(
            target_probs,
            proposal.probs[:, :n],
            proposal.tokens[:, :n],
            schedule_lengths,
            seed=seed,
            round_index=round_index,
            request_ids=request_ids,
            # The rows are tempered already: 1 samples from them as they are, 0 is greedy.
            temperature=0.0 if temperature == 0 else 1.0,
            generator=generator,
        )
        t5 = clock()
        keep = torch.where(active_mask, accepted + 1, 0)
        cache.commit(keep)
        drafter.observe(state, output, emitted.clamp(min=0), keep)
        slots = columns[: n + 1]
        written = slots[None, :] < keep[:, None]
        targets = (produced[:, None] + slots[None, :]).clamp(max=buffer.shape[1] - 1)
        buffer.scatter_(
            1, targets, torch.where(written, emitted.clamp(min=0), buffer.gather(1, targets))
        )
        pending = torch.where(
            keep > 0, emitted.gather(1, (keep - 1).clamp(min=0)[:, None])[:, 0], pending
        )
        produced = produced + keep
        t6 = clock()
        logged.append((active, schedule_lengths, accepted, None if logits is None else logits))
        phase_log.append([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5])
        round_index += 1
    seconds = clock() - start
    rounds = []
    for (active, schedule_lengths, accepted, logits), phases in zip(logged, phase_log, strict=True):
        rounds.append(
            RoundLog(
                scheduled=schedule_lengths[active].tolist(),
                accepted=accepted[active].tolist(),
                confidence_logits=None if logits is None else logits[active].numpy().copy(),
                seconds=sum(phases),
                phases=phases,
            )
        )
    tokens = [buffer[r, :max_new_tokens].tolist() for r in range(batch)]
    return DecodeResult(tokens, rounds, seconds)


@torch.no_grad()
def autoregressive_generate(
    target: FrozenTarget,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    *,
    temperature: float,
    seed: int = 0,
    truncation: Truncation | None = None,
) -> DecodeResult:
    """Plain decoding with the target's KV cache (one token per request per step), from the
    tempered law restricted by ``truncation`` when sampling."""
    batch = len(prompts)
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64)
    width = int(lengths.max())
    padded = torch.zeros(batch, width, dtype=torch.int64)
    for r, p in enumerate(prompts):
        padded[r, : len(p)] = torch.tensor(list(p))
    cache = target.new_cache(batch, width + max_new_tokens + 1)
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
            probs = truncated(probs, truncation)
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        for r in range(batch):
            generated[r].append(int(token[r]))
        last = target.extend(token[:, None], ones, cache).logits[:, 0]
        cache.commit(ones)
    seconds = time.perf_counter() - start
    return DecodeResult(generated, [], seconds)
