"""Measurements over decode logs: tau, per-position conditional acceptance, confidence
records for calibration, and the steps-per-second profile SPS(B) of this machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from .decode import DecodeResult, Drafter
from .target import Target


def mean_accepted_length(results: Sequence[DecodeResult]) -> float:
    """tau: tokens emitted per request-round (accepted drafts + the residual/bonus token)."""
    total = sum(a + 1 for res in results for r in res.rounds for a in r.accepted)
    count = sum(len(r.accepted) for res in results for r in res.rounds)
    return total / count if count else float("nan")


def conditional_acceptance(results: Sequence[DecodeResult], gamma: int) -> list[float]:
    """P(draft k accepted | drafts 1..k-1 accepted and k verified), k = 1..gamma."""
    reached = np.zeros(gamma)
    passed = np.zeros(gamma)
    for res in results:
        for log in res.rounds:
            for scheduled, accepted in zip(log.scheduled, log.accepted, strict=True):
                for k in range(min(scheduled, accepted + 1)):
                    reached[k] += 1
                    passed[k] += k < accepted
    with np.errstate(invalid="ignore", divide="ignore"):
        return [float(x) for x in passed / reached]


def confidence_records(results: Sequence[DecodeResult]) -> tuple[np.ndarray, np.ndarray]:
    """(confidence logits [N, gamma], accepted counts [N]) of request-rounds that verified
    the whole block (so the survival of every position is observed)."""
    logits, accepted = [], []
    for res in results:
        for log in res.rounds:
            if log.confidence_logits is None:
                continue
            gamma = log.confidence_logits.shape[1]
            for i, (scheduled, count) in enumerate(zip(log.scheduled, log.accepted, strict=True)):
                if scheduled == gamma:
                    logits.append(log.confidence_logits[i])
                    accepted.append(count)
    if not logits:
        return np.zeros((0, 0)), np.zeros(0, dtype=np.int64)
    return np.stack(logits), np.asarray(accepted, dtype=np.int64)


def tokens_per_second(results: Sequence[DecodeResult]) -> float:
    generated = sum(r.generated for r in results)
    seconds = sum(r.seconds for r in results)
    return generated / seconds if seconds > 0 else float("nan")


@dataclass
class SpsProfile:
    """Steps per second against B, the tokens verified in a step, at ``requests`` requests.

    ``verify`` times the target's cached pass alone; ``step`` adds the drafter's proposal
    (fixed cost per step), and is the curve Algorithm 1 uses, made non-increasing in B
    (``step_monotone``: a step cannot get cheaper with more tokens; timing noise can).
    """

    requests: int
    context: int
    batch_sizes: list[int]
    verify: list[float]
    step: list[float]
    step_monotone: list[float]
    draft_seconds: float

    def curve(self) -> Callable[[int], float]:
        table = dict(zip(self.batch_sizes, self.step_monotone, strict=True))
        low, high = min(table), max(table)

        def sps(batch: int) -> float:
            return table[min(max(batch, low), high)]

        return sps


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


@torch.no_grad()
def profile_sps(
    target: Target,
    drafter: Drafter,
    requests: int,
    context: int,
    repeats: int,
    seed: int = 0,
) -> SpsProfile:
    """Time verification passes of B = requests..requests * (gamma + 1) tokens after a
    ``context``-token prefix, lengths spread as evenly as B allows."""
    gamma = drafter.gamma
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(
        0, target.config.vocab, (requests, context + gamma + 1), generator=generator
    )
    cache = target.new_cache(requests)
    prefix = torch.full((requests,), context, dtype=torch.int64)
    output = target.extend(tokens[:, :context], prefix, cache)
    cache.commit(prefix)
    state = drafter.start(requests)
    drafter.observe(state, output, tokens[:, 1 : context + 1], prefix)
    pending = tokens[:, context]
    draft_seconds = _median_time(lambda: drafter.propose(state, pending, 1.0, generator), repeats)
    sizes = list(range(requests, requests * (gamma + 1) + 1))
    verify = []
    for size in sizes:
        counts = torch.full((requests,), size // requests, dtype=torch.int64)
        counts[: size % requests] += 1
        width = int(counts.max())
        block = tokens[:, context : context + width]
        seconds = _median_time(partial(target.extend, block, counts, cache), repeats)
        verify.append(1.0 / seconds)
    step = [1.0 / (1.0 / v + draft_seconds) for v in verify]
    monotone = list(np.minimum.accumulate(step))
    return SpsProfile(
        requests, context, sizes, verify, step, [float(x) for x in monotone], draft_seconds
    )
