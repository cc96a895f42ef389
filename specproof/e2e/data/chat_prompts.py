"""Prompts for a sub-word target with a chat template (SmolLM2-135M-Instruct), cut from the
three domains' training splits.

Which form each domain takes: a math problem is a request ("Compute 65 * 84.", "Solve
4x + 58 = 98."), so its statement becomes the user turn of the chat template and the target
writes the assistant's answer; code and prose are documents, not requests, so a window of
the document (starting at a line) is the prompt as plain text and the target continues it.
Training prompts come from the training splits; evaluation prompts from the held-out
``evaluation`` half, so no prompt measured was trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .corpora import Corpus, prompt_starts

CHAT_DOMAINS = frozenset({"math"})
"""Domains whose prompts are requests, put in the chat template."""
DOCUMENT_BYTES = 256
"""Bytes of a code or prose window (about 60-90 SmolLM2 tokens)."""

Encode = Callable[[str], list[int]]
"""Plain text to token ids (no special tokens)."""
EncodeChat = Callable[[str], list[int]]
"""A user turn to the chat template's token ids, the assistant's turn opened."""


@dataclass(frozen=True)
class Prompt:
    domain: str
    source: int
    """Where it was cut: the byte offset of the window in the domain's training stream, or
    for math 10 x the document's index + the problem's index."""
    tokens: tuple[int, ...]
    chat: bool


def math_question(document: str, index: int) -> str:
    """Problem ``index`` of a math document: its statement line without "Problem k. "."""
    problem = document.split("\n\n")[index]
    first = problem.split("\n", 1)[0]
    return first.split(". ", 1)[1] if first.startswith("Problem ") else first


def domain_prompts(
    corpus: Corpus,
    count: int,
    seed: int,
    encode: Encode,
    encode_chat: EncodeChat,
    split: str = "train",
) -> list[Prompt]:
    """``count`` prompts of ``corpus``'s ``split`` (training by default; ``evaluation`` for
    held-out prompts), deterministic in ``seed``."""
    if corpus.domain in CHAT_DOMAINS:
        rng = np.random.default_rng(seed)
        documents = corpus.documents(split)
        prompts = []
        for _ in range(count):
            doc = int(rng.integers(len(documents)))
            text = documents[doc].data.decode("utf-8")
            index = int(rng.integers(text.count("\n\n") + 1))
            question = math_question(text, index)
            ids = tuple(encode_chat(question))
            prompts.append(Prompt(corpus.domain, 10 * doc + index, ids, True))
        return prompts
    stream = corpus.stream(split)
    starts = prompt_starts(stream, count, DOCUMENT_BYTES, seed)
    return [
        Prompt(
            corpus.domain,
            start,
            tuple(encode(bytes(stream[start : start + DOCUMENT_BYTES]).decode("utf-8", "ignore"))),
            False,
        )
        for start in starts
    ]


def mixed_prompts(
    corpora: dict[str, Corpus],
    weights: dict[str, float],
    count: int,
    seed: int,
    encode: Encode,
    encode_chat: EncodeChat,
) -> list[Prompt]:
    """``count`` prompts, each domain's share drawn by ``weights`` (multinomial, seeded),
    grouped by domain in sorted order."""
    names = sorted(corpora)
    rng = np.random.default_rng(seed)
    total = sum(weights[n] for n in names)
    shares = rng.multinomial(count, [weights[n] / total for n in names])
    prompts: list[Prompt] = []
    for offset, (name, share) in enumerate(zip(names, shares, strict=True)):
        if share:
            prompts += domain_prompts(
                corpora[name], int(share), seed * 7 + offset, encode, encode_chat
            )
    return prompts


def chat_encoder(tokenizer: object) -> tuple[Encode, EncodeChat]:
    """:data:`Encode` and :data:`EncodeChat` of a transformers tokenizer with a chat template."""

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]

    def encode_chat(question: str) -> list[int]:
        ids = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
            [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
        )
        ids = ids["input_ids"] if not isinstance(ids, list) else ids
        return [int(t) for t in ids]

    return encode, encode_chat


def token_counts(prompts: Sequence[Prompt]) -> list[int]:
    return [len(p.tokens) for p in prompts]
