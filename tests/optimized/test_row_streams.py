"""Per-request Philox streams: ``seed`` and ``offset`` as int64 / uint64 tensors of length 1 or
B (FlashInfer's tensor seed and offset), on both backends, replayed by the reference.

A tensor of length B > 1 gives each request a stream of its own at request word 0: its tokens
depend on its seed, offset and rows only, not on its place in the batch. An integer or a
length-1 tensor keeps the call-wide stream at request word b."""

from __future__ import annotations

import random

import pytest
import torch
from optimized_support import (
    DEVICE,
    as_fractions,
    as_tensor,
    backends,
    draw_from,
    dyadic_dist,
    emitted,
    reference_chain,
)
from specproof.optimized import InvalidInputError, chain_verify
from specproof.optimized.compat import chain_speculative_sampling


def chain_case(rng: random.Random, batch: int, n: int, vocab: int) -> dict:
    target = [[dyadic_dist(rng, vocab) for _ in range(n + 1)] for _ in range(batch)]
    draft = [[dyadic_dist(rng, vocab) for _ in range(n)] for _ in range(batch)]
    tokens = [[draw_from(rng, q) for q in rows] for rows in draft]
    return {"target": target, "draft": draft, "tokens": tokens, "vocab": vocab}


def run(case: dict, backend: str, **kwargs: object) -> torch.Tensor:
    return chain_verify(
        as_tensor(case["target"], case["vocab"]),
        as_tensor(case["draft"], case["vocab"]),
        torch.tensor(case["tokens"], device=DEVICE),
        backend=backend,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    ).tokens


def replay(
    case: dict, b: int, key: int, offset: int, round: int = 0, *, request: int = 0
) -> tuple[int, ...]:
    """The reference's tokens for row b of ``case`` at (key, offset) and request word
    ``request`` (0: a per-row stream; b: the call-wide stream)."""
    return reference_chain(
        [as_fractions(row) for row in case["target"][b]],
        [as_fractions(row) for row in case["draft"][b]],
        case["tokens"][b],
        seed=key,
        round=round,
        request=request,
        offset=offset,
    )


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_length_one_tensor_is_the_integer_stream(backend: str, dtype: torch.dtype) -> None:
    """A length-1 seed / offset tensor draws exactly what the same integers draw, for a key
    below and one above 2^63 (a uint64 key, or the int64 with the same bits)."""
    case = chain_case(random.Random(1), batch=6, n=3, vocab=6)
    for key in (12345, 2**63 + 77):
        bits = key if dtype == torch.uint64 else key - (1 << 64) * (key >= 1 << 63)
        seed = torch.tensor([bits], dtype=dtype, device=DEVICE)
        offset = torch.tensor([9], dtype=dtype, device=DEVICE)
        from_tensors = run(case, backend, seed=seed, offset=offset, round=4)
        from_integers = run(case, backend, seed=key, offset=9, round=4)
        assert torch.equal(from_tensors, from_integers)
        for b in range(6):  # the call-wide stream: request word b, as before per-row streams
            assert emitted(from_tensors)[b] == replay(case, b, key, 9, round=4, request=b)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("data_seed", range(3))
def test_per_request_streams_replay_the_reference(backend: str, data_seed: int) -> None:
    """Request b draws at key seed[b] and offset offset[b], request word 0."""
    rng = random.Random(data_seed)
    batch = 8
    case = chain_case(rng, batch=batch, n=3, vocab=5)
    keys = [rng.randrange(1 << 64) for _ in range(batch)]
    offsets = [rng.randrange(1 << 32) for _ in range(batch)]
    signed = [k - (1 << 64) if k >= 1 << 63 else k for k in keys]
    seed_tensor = torch.tensor(signed, dtype=torch.int64, device=DEVICE)
    if data_seed == 1:  # the same bits as uint64, and a broadcast offset
        seed_tensor = seed_tensor.view(torch.uint64)
        offsets = [offsets[0]] * batch
        offset_tensor = torch.tensor(offsets[:1], dtype=torch.int64, device=DEVICE)
    else:
        offset_tensor = torch.tensor(offsets, dtype=torch.int64, device=DEVICE)
    out = run(case, backend, seed=seed_tensor, offset=offset_tensor, round=2)
    for b in range(batch):
        assert emitted(out)[b] == replay(case, b, keys[b], offsets[b], round=2)


