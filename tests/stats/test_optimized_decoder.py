"""The optimized ``BatchedDecoder`` sampled for the joint law of its first m emitted tokens,
tested against the reference's exact law (:func:`specproof.reference.exact_law`).

Models: a bigram target and a semi-autoregressive drafter over 2 tokens, probabilities in
multiples of 1/16 (float32 holds them and their partial sums exactly), confidences that depend
on the previous drafted token (c_2 = 15/16 after token 0, 0 after token 1, as in DSpark's
Appendix A), gamma = 2 and m = 3 tokens, so a request runs for one to three rounds.

Batch structure. A coupled scheduler (Algorithm 1, top-K, the stale-capacity top-K, the global
search) reads the confidences of every request in its batch, so the law of a request depends
on the batch it is in. Here every coupled scheduler runs on fixed pairs of requests: one
``generate`` call over thousands of requests whose scheduler is the optimized scheduler
applied to each pair as its own batch (vectorised over pairs with ``torch.func.vmap``, and
cross-checked against direct calls), and each pair is tested against the reference's exact
joint law of a two-request batch with the same prompts and the same SPS curve. Per-request
schedulers (fixed gamma, static threshold) need no pairing: a batch of many thousands of
requests with one prompt is that many independent draws of the one-request exact law.

Every statistical assertion uses :func:`specproof.stats.goodness_of_fit`: false-fail rate
alpha = 1e-6 per test, and n at least :func:`specproof.stats.required_samples`, so a sampler
whose law is at TV >= delta from the exact law fails with probability >= 1 - beta
(beta = 1e-3; delta = 0.05 at scale, 0.1 for pairs, 0.4 for the Triton interpreter cases).
The lossy global search is sampled at the pairs' n and must be rejected; its exact TV from
the target law comes from the reference, and the test asserts, before sampling, that
:func:`specproof.stats.detection_power` at that n is >= 1 - beta.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
import torch
from specproof.optimized import Backend
from specproof.optimized import schedulers as batched
from specproof.optimized.decoder import BatchedDecoder
from specproof.optimized.schedulers import BatchedScheduler, SchedulerState

from specproof import reference
from specproof.stats import detection_power, goodness_of_fit, required_samples

ALPHA = 1e-6
BETA = 1e-3
DELTA_SCALE = 0.05
DELTA_PAIRS = 0.1
DELTA_TRITON = 0.4
VOCAB = 2
GAMMA = 2
NUM_TOKENS = 3
SEED = 20_250_601
DEVICE = torch.device(os.environ.get("SPECPROOF_DEVICE", "cpu"))
PAIR_PROMPTS: tuple[tuple[int, ...], ...] = ((0,), (1,))
SCALE_PROMPT: tuple[int, ...] = (0,)


def _f(numerator: int) -> Fraction:
    return Fraction(numerator, 16)


def build_models() -> tuple[reference.TargetModel, reference.Drafter]:
    """Dyadic bigram tables. p(.|1) is a tie (greedy takes the lowest id there)."""
    target = reference.TargetModel.from_table(
        VOCAB, 1, {(0,): (_f(11), _f(5)), (1,): (_f(8), _f(8))}
    )
    proposals: dict[reference.models.DraftKey, tuple[Fraction, ...]] = {}
    confidences: dict[reference.models.DraftKey, Fraction] = {}
    first = {0: (_f(8), _f(8)), 1: (_f(12), _f(4))}
    second = {0: (_f(14), _f(2)), 1: (_f(4), _f(12))}
    for context in (0, 1):
        proposals[((context,), 1, None)] = first[context]
        confidences[((context,), 1, None)] = _f(13) if context == 0 else _f(12)
        for previous in (0, 1):
            proposals[((context,), 2, previous)] = second[previous]
            confidences[((context,), 2, previous)] = _f(15) if previous == 0 else Fraction(0)
    drafter = reference.Drafter.from_tables(VOCAB, 1, GAMMA, proposals, confidences)
    return target, drafter


SPS_TABLE = {1: Fraction(1), 2: Fraction(3, 4), 3: Fraction(1, 2), 4: Fraction(2, 5)}
SPS_TAIL = Fraction(7, 20)
"""Steps per second, chosen (among curves on a 1/20 grid) to make the global search's lookahead
show most: its exact TV from the target law is 0.171 for the pairs."""


def sps_curve() -> reference.SPS:
    return reference.table_sps(SPS_TABLE, tail=SPS_TAIL)


# Tensor adapters of the reference tables ---------------------------------------------------


def tensor_models(
    target: reference.TargetModel, drafter: reference.Drafter
) -> tuple[
    Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor],
    Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]],
]:
    """The decoder's model callables over the same tables (order-1 contexts)."""
    p_table = torch.tensor(
        [[float(m) for m in target.dist((c,))] for c in range(VOCAB)], dtype=torch.float32
    )
    # q and c keyed by (context, k, previous draft token); slot VOCAB stands for "none".
    q_table = torch.zeros(VOCAB, GAMMA + 1, VOCAB + 1, VOCAB, dtype=torch.float32)
    c_table = torch.zeros(VOCAB, GAMMA + 1, VOCAB + 1, dtype=torch.float64)
    for context in range(VOCAB):
        for k in range(1, GAMMA + 1):
            for previous in [None] if k == 1 else list(range(VOCAB)):
                drafted = () if previous is None else (0,) * (k - 2) + (previous,)
                slot = VOCAB if previous is None else previous
                q = drafter.proposal((context,), drafted)
                q_table[context, k, slot] = torch.tensor([float(m) for m in q])
                c_table[context, k, slot] = float(drafter.confidence((context,), drafted))
    p_table, q_table, c_table = (table.to(DEVICE) for table in (p_table, q_table, c_table))

    def last_token(tokens: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
        return tokens.gather(1, (ends - 1)[:, None])[:, 0]

    def target_fn(tokens: torch.Tensor, lengths: torch.Tensor, positions: int) -> torch.Tensor:
        rows = [p_table[last_token(tokens, lengths - positions + 1 + j)] for j in range(positions)]
        return torch.stack(rows, dim=1)

    def drafter_fn(
        tokens: torch.Tensor, context_lengths: torch.Tensor, drafted: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        context = last_token(tokens, context_lengths)
        if drafted == 0:
            slot = torch.full_like(context, VOCAB)
        else:
            slot = last_token(tokens, context_lengths + drafted)
        return q_table[context, drafted + 1, slot], c_table[context, drafted + 1, slot]

    return target_fn, drafter_fn


# Fixed groups of requests as separate scheduler batches -------------------------------------


class PerGroup:
    """Applies a batched scheduler to fixed groups of ``size`` consecutive request ids, each
    group as its own batch with its own state (the exact law of a group is then the
    reference's law of a ``size``-request batch).

    Groups with the same number of active requests are scheduled together through
    ``torch.func.vmap``; the first groups of each call are re-scheduled directly and must agree.
    """

    def __init__(self, inner: BatchedScheduler, size: int, groups: int) -> None:
        self.inner = inner
        self.size = size
        self.groups = groups
        self.name = f"{inner.name} per group of {size}"
        self.causal = inner.causal
        self.active = torch.zeros(0, dtype=torch.int64)
        self.cross_checked = 0

    def initial_state(self, device: torch.device) -> SchedulerState:
        state = self.inner.initial_state(device)
        if state is None:
            return None
        return tuple(part.expand(self.groups).clone() for part in state)

    def _run(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        if state is None:
            lengths = torch.func.vmap(lambda c: self.inner(c, sps, None)[0])(confidences)
            return lengths, None
        in_dims = (0, tuple(0 for _ in state))
        result: tuple[torch.Tensor, Any] = torch.func.vmap(
            lambda c, s: self.inner(c, sps, s), in_dims=in_dims
        )(confidences, state)
        return result

    def __call__(
        self, confidences: torch.Tensor, sps: torch.Tensor | None, state: SchedulerState
    ) -> tuple[torch.Tensor, SchedulerState]:
        group_of_row = self.active // self.size
        groups, counts = torch.unique_consecutive(group_of_row, return_counts=True)
        lengths = torch.zeros(confidences.shape[0], dtype=torch.int64, device=confidences.device)
        starts = torch.cumsum(counts, 0) - counts
        next_state = None if state is None else tuple(part.clone() for part in state)
        for active in range(1, self.size + 1):
            chosen = (counts == active).nonzero().squeeze(1)
            if chosen.numel() == 0:
                continue
            rows = starts[chosen][:, None] + torch.arange(active, device=counts.device)[None, :]
            sub_state = None if state is None else tuple(part[groups[chosen]] for part in state)
            sub_lengths, sub_next = self._run(confidences[rows], sps, sub_state)
            lengths[rows] = sub_lengths
            if next_state is not None:
                for part, new in zip(next_state, sub_next, strict=True):
                    part[groups[chosen]] = new
            for i in range(min(2, chosen.numel())):  # vmap agrees with direct calls
                one_state = None if sub_state is None else tuple(s[i] for s in sub_state)
                direct, direct_next = self.inner(confidences[rows[i]], sps, one_state)
                assert torch.equal(direct, sub_lengths[i])
                if direct_next is not None:
                    assert all(
                        torch.equal(d, s[i]) for d, s in zip(direct_next, sub_next, strict=True)
                    )
                self.cross_checked += 1
        return lengths, next_state


class GroupedDecoder(BatchedDecoder):
    """Tells a :class:`PerGroup` scheduler which request ids are active in each round."""

    def one_round(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        requests: torch.Tensor,
        remaining: torch.Tensor,
        state: object,
        seed: int,
        offset: int,
        round: int,
    ) -> tuple[torch.Tensor, torch.Tensor, object]:
        assert isinstance(self.scheduler, PerGroup)
        self.scheduler.active = requests
        return super().one_round(tokens, lengths, requests, remaining, state, seed, offset, round)


# Laws and samples ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scheduler:
    name: str
    make_reference: Callable[[], reference.ScheduleFn | reference.BlockScheduler]
    make_batched: Callable[[], BatchedScheduler]
    coupled: bool


SCHEDULERS = {
    s.name: s
    for s in (
        Scheduler("algorithm1", reference.Algorithm1, batched.Algorithm1, True),
        Scheduler("top-2", lambda: reference.FixedTopK(2), lambda: batched.FixedTopK(2), True),
        Scheduler(
            "stale-capacity",
            lambda: reference.StaleCapacity(1),
            lambda: batched.StaleCapacity(1),
            True,
        ),
        Scheduler("fixed-gamma", reference.FixedGamma, batched.FixedGamma, False),
        Scheduler(
            "threshold",
            lambda: reference.StaticThreshold(Fraction(1, 2)),
            lambda: batched.StaticThreshold(0.5),
            False,
        ),
        Scheduler("global-search", reference.GlobalSearch, batched.GlobalSearch, True),
    )
}
CAUSAL = [name for name in SCHEDULERS if name != "global-search"]
RULES = {"chain": (reference.ChainRule, 1.0), "greedy": (reference.GreedyRule, 0.0)}


def reference_decoder(rule: str, scheduler: str) -> reference.SpeculativeDecoder:
    target, drafter = build_models()
    return reference.SpeculativeDecoder(
        target,
        drafter,
        RULES[rule][0](),
        SCHEDULERS[scheduler].make_reference(),
        GAMMA,
        sps_curve(),
    )


_LAWS: dict[tuple[str, str, tuple[tuple[int, ...], ...]], dict[Hashable, Fraction]] = {}


def exact(rule: str, scheduler: str, prompts: tuple[tuple[int, ...], ...]) -> dict[Any, Fraction]:
    key = (rule, scheduler, prompts)
    if key not in _LAWS:
        law = reference.exact_law(reference_decoder(rule, scheduler), prompts, NUM_TOKENS)
        _LAWS[key] = dict(law)
    return _LAWS[key]


def sample(
    rule: str,
    scheduler: str,
    prompts: Sequence[tuple[int, ...]],
    copies: int,
    *,
    seed: int,
    backend: Backend = "torch",
) -> list[tuple[tuple[int, ...], ...]]:
    """``copies`` independent draws of the joint output of ``prompts`` (one batch each for a
    coupled scheduler, as fixed groups inside one ``generate`` call)."""
    target, drafter = build_models()
    target_fn, drafter_fn = tensor_models(target, drafter)
    spec = SCHEDULERS[scheduler]
    size = len(prompts)
    inner = spec.make_batched()
    decoder_class = GroupedDecoder if spec.coupled else BatchedDecoder
    chosen: BatchedScheduler = PerGroup(inner, size, copies) if spec.coupled else inner
    decoder = decoder_class(
        target_fn,
        drafter_fn,
        chosen,
        GAMMA,
        sps=batched.sps_table(sps_curve(), 2 * (1 + GAMMA) * size),
        temperature=RULES[rule][1],
        backend=backend,
    )
    everything = [p for _ in range(copies) for p in prompts]
    rows = decoder.generate(everything, NUM_TOKENS, seed=seed, device=DEVICE).tolist()
    if isinstance(chosen, PerGroup):
        assert chosen.cross_checked > 0
    return [tuple(tuple(rows[g * size + i]) for i in range(size)) for g in range(copies)]


def check_fit(samples: list[Any], law: dict[Any, Fraction], delta: float, name: str) -> None:
    fit = goodness_of_fit(samples, law, alpha=ALPHA, beta=BETA, delta=delta, name=name)
    assert fit.powered, fit.describe()
    assert not fit.rejected, fit.describe()


def samples_needed(law: dict[Any, Fraction], delta: float) -> int:
    return required_samples(delta, ALPHA, BETA, sum(1 for m in law.values() if m > 0))


# Tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("scheduler", CAUSAL)
def test_decoder_law_is_the_exact_law(rule: str, scheduler: str) -> None:
    """Coupled schedulers: pairs of requests (prompts 0 and 1) against the exact two-request
    joint law, delta = 0.1. Per-request schedulers: one batch of ~10^4 requests with prompt 0
    against the exact one-request law, delta = 0.05. alpha = 1e-6, beta = 1e-3."""
    if SCHEDULERS[scheduler].coupled:
        prompts, delta = PAIR_PROMPTS, DELTA_PAIRS
    else:
        prompts, delta = (SCALE_PROMPT,), DELTA_SCALE
    law = exact(rule, scheduler, prompts)
    n = samples_needed(law, delta)
    draws = sample(rule, scheduler, prompts, n, seed=SEED + len(scheduler) + len(rule))
    check_fit(draws, law, delta, f"{rule} x {scheduler}")


def test_global_search_is_rejected() -> None:
    """The lossy global search, on the pairs' structure and n: the reference's exact law is at
    TV > 0 from the target law; detection_power at n must be >= 1 - beta (asserted from the
    exact laws), and the optimized decoder's samples must then be rejected."""
    lossy = exact("chain", "global-search", PAIR_PROMPTS)
    truth = exact("chain", "algorithm1", PAIR_PROMPTS)
    decoder = reference_decoder("chain", "global-search")
    assert truth == dict(reference.reference_law(decoder, PAIR_PROMPTS, NUM_TOKENS))
    tv = reference.tv_distance(lossy, truth)
    n = samples_needed(truth, DELTA_PAIRS)
    power = detection_power(n, truth, lossy, alpha=ALPHA)
    assert power >= 1 - BETA, (float(tv), n, power)
    draws = sample("chain", "global-search", PAIR_PROMPTS, n, seed=SEED + 7)
    fit = goodness_of_fit(draws, truth, alpha=ALPHA, beta=BETA, delta=DELTA_PAIRS)
    assert fit.rejected, f"exact TV {float(tv):.4f}: {fit.describe()}"


@pytest.mark.skipif(
    DEVICE.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1",
    reason="the Triton backend needs CUDA tensors or TRITON_INTERPRET=1",
)
@pytest.mark.parametrize(
    ("rule", "scheduler", "prompts"),
    [("chain", "algorithm1", (SCALE_PROMPT,)), ("greedy", "top-2", PAIR_PROMPTS)],
)
def test_triton_backend_law(
    rule: str, scheduler: str, prompts: tuple[tuple[int, ...], ...]
) -> None:
    """The Triton kernels under the interpreter (about 10 ms per request per kernel launch),
    small scale: Algorithm 1 on one-request batches (8 cells) and greedy top-2 on pairs, against
    the exact law with delta = 0.4 (alpha = 1e-6, beta = 1e-3)."""
    law = exact(rule, scheduler, prompts)
    n = samples_needed(law, DELTA_TRITON)
    draws = sample(rule, scheduler, prompts, n, seed=SEED + 11, backend="triton")
    check_fit(draws, law, DELTA_TRITON, f"triton {rule} x {scheduler}")
