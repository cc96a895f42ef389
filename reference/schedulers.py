"""Schedulers: how many drafted tokens of each request to verify this round.

The public signature, which any user callable may implement::

    schedule(confidences: Sequence[Sequence[float]],
             sps: Callable[[int], float] | None) -> list[int]

``confidences[r][k-1]`` is c_{r,k}; the result is l_r in 0..gamma per request. Schedulers that
need more than confidences (the drafted tokens' probabilities, or state carried across rounds)
implement :class:`BlockScheduler` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Protocol, runtime_checkable

from .blocks import DraftBlock
from .distributions import to_fraction

Real = Fraction | float | int
SPS = Callable[[int], Real]
ScheduleFn = Callable[[Sequence[Sequence[Real]], SPS | None], list[int]]
TieBreak = Literal["position", "reverse-position"]


@runtime_checkable
class BlockScheduler(Protocol):
    """The decoder's full scheduler interface: whole blocks in, state carried across rounds."""

    name: str
    causal: bool

    def initial_state(self) -> Hashable: ...

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: SPS | None, state: Hashable
    ) -> tuple[list[int], Hashable]: ...


def prefix_survival(confidences: Sequence[Real]) -> list[Real]:
    """a_j = c_1 * ... * c_j."""
    out: list[Real] = []
    running: Real = 1
    for c in confidences:
        running = running * c
        out.append(running)
    return out


def ranked_candidates(
    confidences: Sequence[Sequence[Real]], tie_break: TieBreak = "position"
) -> list[tuple[int, int, Real]]:
    """(r, j, a_{r,j}) for every a > 0, by a descending; ties by position j, then request r.

    Because a_{r,j} never increases in j, position ties keep each request's candidates in
    prefix order: (r, j) is always ranked before (r, j + 1).
    """
    candidates = [
        (r, j, a)
        for r, row in enumerate(confidences)
        for j, a in enumerate(prefix_survival(row), start=1)
        if a > 0
    ]
    sign = 1 if tie_break == "position" else -1
    return sorted(candidates, key=lambda cand: (-cand[2], sign * cand[1], cand[0]))


def _require_sps(sps: SPS | None, who: str) -> SPS:
    if sps is None:
        raise ValueError(f"{who} needs an SPS curve (steps per second as a function of batch size)")
    return sps


@dataclass(frozen=True)
class WalkStep:
    """One step of Algorithm 1's walk: after admitting (request, position), the batch size B,
    expected tokens tau and objective Theta = tau * SPS(B). Step 0 admits nothing."""

    request: int | None
    position: int
    batch: int
    expected_tokens: Real
    theta: Real
    lengths: tuple[int, ...]


def greedy_path(
    confidences: Sequence[Sequence[Real]], sps: SPS, tie_break: TieBreak = "position"
) -> list[WalkStep]:
    """Every step of the greedy walk over all candidates, without stopping."""
    requests = len(confidences)
    lengths = [0] * requests
    batch = requests
    expected_tokens: Real = requests
    path = [WalkStep(None, 0, batch, expected_tokens, expected_tokens * sps(batch), tuple(lengths))]
    for r, j, a in ranked_candidates(confidences, tie_break):
        lengths[r] = j
        batch += 1
        expected_tokens += a
        theta = expected_tokens * sps(batch)
        path.append(WalkStep(r, j, batch, expected_tokens, theta, tuple(lengths)))
    return path


def _walk(
    confidences: Sequence[Sequence[Real]], sps: SPS, early_break: bool, tie_break: TieBreak
) -> list[int]:
    """Algorithm 1 of the DSpark paper; ``early_break=False`` is the global search."""
    path = greedy_path(confidences, sps, tie_break)
    best = path[0]
    for step in path[1:]:
        if step.theta > best.theta:
            best = step
        elif early_break:
            break
    return list(best.lengths)


class Algorithm1:
    """DSpark's hardware-aware prefix scheduler: greedy walk with the early break."""

    causal = True

    def __init__(self, tie_break: TieBreak = "position") -> None:
        self.tie_break: TieBreak = tie_break
        self.causal = tie_break == "position"
        self.name = "algorithm1" if tie_break == "position" else f"algorithm1({tie_break} ties)"

    def __call__(self, confidences: Sequence[Sequence[Real]], sps: SPS | None) -> list[int]:
        return _walk(confidences, _require_sps(sps, self.name), True, self.tie_break)


class GlobalSearch:
    """Algorithm 1 without the break: the best Theta over the whole greedy path (lookahead)."""

    name = "global-search"
    causal = False

    def __call__(self, confidences: Sequence[Sequence[Real]], sps: SPS | None) -> list[int]:
        return _walk(confidences, _require_sps(sps, self.name), False, "position")


