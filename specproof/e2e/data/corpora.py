"""The corpora: Python's standard library source ("code"), its bundled documentation topics
("prose") and generated arithmetic with worked answers ("math", :mod:`.math_corpus`), as bytes,
split deterministically by document name.

Tokens are bytes (vocabulary 256), so no tokenizer is needed. Byte 0 separates documents.
:mod:`.subword` gives the same splits as sub-word token streams (a larger configuration).
"""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .math_corpus import MATH_DOCUMENTS, math_document

VOCAB = 256
SEPARATOR = 0
NEWLINE = ord("\n")
SKIPPED_DIRS = frozenset(
    {"test", "tests", "idle_test", "site-packages", "__pycache__", "lib2to3", "turtledemo"}
)
HELD_OUT_EVERY = 10
"""A document is held out when its stable hash is 0 modulo this (about 10% of documents)."""

DOMAIN_WEIGHTS = {"code": 0.5, "prose": 0.25, "math": 0.25}
"""Training mixture of the domains."""


@dataclass(frozen=True)
class Document:
    name: str
    data: bytes


@dataclass(frozen=True)
class Corpus:
    """One domain's documents, split into train and held-out by a stable hash of the name."""

    domain: str
    train: tuple[Document, ...]
    held_out: tuple[Document, ...]

    def documents(self, split: str) -> tuple[Document, ...]:
        """The split's documents: ``train``, ``held_out``, and its halves ``calibration``
        (even-indexed held-out documents) and ``evaluation`` (odd-indexed)."""
        return {
            "train": self.train,
            "held_out": self.held_out,
            "calibration": self.held_out[0::2],
            "evaluation": self.held_out[1::2],
        }[split]

    def stream(self, split: str) -> np.ndarray:
        """The split's documents joined by the separator byte, as uint8. Splits: ``train``,
        ``held_out``, and its halves ``calibration`` (even-indexed held-out documents) and
        ``evaluation`` (odd-indexed)."""
        joined = bytes([SEPARATOR]).join(d.data for d in self.documents(split))
        return np.frombuffer(joined, dtype=np.uint8).copy()

    def sizes(self) -> dict[str, int]:
        return {
            "train_docs": len(self.train),
            "train_bytes": sum(len(d.data) for d in self.train),
            "held_out_docs": len(self.held_out),
            "held_out_bytes": sum(len(d.data) for d in self.held_out),
        }


def stable_bucket(name: str, buckets: int) -> int:
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % buckets


def is_held_out(name: str) -> bool:
    return stable_bucket(name, HELD_OUT_EVERY) == 0


def split_documents(domain: str, docs: list[Document]) -> Corpus:
    docs = sorted(docs, key=lambda d: d.name)
    train = tuple(d for d in docs if not is_held_out(d.name))
    held_out = tuple(d for d in docs if is_held_out(d.name))
    return Corpus(domain, train, held_out)


def clean(data: bytes) -> bytes:
    """Documents never contain the separator byte."""
    return data.replace(bytes([SEPARATOR]), b"")


def code_documents(root: Path | None = None) -> list[Document]:
    """Every ``.py`` file of the standard library, skipping tests and site-packages."""
    base = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(base)
        if any(part in SKIPPED_DIRS for part in relative.parts[:-1]):
            continue
        docs.append(Document(relative.as_posix(), clean(path.read_bytes())))
    return docs


def prose_documents() -> list[Document]:
    """The documentation topics bundled with ``pydoc`` (``pydoc_data.topics``)."""
    from pydoc_data.topics import topics

    return [Document(name, clean(text.encode("utf-8"))) for name, text in sorted(topics.items())]


def math_documents(count: int = MATH_DOCUMENTS) -> list[Document]:
    """``count`` generated documents of worked arithmetic problems."""
    return [Document(f"math/{i:05d}", math_document(i).encode("ascii")) for i in range(count)]


def load_corpora() -> dict[str, Corpus]:
    return {
        "code": split_documents("code", code_documents()),
        "prose": split_documents("prose", prose_documents()),
        "math": split_documents("math", math_documents()),
    }


class WindowSampler:
    """Random windows of ``length`` bytes from per-domain streams, mixed by weight."""

    def __init__(
        self, streams: dict[str, np.ndarray], weights: dict[str, float], seed: int
    ) -> None:
        self.names = sorted(streams)
        self.streams = {k: torch.from_numpy(streams[k].astype(np.int64)) for k in self.names}
        total = sum(weights[k] for k in self.names)
        self.probs = torch.tensor([weights[k] / total for k in self.names], dtype=torch.float64)
        self.generator = torch.Generator().manual_seed(seed)

    def batch(self, batch_size: int, length: int) -> torch.Tensor:
        """[batch_size, length] int64 token windows."""
        picks = torch.multinomial(self.probs, batch_size, True, generator=self.generator)
        rows = []
        for pick in picks.tolist():
            stream = self.streams[self.names[pick]]
            start = int(torch.randint(0, len(stream) - length, (1,), generator=self.generator))
            rows.append(stream[start : start + length])
        return torch.stack(rows)


def prompt_starts(
    stream: np.ndarray,
    count: int,
    length: int,
    seed: int,
    line_ends: Collection[int] = (NEWLINE,),
) -> list[int]:
    """Where :func:`prompts_from` cuts its ``count`` prompts from ``stream`` (token offsets,
    in order): the prompts' ids within their split. A prompt starts after a token in
    ``line_ends`` (the newline byte; a sub-word stream passes its newline-ending tokens)."""
    rng = np.random.default_rng(seed)
    starts = np.flatnonzero(np.isin(stream[:-length], list(line_ends))) + 1
    chosen: list[int] = []
    tries = 0
    while len(chosen) < count and tries < 100 * count:
        tries += 1
        start = int(rng.choice(starts))
        window = stream[start : start + length]
        if len(window) == length and SEPARATOR not in window:
            chosen.append(start)
    if len(chosen) < count:
        raise ValueError(f"could not find {count} prompts of length {length}")
    return chosen


def prompts_from(
    stream: np.ndarray,
    count: int,
    length: int,
    seed: int,
    line_ends: Collection[int] = (NEWLINE,),
) -> list[list[int]]:
    """``count`` prompts of ``length`` tokens, each starting just after a line end, with no
    separator inside; deterministic in ``seed``."""
    return prompts_at(stream, prompt_starts(stream, count, length, seed, line_ends), length)


def prompts_at(stream: np.ndarray, starts: list[int], length: int) -> list[list[int]]:
    """The prompts of ``length`` tokens at ``starts`` (:func:`prompt_starts`) of ``stream``."""
    return [[int(b) for b in stream[start : start + length]] for start in starts]


def split_prompts(
    corpora: dict[str, Corpus], split: str, count: int, length: int, seed: int
) -> tuple[dict[str, list[list[int]]], dict[str, list[int]]]:
    """Per domain, ``count`` prompts of the split (:func:`prompts_from`) and their start
    offsets, which a result stores so the prompts can be cut again."""
    prompts, starts = {}, {}
    for domain, corpus in corpora.items():
        stream = corpus.stream(split)
        starts[domain] = prompt_starts(stream, count, length, seed)
        prompts[domain] = prompts_at(stream, starts[domain], length)
    return prompts, starts
