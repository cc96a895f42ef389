"""Measurements over decode logs: tau, per-position conditional acceptance, confidence
records for calibration, and the steps-per-second profile SPS(B) of this machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decoding.rounds import (
    DecodeResult,
    Drafter,
    VerifyStep,
    optimized_chain_verify,
    speculative_generate,
)
from ..models.target import Target


def mean_accepted_length(results: Sequence[DecodeResult]) -> float:
    """tau: tokens emitted per request-round (accepted drafts + the residual/bonus token)."""
    totals = [res.accepted_totals for res in results]
    count = sum(rounds for _, rounds in totals)
    return sum(emitted for emitted, _ in totals) / count if count else float("nan")


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


def full_batch_work(result: DecodeResult) -> tuple[int, float]:
    """(tokens emitted, seconds) over the rounds in which every request was still decoding.

    A static batch ends in a tail where finished requests have left; a serving engine with
    continuous batching refills the batch instead, so these rounds are the ones it would see.
    Decoding without round logs (the target alone) keeps every request active throughout.
    """
    if not result.rounds:
        return result.generated, result.seconds
    batch = len(result.tokens)
    full = [log for log in result.rounds if len(log.scheduled) == batch]
    return sum(a + 1 for log in full for a in log.accepted), sum(log.seconds for log in full)


def full_batch_rate(result: DecodeResult) -> float:
    tokens, seconds = full_batch_work(result)
    return tokens / seconds if seconds > 0 else float("nan")


def full_batch_tokens_per_second(results: Sequence[DecodeResult]) -> float:
    work = [full_batch_work(r) for r in results]
    seconds = sum(s for _, s in work)
    return sum(t for t, _ in work) / seconds if seconds > 0 else float("nan")


@dataclass
class SpsProfile:
    """Steps per second against B, the tokens verified in a round, at ``requests`` requests.

    A step is one whole round of the decoder loop as :func:`speculative_generate` runs it:
    drafting, confidences, scheduling, the target's cached pass over B tokens, chain
    verification, the commits and the drafter's update. Rounds are timed inside real decoding
    (``new_tokens`` per request) with draft lengths spread as evenly as B allows; only rounds
    with every request active count. Every B is visited once per sweep, in a fresh random order
    each sweep, so slow phases of a shared machine spread over all B; a visit's value is its
    median round time. Per B the table keeps the median and quartiles over sweeps (of the round
    time, given as rates).

    Algorithm 1 uses ``step_fit``: the least-squares line of the median round *time* in B,
    inverted (:func:`fit_steps_per_second`).
    """

    requests: int
    prompt_length: int
    new_tokens: int
    batch_sizes: list[int]
    sweeps: int
    rounds: list[int]
    step_median: list[float]
    step_q25: list[float]
    step_q75: list[float]
    step_fit: list[float]
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


def spread_lengths(total: int, requests: int, gamma: int) -> list[int]:
    """Draft lengths l_r in 0..gamma, as equal as possible, with sum(l_r + 1) = ``total``
    (clamped to the reachable range requests..requests * (gamma + 1))."""
    total = min(max(total, requests), requests * (gamma + 1))
    tokens = [total // requests + (r < total % requests) for r in range(requests)]
    return [t - 1 for t in tokens]


class SpreadSchedule:
    """A schedule that verifies ``total`` tokens per round, spread evenly over the requests."""

    def __init__(self, total: int) -> None:
        self.total = total

    def __call__(
        self, confidences: Sequence[Sequence[float]], sps: Callable[[int], float] | None
    ) -> list[int]:
        return spread_lengths(self.total, len(confidences), len(confidences[0]))


def fit_steps_per_second(sizes: Sequence[int], times: Sequence[float]) -> list[float]:
    """Steps per second from the least-squares line of round time in B, time = a + b * B.

    A round is fixed work (layers, kernel launches, the drafter) plus work per verified token,
    so a line is the cost model; fitting it keeps one noisy size from putting a cliff into the
    curve that Algorithm 1's greedy walk would stop at. A falling line is clamped flat (slope
    0, the mean time), since more tokens never make a round cheaper.
    """
    if len(sizes) != len(times) or len(sizes) < 2:
        raise ValueError("the fit needs round times at two or more batch sizes")
    x = np.asarray(sizes, dtype=np.float64)
    y = np.asarray(times, dtype=np.float64)
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2))
    slope = max(slope, 0.0)
    intercept = float(y.mean()) - slope * float(x.mean())
    return [1.0 / (intercept + slope * float(b)) for b in x]


def profile_sps(
    target: Target,
    drafter: Drafter,
    chunks: Sequence[Sequence[list[int]]],
    new_tokens: int,
    seed: int = 0,
    *,
    sweeps: int = 9,
    max_seconds: float = 50.0,
    min_sweeps: int = 3,
    verify: VerifyStep = optimized_chain_verify,
    stride: int = 1,
) -> SpsProfile:
    """Time whole decoding rounds verifying B = R..R * (gamma + 1) tokens, R = len(chunk),
    decoding the prompt ``chunks`` in turn (temperature 1), interleaved over ``sweeps``
    randomised sweeps; stops after ``min_sweeps`` once ``max_seconds`` have passed."""
    requests = len(chunks[0])
    if any(len(chunk) != requests for chunk in chunks):
        raise ValueError("every chunk of prompts needs the same number of requests")
    started = time.perf_counter()
    order_rng = np.random.default_rng(seed)
    # A stride > 1 times every stride-th B (and the largest): the fitted line needs few sizes.
    largest = requests * (drafter.gamma + 1)
    sizes = sorted({*range(requests, largest + 1, stride), largest})
    visits = 0

    def visit(size: int) -> list[float]:
        """Round times of one decode at ``size`` tokens per round (full rounds only)."""
        nonlocal visits
        chunk = chunks[visits % len(chunks)]
        result = speculative_generate(
            target,
            drafter,
            chunk,
            new_tokens,
            temperature=1.0,
            schedule=SpreadSchedule(size),
            seed=seed + visits,
            verify=verify,
        )
        visits += 1
        return [r.seconds for r in result.rounds if len(r.scheduled) == requests]

    for size in (sizes[0], sizes[-1]):  # warm-up
        visit(size)
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    rounds = dict.fromkeys(sizes, 0)
    done = 0
    while done < sweeps:
        for index in order_rng.permutation(len(sizes)):
            size = sizes[int(index)]
            times = visit(size)
            if times:
                samples[size].append(float(np.median(times)))
                rounds[size] += len(times)
        done += 1
        if done >= min_sweeps and time.perf_counter() - started > max_seconds:
            break
    missing = [size for size in sizes if not samples[size]]
    if missing:
        raise ValueError(f"no full round was timed at B = {missing}; decode more new tokens")

    # Quantiles of the round time, inverted (so the rate quartiles are q75 and q25 of the time).
    medians, q25, q75, step_times = [], [], [], []
    for size in sizes:
        fast, mid, slow = np.quantile(np.array(samples[size]), [0.25, 0.5, 0.75])
        step_times.append(float(mid))
        medians.append(1.0 / float(mid))
        q25.append(1.0 / float(slow))
        q75.append(1.0 / float(fast))
    fit = fit_steps_per_second(sizes, step_times)
    return SpsProfile(
        requests=requests,
        prompt_length=max(len(p) for chunk in chunks for p in chunk),
        new_tokens=new_tokens,
        batch_sizes=sizes,
        sweeps=done,
        rounds=[rounds[size] for size in sizes],
        step_median=medians,
        step_q25=q25,
        step_q75=q75,
        step_fit=fit,
        seconds=time.perf_counter() - started,
    )


def batched(items: Sequence[list[int]], size: int) -> list[list[list[int]]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def summary(results: Sequence[DecodeResult], gamma: int) -> dict[str, Any]:
    scheduled = [s for res in results for r in res.rounds for s in r.scheduled]
    accepted = [a for res in results for r in res.rounds for a in r.accepted]
    reached, passed = acceptance_counts(results, gamma)
    return {
        "tau": mean_accepted_length(results),
        "mean_accepted_drafts": float(np.mean(accepted)) if accepted else float("nan"),
        "acceptance_by_position": conditional_acceptance(results, gamma),
        "acceptance_reached": reached,
        "acceptance_passed": passed,
        "mean_verified_drafts": float(np.mean(scheduled)) if scheduled else float("nan"),
        "request_rounds": len(scheduled),
        "generated_tokens": sum(r.generated for r in results),
    }


def profile_batches(
    target: Target,
    drafter: Drafter,
    calibration: dict[str, list[list[int]]],
    batches: Sequence[int],
    new_tokens: int,
    sweeps: int,
    seconds: float,
    verify: VerifyStep,
    seed: int,
) -> dict[int, SpsProfile]:
    """SPS(B) profiled at each number of requests in ``batches``, on full chunks of the
    calibration prompts; the time limit grows with the batch (``seconds * (1 + batch / 8)``)."""
    profiles: dict[int, SpsProfile] = {}
    for batch in sorted(set(batches)):
        chunks = [c for prompts in calibration.values() for c in batched(prompts, batch)]
        profile = profile_sps(
            target,
            drafter,
            [c for c in chunks if len(c) == batch],
            new_tokens,
            seed,
            sweeps=sweeps,
            max_seconds=seconds * (1 + batch / 8),
            verify=verify,
        )
        profiles[batch] = profile
        print(
            f"SPS profile at {batch} request(s): {profile.sweeps} sweeps in "
            f"{profile.seconds:.0f}s; fitted {profile.step_fit[0]:.0f} steps/s at "
            f"B={profile.batch_sizes[0]}, {profile.step_fit[-1]:.0f} at B={profile.batch_sizes[-1]}"
        )
    return profiles
