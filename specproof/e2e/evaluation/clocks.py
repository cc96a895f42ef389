"""Step clocks: what a decoding round costs as a function of the tokens it verifies, and the
re-timing of recorded rounds under a clock.

A round's cost is the target's pass over B verified tokens (B = sum over the active requests
of l_r + 1) plus the drafter's work. Two clocks:

- :class:`MeasuredClock`: this CPU. A DSpark round costs ``intercept + slope * B``, the line
  fitted to whole DSpark rounds timed by :func:`specproof.e2e.evaluation.measurements.profile_sps`
  (the SPS profile Algorithm 1 is given); an EAGLE-3 round at gamma g costs the same line plus the
  measured difference between its drafting work (draft, confidences, commit phases) and
  DSpark's; a step of the target alone costs its measured step time.
- :class:`RooflineClock`: a memory-bound accelerator, stated as a model (no GPU measured): a
  pass over n tokens of a network whose weights are ``share`` of the target's costs
  ``share * step * max(1, n / knee)``: flat while reading the weights dominates, linear in
  the tokens past the knee, where the arithmetic does. The target's pass is ``share = 1``
  over B tokens; DSpark's block pass reads ``dspark_share`` of the target's bytes over
  R (gamma + 1) positions; each EAGLE-3 pass reads ``eagle_share`` over R positions.

Rounds of a static batch in which some requests have finished are charged at the B of the
requests still active (the drafter term keeps every request: finished ones are still drafted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..decoding.rounds import DecodeResult

DrafterKind = Literal["dspark", "eagle"]


@dataclass(frozen=True)
class MeasuredClock:
    """This machine's clock at ``requests`` requests; seconds."""

    requests: int
    intercept: float
    slope: float
    target_step: float
    eagle_extra: dict[int, float] = field(default_factory=dict)
    """Seconds an EAGLE-3 round at gamma g spends in drafting work beyond DSpark's."""
    name: str = "cpu"

    def round_seconds(self, drafter: DrafterKind, tokens: int, gamma: int) -> float:
        dspark_round = self.intercept + self.slope * tokens
        if drafter == "dspark":
            return dspark_round
        if gamma not in self.eagle_extra:
            raise ValueError(f"no measured EAGLE-3 drafting cost at gamma={gamma}")
        return dspark_round + self.eagle_extra[gamma]

    def target_seconds(self) -> float:
        return self.target_step

    def sps(self, tokens: int) -> float:
        """Steps per second of a DSpark round verifying ``tokens`` (Algorithm 1's SPS)."""
        return 1.0 / self.round_seconds("dspark", tokens, 0)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "measured on this CPU",
            "requests": self.requests,
            "dspark_round_seconds": f"{self.intercept:.6g} + {self.slope:.6g} * B",
            "intercept_seconds": self.intercept,
            "slope_seconds_per_token": self.slope,
            "target_step_seconds": self.target_step,
            "eagle_extra_seconds_by_gamma": {str(g): s for g, s in self.eagle_extra.items()},
        }


@dataclass(frozen=True)
class RooflineClock:
    """A memory-bound clock; costs in units of ``step``, the target's pass over one token."""

    requests: int
    knee: float
    dspark_gamma: int
    dspark_share: float
    eagle_share: float
    step: float = 1.0

    @property
    def name(self) -> str:
        return f"memory-bound, knee {self.knee:g}"

    def pass_cost(self, share: float, tokens: int) -> float:
        return share * self.step * max(1.0, tokens / self.knee)

    def round_seconds(self, drafter: DrafterKind, tokens: int, gamma: int) -> float:
        verify = self.pass_cost(1.0, tokens)
        if drafter == "dspark":
            return verify + self.pass_cost(
                self.dspark_share, self.requests * (self.dspark_gamma + 1)
            )
        return verify + gamma * self.pass_cost(self.eagle_share, self.requests)

    def target_seconds(self) -> float:
        return self.pass_cost(1.0, self.requests)

    def sps(self, tokens: int) -> float:
        return 1.0 / self.round_seconds("dspark", tokens, 0)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "model (no GPU measured)",
            "requests": self.requests,
            "pass_cost": "share * step * max(1, tokens / knee)",
            "knee_tokens": self.knee,
            "step": self.step,
            "dspark_share": self.dspark_share,
            "dspark_tokens_per_pass": self.requests * (self.dspark_gamma + 1),
            "eagle_share": self.eagle_share,
            "eagle_tokens_per_pass": self.requests,
        }


Clock = MeasuredClock | RooflineClock


def verified_tokens(scheduled: Sequence[int]) -> int:
    """B of a round: every active request verifies its l_r drafts and the pending token."""
    return sum(length + 1 for length in scheduled)


@dataclass(frozen=True)
class Retimed:
    """A decode under a clock: all its rounds, and those with every request active."""

    tokens: int
    seconds: float
    full_tokens: int
    full_seconds: float

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds

    @property
    def full_rate(self) -> float:
        return self.full_tokens / self.full_seconds if self.full_seconds > 0 else float("nan")


def retime(
    result: DecodeResult, cost: Callable[[int], float], requests: int, new_tokens: int
) -> Retimed:
    """``result``'s rounds charged ``cost(B)`` each; the target alone (no rounds) is charged
    one ``cost(requests)`` per new token."""
    if not result.rounds:
        step = cost(requests)
        return Retimed(result.generated, new_tokens * step, result.generated, new_tokens * step)
    seconds = full_seconds = 0.0
    full_tokens = 0
    for log in result.rounds:
        charge = cost(verified_tokens(log.scheduled))
        seconds += charge
        if len(log.scheduled) == requests:
            full_seconds += charge
            full_tokens += sum(a + 1 for a in log.accepted)
    return Retimed(result.generated, seconds, full_tokens, full_seconds)


def round_cost(clock: Clock, drafter: DrafterKind | None, gamma: int) -> Callable[[int], float]:
    """The per-round cost under ``clock``; ``drafter`` None: a step of the target alone."""
    if drafter is None:
        return lambda _tokens: clock.target_seconds()
    return lambda tokens: clock.round_seconds(drafter, tokens, gamma)


def line_from_profile(batch_sizes: Sequence[int], step_fit: Sequence[float]) -> tuple[float, float]:
    """(intercept, slope) of the round-time line behind an SPS profile's fitted rates
    (``fit_steps_per_second`` fits time = intercept + slope * B, so two points give it)."""
    if len(batch_sizes) < 2:
        raise ValueError("a profile needs two or more sizes")
    first, last = 1.0 / step_fit[0], 1.0 / step_fit[-1]
    slope = (last - first) / (batch_sizes[-1] - batch_sizes[0])
    return first - slope * batch_sizes[0], slope


WALL_CLOCK = "wall clock (measured)"
CPU_LINE = "CPU line fitted to measured rounds (modelled)"


def plain_clock_name(key: str) -> str:
    """What a stored clock key ("cpu", "knee 16") is, named plainly: which clock is measured
    and which is a model applied to recorded rounds."""
    if key == "cpu":
        return CPU_LINE
    if key.startswith("knee "):
        return f"memory-bound model, {key} (modelled)"
    raise ValueError(f"unknown clock {key!r}")
