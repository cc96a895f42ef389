"""The Philox streams of a call's requests, decided once from ``seed``, ``round``, ``offset``
and ``request_ids`` (:func:`call_streams`) and read by every backend.

Request b draws the uniform of (phase, index) at key ``keys[b]`` and counter words
(4 * index + phase, ``words[b]``, and the high and low words of round * 2^32 + ``offsets[b]``),
the layout of :mod:`specproof.reference.philox`. A call-wide stream holds one integer key and
offset; per-request streams (FlashInfer's seed and offset tensors, vLLM's generators) hold [B]
int64 tensors of them (their 64 bits).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .arguments import SEED_LIMIT, as_integer, check_seed_words, per_request
from .contract import fail

OWN_STREAM_WORD = 0
"""The request counter word of a request that draws on a stream of its own (a key, or a key and
offset, of its own): its uniforms then depend on that stream only, not on its row, so it draws
the same alone, in any batch and at any row."""


class Streams(NamedTuple):
    """Where each of a call's B requests draws its uniforms (see the module docstring)."""

    keys: int | torch.Tensor
    """The Philox key: one integer in [0, 2^64), or a [B] int64 tensor (its bits)."""
    round: int
    """The round, in [0, 2^32): the high word of the 64-bit position round * 2^32 + offset."""
    offsets: int | torch.Tensor
    """The 64-bit offset: one integer in [0, 2^64), or a [B] int64 tensor (its bits)."""
    words: torch.Tensor
    """The request counter words, a contiguous [B] int64 tensor."""
    words_given: bool
    """True when the words are the caller's ``request_ids`` (their contents are checked then)."""

    @property
    def per_request(self) -> bool:
        """True when keys and offsets are [B] tensors, one stream per request."""
        return isinstance(self.keys, torch.Tensor)

    @property
    def distinct_words(self) -> bool:
        """True when the caller's words must differ: under one shared key only the words keep
        the requests' streams apart. With per-request keys, requests that share a key, word
        and offset share their uniforms, as two generators with one seed do."""
        return self.words_given and not self.per_request


def row_words(
    seed: object, offset: object, batch: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-request Philox words from ``seed`` and ``offset``, each an integer (the same for
    every request) or an int64 / uint64 tensor of length 1 or B on ``device``; returned as [B]
    int64 tensors. Both keep their 64 bits (an int64 s < 0 is s + 2^64, as FlashInfer reads
    its uint64 seeds and offsets; a uint64 one is read as the same bits); the values are not
    read here (no host synchronisation), and every value is valid."""
    words = []
    for name, value in (("seed", seed), ("offset", offset)):
        if not isinstance(value, torch.Tensor):
            number = as_integer(name, value, SEED_LIMIT)
            if number >= 1 << 63:  # the same 64 bits as a signed int64
                number -= 1 << 64
            words.append(torch.full((batch,), number, dtype=torch.int64, device=device))
            continue
        if value.dtype not in (torch.int64, torch.uint64):
            fail(f"{name} must be an int64 or uint64 tensor, got {value.dtype}")
        if value.dim() != 1 or value.shape[0] not in (1, batch):
            fail(f"{name} must have shape (1,) or ({batch},), got {tuple(value.shape)}")
        if value.device != device:
            fail(f"{name} is on {value.device}, the other tensors on {device}")
        words.append(value.view(torch.int64).expand(batch))
    return words[0], words[1]


def own_streams(seed: object, offset: object, batch: int) -> bool:
    """True when ``seed`` or ``offset`` is a tensor with one entry per request (length B > 1,
    FlashInfer's per-row convention): every request then draws at :data:`OWN_STREAM_WORD`.
    Integers and length-1 tensors keep the row's position as its word (a call-wide stream)."""
    return batch > 1 and any(
        isinstance(value, torch.Tensor) and value.dim() == 1 and value.shape[0] == batch
        for value in (seed, offset)
    )


def call_streams(
    batch: int,
    device: torch.device,
    *,
    seed: object,
    round: object,
    offset: object = 0,
    request_ids: object = None,
) -> Streams:
    """The streams of a call from its arguments, checked (types, shapes, devices, ranges of
    Python integers; tensor contents are read by the content checks).

    ``seed`` and ``offset`` are integers in [0, 2^64) (one stream for the call), or int64 /
    uint64 tensors of length 1 or B (:func:`row_words`: per-request keys and offsets).
    ``request_ids`` (None, or per-request integers) are the words; without them a request draws
    at :data:`OWN_STREAM_WORD` when ``seed`` or ``offset`` has one entry per request
    (:func:`own_streams`), else at its row position (for B = 1 the two agree)."""
    tensors = isinstance(seed, torch.Tensor) or isinstance(offset, torch.Tensor)
    key_word, round_word, offset_word = check_seed_words(
        0 if tensors else seed, round, 0 if tensors else offset
    )
    keys: int | torch.Tensor = key_word
    offsets: int | torch.Tensor = offset_word
    words = per_request("request_ids", request_ids, batch, device, integral=True)
    if words is None:
        own = own_streams(seed, offset, batch)
        words = (
            torch.full((batch,), OWN_STREAM_WORD, dtype=torch.int64, device=device)
            if own
            else torch.arange(batch, dtype=torch.int64, device=device)
        )
    if tensors:
        keys, offsets = row_words(seed, offset, batch, device)
    return Streams(keys, round_word, offsets, words, request_ids is not None)


def seeded_streams(
    keys: torch.Tensor, round: object, words: torch.Tensor, device: torch.device
) -> Streams:
    """Per-request streams from [B] int64 ``keys`` and ``words`` an entry point made itself
    (vLLM's generators): offset 0 for every request."""
    batch = words.shape[0]
    _, round_word, _ = check_seed_words(0, round, 0)
    offsets = torch.zeros(batch, dtype=torch.int64, device=device)
    return Streams(keys, round_word, offsets, words, False)
