"""The committed sub-word tokenizer: its vocabulary, its special tokens, exact round trips and
the corpus streams it makes."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.e2e.data.corpora import (
    Document,
    prompts_from,
    prose_documents,
    split_documents,
)
from specproof.e2e.data.math_corpus import math_document
from specproof.e2e.data.subword import (
    MASK_TOKEN,
    SEPARATOR_TOKEN,
    TOKENIZER_FILE,
    VOCAB_SIZE,
    SubwordTokenizer,
    train_tokenizer,
    training_documents,
)
from specproof.e2e.plans import SUBWORD, SUBWORD_MASK_TOKEN, SUBWORD_VOCAB


@cache
def committed() -> SubwordTokenizer:
    return SubwordTokenizer()


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    return committed()


def test_the_vocabulary_and_special_tokens(tokenizer: SubwordTokenizer) -> None:
    assert tokenizer.vocab_size == VOCAB_SIZE == SUBWORD_VOCAB == SUBWORD.target.vocab == 4096
    assert (tokenizer.separator, tokenizer.mask) == (0, SUBWORD_MASK_TOKEN) == (0, 1)
    assert tokenizer.tokenizer.id_to_token(0) == SEPARATOR_TOKEN
    assert tokenizer.tokenizer.id_to_token(1) == MASK_TOKEN
    # rank 256 is far below V: the Markov head is a low-rank bigram, not a full table.
    assert SUBWORD.dspark.rank * 16 <= tokenizer.vocab_size
    assert TOKENIZER_FILE.stat().st_size < 1_000_000


def test_real_documents_round_trip_and_compress(tokenizer: SubwordTokenizer) -> None:
    prose = prose_documents()[:5]
    code = [Document("json", Path(json.__file__).read_bytes())]
    math = [Document("m", math_document(3).encode("ascii"))]
    for doc in prose + code + math:
        ids = tokenizer.encode(doc.data)
        assert tokenizer.decode(ids) == doc.data
        # A BPE that learned merges: well under one token per byte on its own domains.
        assert len(ids) < 0.6 * len(doc.data)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_any_text_round_trips(text: str) -> None:
    tokenizer = committed()
    data = text.encode("utf-8")
    ids = tokenizer.encode(data)
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    assert tokenizer.decode(ids) == data


def test_streams_join_documents_by_the_separator(tokenizer: SubwordTokenizer) -> None:
    docs = [Document(f"d{i}", f"line {i}\nx = {i}\n".encode()) for i in range(30)]
    corpus = split_documents("toy", docs)
    stream = tokenizer.stream(corpus, "train")
    assert stream.dtype == np.int32
    parts = np.split(stream, np.flatnonzero(stream == tokenizer.separator))
    decoded = [tokenizer.decode([int(t) for t in p if t != tokenizer.separator]) for p in parts]
    assert decoded == [d.data for d in corpus.train]


def test_sub_word_prompts_start_after_a_line_end(tokenizer: SubwordTokenizer) -> None:
    corpus = split_documents("prose", prose_documents())
    stream = tokenizer.stream(corpus, "evaluation")
    prompts = prompts_from(stream, 6, 12, 1, tokenizer.line_end_ids)
    assert len(prompts) == 6 and all(len(p) == 12 for p in prompts)
    assert all(tokenizer.separator not in p for p in prompts)
    for prompt in prompts:
        start = next(i for i in range(len(stream)) if list(stream[i : i + 12]) == prompt)
        assert tokenizer.decode([int(stream[start - 1])]).endswith(b"\n")


@pytest.mark.slow
def test_the_committed_tokenizer_is_the_one_its_command_trains() -> None:
    """Retrains from the fixed data (about 6 s on one thread) and compares the vocabulary and
    merges with the committed file."""
    from specproof.e2e.data.corpora import load_corpora

    retrained = json.loads(train_tokenizer(training_documents(load_corpora())))
    assert retrained["model"] == json.loads(TOKENIZER_FILE.read_text())["model"]
