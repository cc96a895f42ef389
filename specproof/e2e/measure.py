"""Measurements over decode logs: tau, per-position conditional acceptance, confidence
records for calibration, and the steps-per-second profile SPS(B) of this machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from specproof.optimized import chain_verify

from .decode import DecodeResult, Drafter
from .drafters import tempered_probs
from .target import Target


def mean_accepted_length(results: Sequence[DecodeResult]) -> float:
    """tau: tokens emitted per request-round (accepted drafts + the residual/bonus token)."""
    total = sum(a + 1 for res in results for r in res.rounds for a in r.accepted)
    count = sum(len(r.accepted) for res in results for r in res.rounds)
    return total / count if count else float("nan")


def acceptance_counts(results: Sequence[DecodeResult], gamma: int) -> tuple[list[int], list[int]]:
    """(reached, passed) per position k = 1..gamma: request-rounds in which draft k was
    verified after drafts 1..k-1 were accepted, and those in which it was accepted too."""
    reached = np.zeros(gamma, dtype=np.int64)
    passed = np.zeros(gamma, dtype=np.int64)
    for res in results:
        for log in res.rounds:
            for scheduled, accepted in zip(log.scheduled, log.accepted, strict=True):
                for k in range(min(scheduled, accepted + 1)):
                    reached[k] += 1
                    passed[k] += k < accepted
    return [int(x) for x in reached], [int(x) for x in passed]


def conditional_acceptance(results: Sequence[DecodeResult], gamma: int) -> list[float]:
    """P(draft k accepted | drafts 1..k-1 accepted and k verified), k = 1..gamma."""
    reached, passed = acceptance_counts(results, gamma)
    return [p / r if r else float("nan") for r, p in zip(reached, passed, strict=True)]


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

        A step is what a decoding round costs: the drafter's proposal, the target's cached pass
        over B tokens, and chain verification. Every batch size is timed once per sweep, in a
        fresh random order each sweep, so that slow phases of a shared machine spread over all B
        instead of landing on a run of neighbouring sizes; each visit takes the median of
        ``repeats`` calls. Per B the table keeps the median and the quartiles over sweeps (of the
    step time, given as rates).

        Algorithm 1 uses ``step_fit``: the least-squares non-decreasing fit (pool adjacent
        violators) of the median step *time* in B, inverted. A step cannot get cheaper with more
        tokens on this machine, and the fit averages neighbouring medians where noise breaks
        that, where a running minimum would lock onto the slowest early outlier.
    """

    requests: int
    context: int
    batch_sizes: list[int]
    sweeps: int
    repeats: int
    step_median: list[float]
    step_q25: list[float]
    step_q75: list[float]
    verify_median: list[float]
    step_fit: list[float]
    draft_seconds: float
    seconds: float

    @property
    def step_iqr(self) -> list[float]:
        return [hi - lo for lo, hi in zip(self.step_q25, self.step_q75, strict=True)]

    def curve(self) -> Callable[[int], float]:
        table = dict(zip(self.batch_sizes, self.step_fit, strict=True))
        low, high = min(table), max(table)

        def sps(batch: int) -> float:
            return table[min(max(batch, low), high)]

        return sps


def isotonic_increasing(values: Sequence[float]) -> list[float]:
    """Least-squares non-decreasing fit of ``values`` (equal weights), pool adjacent violators."""
    blocks: list[list[float]] = []  # [mean, weight]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight = blocks.pop()
            prev = blocks[-1]
            prev[0] = (prev[0] * prev[1] + mean * weight) / (prev[1] + weight)
            prev[1] += weight
    fitted: list[float] = []
    for mean, weight in blocks:
        fitted.extend([mean] * int(weight))
    return fitted


@torch.no_grad()
def profile_sps(
    target: Target,
    drafter: Drafter,
    requests: int,
    context: int,
    repeats: int,
    seed: int = 0,
    *,
    sweeps: int = 9,
    max_seconds: float = 50.0,
    min_sweeps: int = 3,
) -> SpsProfile:
    """Time decoding steps verifying B = requests..requests * (gamma + 1) tokens after a
    ``context``-token prefix (lengths spread as evenly as B allows), interleaved over
    ``sweeps`` randomised sweeps; stops after ``min_sweeps`` once ``max_seconds`` have passed."""
    started = time.perf_counter()
    gamma = drafter.gamma
    generator = torch.Generator().manual_seed(seed)
    order_rng = np.random.default_rng(seed)
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
    request_ids = torch.arange(requests, dtype=torch.int64)
    sizes = list(range(requests, requests * (gamma + 1) + 1))

    def counts_for(size: int) -> torch.Tensor:
        counts = torch.full((requests,), size // requests, dtype=torch.int64)
        counts[: size % requests] += 1
        return counts

    def step(size: int) -> tuple[float, float]:
        """(draft seconds, verify seconds) of one step verifying ``size`` tokens."""
        start = time.perf_counter()
        proposal = drafter.propose(state, pending, 1.0, generator)
        drafted = time.perf_counter()
        counts = counts_for(size)
        n = int(counts.max()) - 1
        block = torch.cat((pending[:, None], proposal.tokens[:, :n]), dim=1)
        out = target.extend(block, counts, cache)
        chain_verify(
            tempered_probs(out.logits, 1.0),
            proposal.probs[:, :n],
            proposal.tokens[:, :n],
            seed=seed,
            num_draft_tokens=counts - 1,
            round=0,
            request_ids=request_ids,
            temperature=1.0,
            backend="torch",
        )
        return drafted - start, time.perf_counter() - drafted

    for size in sizes:  # warm-up
        step(size)
    samples: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    done = 0
    while done < sweeps:
        for index in order_rng.permutation(len(sizes)):
            size = sizes[int(index)]
            calls = [step(size) for _ in range(repeats)]
            draft = float(np.median([d for d, _ in calls]))
            verify = float(np.median([v for _, v in calls]))
            samples[size].append((draft, verify))
        done += 1
        if done >= min_sweeps and time.perf_counter() - started > max_seconds:
            break

    # Quantiles of the step time, inverted (so the rate quartiles are q75 and q25 of the time).
    medians, q25, q75, verify_median, step_times = [], [], [], [], []
    for size in sizes:
        times = np.array([d + v for d, v in samples[size]])
        fast, mid, slow = np.quantile(times, [0.25, 0.5, 0.75])
        step_times.append(float(mid))
        medians.append(1.0 / float(mid))
        q25.append(1.0 / float(slow))
        q75.append(1.0 / float(fast))
        verify_median.append(1.0 / float(np.median([v for _, v in samples[size]])))
    fit = [1.0 / t for t in isotonic_increasing(step_times)]
    draft_seconds = float(np.median([d for size in sizes for d, _ in samples[size]]))
    return SpsProfile(
        requests=requests,
        context=context,
        batch_sizes=sizes,
        sweeps=done,
        repeats=repeats,
        step_median=medians,
        step_q25=q25,
        step_q75=q75,
        verify_median=verify_median,
        step_fit=fit,
        draft_seconds=draft_seconds,
        seconds=time.perf_counter() - started,
    )
