"""The speed comparisons of an end-to-end run: batch-1 latency per decoder, the round-time
breakdown, the drafter comparison at equal parameters and at equal drafting time, and the
scheduler comparison at B = 4 and 8 with a paired sign test over chunks.

Every comparison decodes each chunk of prompts with all of its decoders back to back, in a
fresh random order per chunk (:func:`specproof.e2e.evaluation.paired_runs.interleaved`), and reports
speeds as medians of per-chunk ratios to a baseline decoded on the same chunk.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specproof.stats.sign_test import sign_test_slower

from ..decoding.rounds import (
    PHASES,
    DecodeResult,
    Drafter,
    Schedule,
    VerifyStep,
    autoregressive_generate,
    speculative_generate,
)
from .measurements import full_batch_rate
from .paired_runs import Decoder, interleaved, speed_entry, speed_ratios


@dataclass(frozen=True)
class Setting:
    """What every decoder of a comparison shares."""

    new_tokens: int
    verify: VerifyStep


def speculative_decoder(
    target: Any,
    drafter: Drafter,
    setting: Setting,
    temperature: float,
    schedule: Schedule,
    seed: int,
    sps: Callable[[int], float] | None = None,
    confidence_temperatures: Sequence[float] | None = None,
) -> Decoder:
    def decode(chunk: list[list[int]], index: int) -> DecodeResult:
        return speculative_generate(
            target,
            drafter,
            chunk,
            setting.new_tokens,
            temperature=temperature,
            schedule=schedule,
            sps=sps,
            confidence_temperatures=confidence_temperatures,
            seed=seed + index,
            verify=setting.verify,
        )

    return decode


def target_decoder(target: Any, setting: Setting, temperature: float, seed: int) -> Decoder:
    def decode(chunk: list[list[int]], index: int) -> DecodeResult:
        return autoregressive_generate(
            target, chunk, setting.new_tokens, temperature=temperature, seed=seed + index
        )

    return decode


def with_gamma(drafter: Drafter, gamma: int) -> Drafter:
    """The same EAGLE-3 drafter (shared weights) drafting ``gamma`` tokens per round: its
    cost is one layer pass per token. (DSpark's block is one pass; shorter blocks are verified
    prefixes, chosen by the scheduler.)"""
    shorter = copy.copy(drafter)
    shorter.gamma = gamma
    return shorter


def phase_breakdown(results: Sequence[DecodeResult]) -> dict[str, float]:
    """Mean milliseconds per round in each phase of :data:`PHASES`, over all rounds."""
    phases = np.array([log.phases for res in results for log in res.rounds])
    if phases.size == 0:
        return {name: float("nan") for name in (*PHASES, "round")}
    means = phases.mean(axis=0) * 1e3
    out = {name: float(m) for name, m in zip(PHASES, means, strict=True)}
    out["round"] = float(means.sum())
    return out


def target_step_ms(results: Sequence[DecodeResult], new_tokens: int) -> float:
    """Mean milliseconds per decoding step of the target alone."""
    return 1e3 * sum(r.seconds for r in results) / (len(results) * new_tokens)


def compare(
    decoders: Mapping[str, Decoder],
    chunks: Sequence[list[list[int]]],
    seed: int,
    summarize: Callable[[Sequence[DecodeResult]], dict[str, Any]],
    baseline: str = "target only",
) -> dict[str, Any]:
    """Interleaved runs; each decoder's summary, speed against ``baseline`` and breakdown."""
    runs = interleaved(decoders, chunks, seed)
    rows: dict[str, Any] = {}
    for label, decoded in runs.items():
        speed = speed_entry(decoded, runs[baseline])
        if label == baseline:
            rows[label] = {"tau": 1.0, **speed}
        else:
            rows[label] = {**summarize(decoded), **speed, "breakdown_ms": phase_breakdown(decoded)}
    return rows


def drafting_ms(results: Sequence[DecodeResult]) -> float:
    return phase_breakdown(results)["draft"]


def best_fixed_gamma(
    make: Callable[[int], Decoder],
    gammas: Sequence[int],
    chunks: Sequence[list[list[int]]],
    seed: int,
) -> tuple[int, dict[str, float]]:
    """The fixed gamma with the highest full-batch tokens/s over ``chunks`` (a sweep on
    calibration prompts, so the comparison that follows does not select on its own data)."""
    runs = interleaved({str(g): make(g) for g in gammas}, chunks, seed)
    rates = {
        g: float(np.median([full_batch_rate(r) for r in results])) for g, results in runs.items()
    }
    best = max(rates, key=lambda g: rates[g])
    return int(best), rates


def scheduler_test(
    rows: Mapping[str, Sequence[DecodeResult]],
    candidate: str,
    references: Sequence[str],
    alpha: float,
    slower_share: float,
) -> dict[str, Any]:
    """Sign tests of "``candidate`` is slower than each reference", over per-chunk ratios of
    whole-decode and of full-batch tokens/s, and of "``candidate`` is faster" (whole decode:
    the same test on the inverse ratios, ``claim`` "faster")."""
    out: dict[str, Any] = {}
    for reference in references:
        entry = {}
        for kind, rate in (("whole_decode", None), ("full_batch", full_batch_rate)):
            ratios = (
                speed_ratios(rows[candidate], rows[reference])
                if rate is None
                else speed_ratios(rows[candidate], rows[reference], rate)
            )
            entry[kind] = {
                **sign_test_slower(ratios, alpha, slower_share).as_dict(),
                "ratios": ratios,
                "claim": "slower",
            }
            if rate is None:
                inverse = [1.0 / r for r in ratios]
                entry["whole_decode_faster"] = {
                    **sign_test_slower(inverse, alpha, slower_share).as_dict(),
                    "ratios": inverse,
                    "claim": "faster",
                }
        out[reference] = entry
    return out
