"""Recorded rounds (the ``*_rounds.json.gz`` files of ``experiments.scheduler_clocks``) charged
under a clock rebuilt from its stored description, and the hindsight best fixed gamma.

A recorded decode is a list of rounds ``{"l": [...], "a": [...], "B": int}`` (per active request
the verified length and accepted count; the verify width). Every request of a decode emits
``new_tokens`` tokens (the decoder truncates), so a decode's token count is
``requests * new_tokens``; its rounds with ``len(l) == requests`` are its full-batch rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .clocks import Clock, MeasuredClock, Retimed, RooflineClock, verified_tokens

Round = Mapping[str, Any]
MEASURES = ("whole", "full_batch")


def clock_from_description(description: Mapping[str, Any]) -> Clock:
    """The clock whose ``describe()`` is ``description`` (as stored per batch size and clock)."""
    requests = int(description["requests"])
    if "intercept_seconds" in description:
        return MeasuredClock(
            requests=requests,
            intercept=float(description["intercept_seconds"]),
            slope=float(description["slope_seconds_per_token"]),
            target_step=float(description["target_step_seconds"]),
            eagle_extra={
                int(g): float(s) for g, s in description["eagle_extra_seconds_by_gamma"].items()
            },
        )
    if "knee_tokens" in description:
        return RooflineClock(
            requests=requests,
            knee=float(description["knee_tokens"]),
            dspark_gamma=int(description["dspark_tokens_per_pass"]) // requests - 1,
            dspark_share=float(description["dspark_share"]),
            eagle_share=float(description["eagle_share"]),
            step=float(description["step"]),
        )
    raise ValueError(f"not a clock description: keys {sorted(description)}")


def retime_recorded(
    decode: Sequence[Round], cost: Callable[[int], float], requests: int, new_tokens: int
) -> Retimed:
    """A recorded decode's rounds charged ``cost(B)`` each (B recomputed from ``l``)."""
    if not decode:
        raise ValueError("a recorded speculative decode has at least one round")
    seconds = full_seconds = 0.0
    full_tokens = 0
    for entry in decode:
        lengths, accepted = entry["l"], entry["a"]
        if len(lengths) != len(accepted) or verified_tokens(lengths) != entry["B"]:
            raise ValueError(f"inconsistent recorded round {dict(entry)}")
        charge = cost(verified_tokens(lengths))
        seconds += charge
        if len(lengths) == requests:
            full_seconds += charge
            full_tokens += sum(a + 1 for a in accepted)
    return Retimed(requests * new_tokens, seconds, full_tokens, full_seconds)


def chunk_rate(retimed: Retimed, measure: str) -> float:
    """Tokens per clock-second of one decode: all rounds ("whole") or full-batch rounds."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, not {measure!r}")
    return retimed.rate if measure == "whole" else retimed.full_rate


def pooled_rate(retimed: Sequence[Retimed], measure: str) -> float:
    """Tokens per clock-second pooled over decodes (total tokens over total clock-seconds)."""
    if measure == "whole":
        return sum(r.tokens for r in retimed) / sum(r.seconds for r in retimed)
    if measure == "full_batch":
        return sum(r.full_tokens for r in retimed) / sum(r.full_seconds for r in retimed)
    raise ValueError(f"measure must be one of {MEASURES}, not {measure!r}")


def hindsight_best_gamma(
    by_gamma: Mapping[int, Sequence[Retimed]], measure: str
) -> tuple[int, dict[int, float]]:
    """The fixed gamma whose decodes of the measured chunks have the highest pooled rate (the
    lowest clock-seconds per token) under ``measure``, and every gamma's pooled rate. An oracle
    that has seen the chunks it is judged on: a reference, not a schedule one could run."""
    if not by_gamma:
        raise ValueError("no fixed-gamma decodes to choose from")
    rates = {gamma: pooled_rate(values, measure) for gamma, values in by_gamma.items()}
    return max(rates, key=lambda gamma: (rates[gamma], -gamma)), rates


def uniform_gamma(decodes: Sequence[Sequence[Round]]) -> int | None:
    """The verified length every request had in every round of ``decodes``, or None."""
    lengths = {length for decode in decodes for entry in decode for length in entry["l"]}
    return lengths.pop() if len(lengths) == 1 else None


def verify_widths(decodes: Sequence[Sequence[Round]], requests: int) -> dict[str, float]:
    """Per round, mean over the decodes' rounds: B = sum(l + 1) over active requests, and the
    padded width requests * (max l + 1) of a dense [requests, max l + 1] block."""
    rounds = [entry for decode in decodes for entry in decode]
    if not rounds:
        raise ValueError("no rounds")
    return {
        "mean_B": sum(verified_tokens(e["l"]) for e in rounds) / len(rounds),
        "mean_padded": sum(requests * (max(e["l"]) + 1) for e in rounds) / len(rounds),
        "rounds_per_decode": len(rounds) / len(decodes),
    }