@pytest.mark.parametrize("backend", backends())
def test_integer_seed_with_offset_tensor(backend: str) -> None:
    """One tensor makes both per-request: an integer seed is every request's key, request
    word 0 (rows 1 and 3 share seed and offset, so they share uniforms)."""
    case = chain_case(random.Random(7), batch=4, n=2, vocab=4)
    offsets = [0, 5, 2**32 - 1, 5]
    out = run(
        case,
        backend,
        seed=99,
        offset=torch.tensor(offsets, dtype=torch.int64, device=DEVICE),
    )
    for b in range(4):
        assert emitted(out)[b] == replay(case, b, 99, offsets[b])


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    ("seed", "offset", "message"),
    [
        (torch.tensor([1, 2, 3]), 0, "shape"),
        (torch.tensor([1.0]), 0, "int64 or uint64"),
        (torch.tensor([[1]]), 0, "shape"),
        (torch.tensor([1], dtype=torch.int32), 0, "int64 or uint64"),
        (1, torch.tensor([0.5]), "int64 or uint64"),
        (-1, torch.tensor([0]), "seed"),
    ],
)
def test_bad_stream_tensors_are_refused(
    backend: str, seed: object, offset: object, message: str
) -> None:
    case = chain_case(random.Random(0), batch=4, n=2, vocab=4)
    if isinstance(seed, torch.Tensor):
        seed = seed.to(DEVICE)
    if isinstance(offset, torch.Tensor):
        offset = offset.to(DEVICE)
    with pytest.raises(InvalidInputError, match=message):
        run(case, backend, seed=seed, offset=offset)


def test_shared_ids_are_allowed_under_per_request_keys() -> None:
    """Ids must be distinct under one key (else two requests share uniforms); with a key per
    request they need not be: equal (key, id, offset) then means equal uniforms, by choice."""
    case = chain_case(random.Random(3), batch=2, n=2, vocab=4)
    case["target"][1], case["draft"][1], case["tokens"][1] = (
        case["target"][0],
        case["draft"][0],
        case["tokens"][0],
    )
    ids = torch.tensor([0, 0], device=DEVICE)
    with pytest.raises(InvalidInputError, match="distinct"):
        run(case, "torch", seed=5, request_ids=ids)
    keys = torch.tensor([5, 5], dtype=torch.int64, device=DEVICE)
    out = run(case, "torch", seed=keys, request_ids=ids)
    assert emitted(out)[0] == emitted(out)[1] == replay(case, 0, 5, 0)


def test_flashinfer_tensor_seed_and_offset() -> None:
    """FlashInfer's call with seed / offset tensors of length 1 and B: the integer stream for
    length 1, the per-row streams (request word 0) for length B."""
    rng = random.Random(11)
    batch, n, vocab = 6, 3, 8
    case = chain_case(rng, batch=batch, n=n, vocab=vocab)
    draft = as_tensor(case["draft"], vocab)
    target = as_tensor(case["target"], vocab)
    ids = torch.tensor(case["tokens"], dtype=torch.int32, device=DEVICE)
    one = torch.tensor([31], dtype=torch.int64, device=DEVICE)
    as_one = chain_speculative_sampling(draft, ids, target, seed=one, offset=one * 0 + 4)
    as_int = chain_speculative_sampling(draft, ids, target, seed=31, offset=4)
    assert all(torch.equal(x, y) for x, y in zip(as_one, as_int, strict=True))
    keys = [rng.randrange(1 << 63) for _ in range(batch)]
    offsets = [rng.randrange(1 << 32) for _ in range(batch)]
    out, accepted, emitted_num = chain_speculative_sampling(
        draft,
        ids,
        target,
        seed=torch.tensor(keys, dtype=torch.uint64, device=DEVICE),
        offset=torch.tensor(offsets, dtype=torch.int64, device=DEVICE),
    )
    for b in range(batch):
        want = replay(case, b, keys[b], offsets[b])
        assert emitted(out)[b] == want
        assert int(emitted_num[b]) == len(want) - 1
    assert accepted.shape == (batch,) and bool((accepted >= emitted_num).all())