class FixedGamma:
    """Verify the first ``length`` drafted tokens of every request (all of them by default)."""

    causal = True

    def __init__(self, length: int | None = None) -> None:
        if length is not None and length < 0:
            raise ValueError(f"fixed length must be >= 0, got {length}")
        self.length = length
        self.name = "fixed-gamma" if length is None else f"fixed({length})"

    def __call__(self, confidences: Sequence[Sequence[Real]], sps: SPS | None) -> list[int]:
        return [
            len(row) if self.length is None else min(self.length, len(row)) for row in confidences
        ]


class StaticThreshold:
    """Admit position j while the prefix survival a_j is at least ``threshold``."""

    causal = True

    def __init__(self, threshold: Real) -> None:
        self.threshold = to_fraction(threshold, where="static threshold")
        self.name = f"threshold({self.threshold})"

    def __call__(self, confidences: Sequence[Sequence[Real]], sps: SPS | None) -> list[int]:
        return [sum(1 for a in prefix_survival(row) if a >= self.threshold) for row in confidences]


class FixedTopK:
    """Across the batch, admit the K candidates with the largest prefix survival."""

    causal = True

    def __init__(self, k: int) -> None:
        if k < 0:
            raise ValueError(f"K must be >= 0, got {k}")
        self.k = k
        self.name = f"top-{k}"

    def __call__(self, confidences: Sequence[Sequence[Real]], sps: SPS | None) -> list[int]:
        return top_k_lengths(confidences, self.k)


def top_k_lengths(confidences: Sequence[Sequence[Real]], k: int) -> list[int]:
    lengths = [0] * len(confidences)
    for r, j, _ in ranked_candidates(confidences)[:k]:
        lengths[r] = max(lengths[r], j)
    return lengths


class CallableScheduler:
    """Adapts a callable with the public signature to :class:`BlockScheduler`."""

    def __init__(self, schedule: ScheduleFn, causal: bool | None = None) -> None:
        self.schedule = schedule
        self.name = getattr(schedule, "name", getattr(schedule, "__name__", repr(schedule)))
        self.causal = getattr(schedule, "causal", True) if causal is None else causal

    def initial_state(self) -> Hashable:
        return None

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: SPS | None, state: Hashable
    ) -> tuple[list[int], Hashable]:
        lengths = self.schedule([list(b.confidences) for b in blocks], sps)
        return check_lengths(lengths, blocks, self.name), state


def check_lengths(lengths: object, blocks: Sequence[DraftBlock], who: str) -> list[int]:
    if not isinstance(lengths, list | tuple) or len(lengths) != len(blocks):
        raise ValueError(
            f"scheduler {who}: expected a list of {len(blocks)} lengths, got {lengths!r}"
        )
    for r, (length, block) in enumerate(zip(lengths, blocks, strict=True)):
        gamma = len(block.tokens)
        if isinstance(length, bool) or not isinstance(length, int) or not 0 <= length <= gamma:
            raise ValueError(f"scheduler {who}: l_{r} = {length!r} is not an integer in 0..{gamma}")
    return list(lengths)


class StaleCapacity:
    """The production variant: capacity K from the confidences of two rounds earlier.

    Each round admits the top-K current candidates, with K computed by the global search over
    the confidences seen two rounds before (``initial_capacity`` for the first two rounds).
    """

    causal = True
    name = "stale-capacity"

    def __init__(self, initial_capacity: int = 2) -> None:
        if initial_capacity < 0:
            raise ValueError(f"initial capacity must be >= 0, got {initial_capacity}")
        self.initial_capacity = initial_capacity

    def initial_state(self) -> Hashable:
        return (self.initial_capacity, self.initial_capacity)

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: SPS | None, state: Hashable
    ) -> tuple[list[int], Hashable]:
        assert isinstance(state, tuple)
        capacity, next_capacity = state
        confidences = [list(b.confidences) for b in blocks]
        lengths = top_k_lengths(confidences, capacity)
        later = sum(_walk(confidences, _require_sps(sps, self.name), False, "position"))
        return lengths, (next_capacity, later)


class TokenGated:
    """Admit x_k only while its own draft probability q_k(x_k) is at least ``threshold``.

    It reads x_k to decide whether x_k is verified: anticipating, and lossy.
    """

    causal = False

    def __init__(self, threshold: Real) -> None:
        self.threshold = to_fraction(threshold, where="token-gate threshold")
        self.name = f"token-gated({self.threshold})"

    def initial_state(self) -> Hashable:
        return None

    def schedule_blocks(
        self, blocks: Sequence[DraftBlock], sps: SPS | None, state: Hashable
    ) -> tuple[list[int], Hashable]:
        lengths = []
        for block in blocks:
            admitted = 0
            for prob in block.draft_probs:
                if prob < self.threshold:
                    break
                admitted += 1
            lengths.append(admitted)
        return lengths, state


def as_block_scheduler(scheduler: BlockScheduler | ScheduleFn) -> BlockScheduler:
    if isinstance(scheduler, BlockScheduler):
        return scheduler
    if not callable(scheduler):
        raise ValueError(f"a scheduler must be callable, got {scheduler!r}")
    return CallableScheduler(scheduler)
