"""A call's Philox streams are decided once (:func:`call_streams`) and read by every backend and
by FlashInfer's acceptance counters, which pick the Triton Philox through the backend resolver."""

from __future__ import annotations

import pytest
import torch
from optimized_support import DEVICE
from specproof.optimized import InvalidInputError, compat
from specproof.optimized.backend import triton_available
from specproof.optimized.checks.streams import OWN_STREAM_WORD, call_streams
from specproof.optimized.philox import ACCEPT, address_uniforms

BATCH = 3
device = torch.device(DEVICE)


def test_integers_make_one_stream_at_the_row_positions() -> None:
    streams = call_streams(BATCH, device, seed=2**64 - 1, round=5, offset=2**63)
    assert not streams.per_request
    assert (streams.keys, streams.round, streams.offsets) == (2**64 - 1, 5, 2**63)
    assert streams.words.tolist() == [0, 1, 2]
    assert not streams.words_given and not streams.distinct_words


@pytest.mark.parametrize("which", ["seed", "offset"])
def test_a_tensor_per_request_gives_each_request_its_own_word(which: str) -> None:
    values = torch.tensor([-1, 7, 9], dtype=torch.int64, device=device)
    other = {"offset": 4} if which == "seed" else {"seed": 4}
    streams = call_streams(BATCH, device, round=0, **{which: values}, **other)
    assert streams.per_request
    assert streams.words.tolist() == [OWN_STREAM_WORD] * BATCH
    keys, offsets = streams.keys, streams.offsets
    assert isinstance(keys, torch.Tensor) and isinstance(offsets, torch.Tensor)
    per_request, shared = (keys, offsets) if which == "seed" else (offsets, keys)
    assert per_request.tolist() == [-1, 7, 9]  # 2^64 - 1 as int64 bits
    assert shared.tolist() == [4] * BATCH


def test_a_length_one_tensor_keeps_the_row_positions() -> None:
    seed = torch.tensor([2**62], dtype=torch.int64, device=device)
    streams = call_streams(BATCH, device, seed=seed, round=0)
    assert streams.per_request
    assert streams.words.tolist() == [0, 1, 2]
    assert torch.as_tensor(streams.keys).tolist() == [2**62] * BATCH


def test_request_ids_must_differ_only_under_one_key() -> None:
    ids = [4, 4, 6]
    assert call_streams(BATCH, device, seed=1, round=0, request_ids=ids).distinct_words
    keys = torch.arange(BATCH, dtype=torch.int64, device=device)
    own = call_streams(BATCH, device, seed=keys, round=0, request_ids=ids)
    assert own.words_given and not own.distinct_words
    assert own.words.tolist() == ids


def test_a_bad_stream_argument_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError, match="seed must have shape"):
        call_streams(BATCH, device, seed=torch.zeros(2, dtype=torch.int64), round=0)
    with pytest.raises(InvalidInputError, match="round must be an integer"):
        call_streams(BATCH, device, seed=1, round=2**32)


def expected_acceptances(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, seed: int
) -> list[int]:
    """Positions passing u * q < p, u the acceptance uniform at (round 0, row word b)."""
    n = tokens.shape[1]
    steps = torch.arange(1, n + 1, device=tokens.device)[None, :]
    rows = torch.arange(tokens.shape[0], device=tokens.device)[:, None]
    u = address_uniforms(seed, ACCEPT, steps, rows, 0, 0).double()
    p = target[:, :n].gather(2, tokens[..., None])[..., 0].double()
    q = draft.gather(2, tokens[..., None])[..., 0].double()
    return (u * q < p).sum(dim=1).tolist()


@pytest.mark.parametrize("chosen", ["torch", "triton"])
def test_flashinfer_counters_use_the_backend_the_resolver_picks(
    monkeypatch: pytest.MonkeyPatch, chosen: str
) -> None:
    """The counters' Philox runs where the resolver says (Triton on CUDA, or on CPU under the
    interpreter when asked), and both give the acceptance counts of the stream."""
    if chosen == "triton" and not triton_available(device):
        pytest.skip("the Triton Philox needs CUDA, or TRITON_INTERPRET=1 at import on CPU")
    asked: list[str] = []

    def resolver(backend: str, on: torch.device) -> str:
        asked.append(backend)
        return chosen

    monkeypatch.setattr(compat, "resolve_backend", resolver)
    generator = torch.Generator().manual_seed(3)
    target = torch.softmax(torch.randn(BATCH, 4, 9, generator=generator), -1).to(device)
    draft = torch.softmax(torch.randn(BATCH, 3, 9, generator=generator), -1).to(device)
    tokens = torch.randint(0, 9, (BATCH, 3), generator=generator).to(device)
    _, accepted, _ = compat.chain_speculative_sampling(draft, tokens, target, seed=11)
    assert asked == ["auto"]
    assert accepted.tolist() == expected_acceptances(target, draft, tokens, 11)
