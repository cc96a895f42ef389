"""A request with a seed and offset of its own (tensors of length B > 1) draws what it draws
alone: its tokens depend on its seed, offset and rows, never on its row position, the batch's
order or its neighbours; on both backends, through FlashInfer's drop-in, replayed by the
reference at request word 0."""

from __future__ import annotations

import random

import pytest
import torch
from optimized_support import DEVICE, as_tensor, backends, emitted
from specproof.optimized import chain_verify
from specproof.optimized.compat import chain_speculative_sampling
from test_row_streams import chain_case, replay

BATCH = 6
FORMS = ("both tensors", "seed tensor", "offset tensor")
"""Which of seed and offset are [B] tensors (the other an integer)."""


def streams(rng: random.Random) -> tuple[list[int], list[int]]:
    """A 64-bit key (half of them >= 2^63) and a 32-bit offset per request."""
    keys = [rng.randrange(1 << 63) + (1 << 63) * (i % 2) for i in range(BATCH)]
    offsets = [rng.randrange(1 << 32) for _ in range(BATCH)]
    return keys, offsets


def as_words(values: list[int]) -> torch.Tensor:
    """int64 tensor with the values' 64 bits."""
    signed = [v - (1 << 64) if v >= 1 << 63 else v for v in values]
    return torch.tensor(signed, dtype=torch.int64, device=DEVICE)


class Batch:
    """The rows ``rows`` of a case, with their seeds and offsets in the form ``form``."""

    def __init__(self, case: dict, keys: list[int], offsets: list[int], form: str) -> None:
        self.case, self.keys, self.offsets, self.form = case, keys, offsets, form

    def arguments(self, rows: list[int]) -> dict:
        """Inputs of a call on ``rows``: each tensor argument indexed like the rows, each
        integer one (the first request's) shared, as a caller holding one would pass it."""
        seed: int | torch.Tensor = as_words([self.keys[r] for r in rows])
        offset: int | torch.Tensor = as_words([self.offsets[r] for r in rows])
        if self.form == "seed tensor":
            offset = self.offsets[0]
        elif self.form == "offset tensor":
            seed = self.keys[0]
        vocab = self.case["vocab"]
        return {
            "target": as_tensor([self.case["target"][r] for r in rows], vocab),
            "draft": as_tensor([self.case["draft"][r] for r in rows], vocab),
            "tokens": torch.tensor([self.case["tokens"][r] for r in rows], device=DEVICE),
            "seed": seed,
            "offset": offset,
        }

    def key(self, b: int) -> int:
        return self.keys[0] if self.form == "offset tensor" else self.keys[b]

    def offset(self, b: int) -> int:
        return self.offsets[0] if self.form == "seed tensor" else self.offsets[b]

    def verify(self, rows: list[int], backend: str) -> list[tuple[int, ...]]:
        given = self.arguments(rows)
        result = chain_verify(
            given["target"],
            given["draft"],
            given["tokens"],
            seed=given["seed"],
            offset=given["offset"],
            round=3,
            backend=backend,  # type: ignore[arg-type]
        )
        return emitted(result.tokens)


def make_batch(data_seed: int, form: str, vocab: int = 5) -> Batch:
    rng = random.Random(data_seed)
    case = chain_case(rng, batch=BATCH, n=3, vocab=vocab)
    keys, offsets = streams(rng)
    return Batch(case, keys, offsets, form)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("data_seed", range(2))
def test_a_request_alone_draws_what_it_draws_in_the_batch(
    backend: str, form: str, data_seed: int
) -> None:
    batch = make_batch(data_seed, form)
    together = batch.verify(list(range(BATCH)), backend)
    for b in range(BATCH):
        alone = batch.verify([b], backend)
        assert alone == [together[b]], f"request {b}"
        assert together[b] == replay(batch.case, b, batch.key(b), batch.offset(b), round=3)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("form", FORMS)
def test_permutations_and_subsets_draw_the_same_rows(backend: str, form: str) -> None:
    batch = make_batch(5, form)
    together = batch.verify(list(range(BATCH)), backend)
    rng = random.Random(9)
    orders = [list(reversed(range(BATCH)))]
    orders += [rng.sample(range(BATCH), k=size) for size in (BATCH, 4, 3, 2, 2)]
    for rows in orders:
        got = batch.verify(rows, backend)
        assert got == [together[r] for r in rows], f"rows {rows}"


@pytest.mark.parametrize("backend", backends())
def test_a_repeated_request_replays_its_draw(backend: str) -> None:
    """The same request (rows, drafts, seed, offset) twice in one batch, at rows far apart,
    draws the same tokens there, and the same again in a later call."""
    batch = make_batch(2, "both tensors", vocab=64)
    repeated = [0, 1, 0, 2, 0, 3, 0, 0]
    first = batch.verify(repeated, backend)
    assert all(first[i] == first[0] for i, r in enumerate(repeated) if r == 0)
    assert batch.verify(repeated, backend) == first
    assert batch.verify([0], backend) == [first[0]]


def test_flashinfer_drop_in_draws_a_request_as_alone() -> None:
    """``chain_speculative_sampling`` with [B] seed and offset: every output of a request
    (tokens, accepted count from its independent acceptance tests, emitted count) is the
    same alone, in the batch and in a reordered subset."""
    batch = make_batch(7, "both tensors")

    def call(rows: list[int]) -> list[tuple[tuple[int, ...], int, int]]:
        given = batch.arguments(rows)
        out, accepted, emitted_num = chain_speculative_sampling(
            given["draft"],
            given["tokens"],
            given["target"],
            seed=given["seed"],
            offset=given["offset"],
        )
        return list(zip(emitted(out), accepted.tolist(), emitted_num.tolist(), strict=True))

    together = call(list(range(BATCH)))
    for b in range(BATCH):
        assert call([b]) == [together[b]], f"request {b}"
        assert together[b][0] == replay(batch.case, b, batch.keys[b], batch.offsets[b])
    rows = [4, 1, 5]
    assert call(rows) == [together[r] for r in rows]
