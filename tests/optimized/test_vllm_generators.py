"""vLLM's per-request generators in the drop-in ``rejection_sample``: a seeded request's tokens
are a function of its seed and of how many calls its generator has served, in a batch mixed
with unseeded requests; the reference replays every request."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch
from optimized_support import DEVICE, as_fractions, draw_from, dyadic_dist, reference_chain
from specproof.optimized import InvalidInputError
from specproof.optimized.compat import rejection_sample

VOCAB = 6


def make_batch(rng: random.Random, lengths: list[int], vocab: int = VOCAB) -> dict:
    total = sum(lengths)
    draft = [dyadic_dist(rng, vocab) for _ in range(total)]
    return {
        "lengths": lengths,
        "target": [dyadic_dist(rng, vocab) for _ in range(total)],
        "draft": draft,
        "tokens": [draw_from(rng, q) for q in draft],
        "bonus": [rng.randrange(vocab) for _ in lengths],
        "vocab": vocab,
    }


def call(batch: dict, generators: dict[int, torch.Generator], **kwargs: object) -> torch.Tensor:
    lengths = batch["lengths"]
    return rejection_sample(
        torch.tensor(batch["tokens"], dtype=torch.int32, device=DEVICE),
        lengths,
        max(lengths),
        torch.tensor(lengths, device=DEVICE).cumsum(0).to(torch.int32),
        torch.tensor(batch["draft"], device=DEVICE) / 256,
        torch.tensor(batch["target"], device=DEVICE) / 256,
        torch.tensor([[b] for b in batch["bonus"]], device=DEVICE),
        SimpleNamespace(all_greedy=False, all_random=True, temperature=None, generators=generators),
        **kwargs,  # type: ignore[arg-type]
    )


def seeded(seeds: dict[int, int]) -> dict[int, torch.Generator]:
    """Fresh generators, as vLLM builds one per seeded request."""
    return {row: torch.Generator(device=DEVICE).manual_seed(s) for row, s in seeds.items()}


def subset(batch: dict, rows: list[int]) -> dict:
    """The batch of requests ``rows`` (in that order)."""
    starts = [sum(batch["lengths"][:r]) for r in range(len(batch["lengths"]))]
    picked = [range(starts[r], starts[r] + batch["lengths"][r]) for r in rows]
    return {
        "lengths": [batch["lengths"][r] for r in rows],
        "target": [batch["target"][i] for span in picked for i in span],
        "draft": [batch["draft"][i] for span in picked for i in span],
        "tokens": [batch["tokens"][i] for span in picked for i in span],
        "bonus": [batch["bonus"][r] for r in rows],
        "vocab": batch["vocab"],
    }


def test_seeded_requests_repeat_in_a_mixed_batch() -> None:
    """vLLM's seeded-determinism behaviour: ten calls, fresh generators with the same seeds each
    time, unseeded requests drawing a fresh call seed: the seeded rows repeat exactly."""
    batch = make_batch(random.Random(0), [3, 2, 3, 1, 3, 2])
    seeds = {1: 7, 2: 7, 4: 123}  # two requests may share a seed (and so their stream)
    first = call(batch, seeded(seeds))
    for _ in range(9):
        again = call(batch, seeded(seeds))
        for row in seeds:
            assert torch.equal(again[row], first[row])


def test_seeded_request_ignores_its_row_and_neighbours() -> None:
    batch = make_batch(random.Random(1), [3, 3, 3, 3])
    alone = call(subset(batch, [2]), seeded({0: 99}), seed=5)
    among = call(subset(batch, [0, 1, 2]), seeded({2: 99}), seed=6)
    moved = call(subset(batch, [2, 3, 1]), seeded({0: 99, 1: 4}))
    assert torch.equal(alone[0], among[2])
    assert torch.equal(alone[0], moved[0])


def test_every_request_replays_the_reference() -> None:
    """Seeded request r: key = the next draw of torch.Generator().manual_seed(seed) in
    [0, 2^62) (one per call), request word 0. Unseeded: the call's seed, request word r. Two
    consecutive calls with the same generator objects use the first and second draws."""
    rng = random.Random(2)
    batch = make_batch(rng, [3, 0, 2, 3, 1])
    seeds = {0: 17, 3: 2**40 + 1, 1: 5}  # row 1 has no drafts: its generator is not used
    generators = seeded(seeds)
    keys = {
        row: [
            int(torch.randint(0, 2**62, (1,), generator=g, device=DEVICE).item())
            for g in [torch.Generator(device=DEVICE).manual_seed(s)] * 2
        ]
        for row, s in seeds.items()
    }
    for step in range(2):
        out = call(batch, generators, seed=1000 + step, round=step)
        start = 0
        for r, length in enumerate(batch["lengths"]):
            rows = slice(start, start + length)
            start += length
            p_rows = [as_fractions(p) for p in batch["target"][rows]]
            q_rows = [as_fractions(q) for q in batch["draft"][rows]]
            bonus_row = as_fractions([256] + [0] * (VOCAB - 1))  # its token is given
            is_seeded = r in seeds and length > 0
            want = list(
                reference_chain(
                    [*p_rows, bonus_row],
                    q_rows,
                    batch["tokens"][rows],
                    seed=keys[r][step] if is_seeded else 1000 + step,
                    round=step,
                    request=0 if is_seeded else r,
                )
            )
            if len(want) == length + 1:
                want[-1] = batch["bonus"][r]
            assert [t for t in out[r].tolist() if t != -1] == want
    assert torch.equal(generators[1].get_state(), seeded({1: 5})[1].get_state())


def test_different_seeds_give_independent_streams() -> None:
    """One seeded request, V = 256, target uniform, an n-gram draft of token 0: its first token
    is uniform over the 256 tokens under any one key (0 when accepted, w.p. 1/256; else the
    recovered token, uniform over the other 255). Thirty seeds give thirty tokens; were they
    independent, fewer than 23 distinct values has probability 4.3e-5 (alpha, computed exactly
    by the occupancy recursion); a mapping that ignored the seed gives 1 distinct value (power
    1 against it), and one with at most 22 distinct streams is always caught."""
    vocab = 256
    target = torch.full((1, vocab), 1 / vocab, device=DEVICE)
    firsts = []
    for s in range(30):
        out = rejection_sample(
            torch.tensor([0], dtype=torch.int32, device=DEVICE),
            [1],
            1,
            torch.tensor([1], dtype=torch.int32, device=DEVICE),
            None,
            target,
            torch.tensor([[3]], device=DEVICE),
            SimpleNamespace(all_greedy=False, all_random=True, generators=seeded({0: s})),
            seed=0,
        )
        firsts.append(int(out[0, 0]))
    assert len(set(firsts)) >= 23


def test_bad_generators_are_refused() -> None:
    batch = make_batch(random.Random(3), [1, 1])
    for generators, message in (
        ({2: torch.Generator()}, "rows are integers"),
        ({0: 5}, "torch.Generator"),
        ([torch.Generator()], "dict"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            call(batch, generators)  # type: ignore[arg-type]
