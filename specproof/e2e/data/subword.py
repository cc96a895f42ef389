"""The sub-word vocabulary: a byte-level BPE tokenizer (Hugging Face ``tokenizers``) trained
here on the three domains' training documents, and the token streams of the corpora under it.

Its command: ``python -m specproof.runners.e2e.subword_tokenizer``
(:mod:`specproof.runners.e2e.subword_tokenizer`).

trains it and writes ``specproof/e2e/subword_tokenizer.json`` (``--check`` retrains and exits 1
unless the committed file's vocabulary and merges are the ones retrained). The byte-level path
(:mod:`.corpora`, vocabulary 256) is unchanged and stays the default of every other command.

Training data (fixed, so the file is reproducible): every prose and math training document and
every third code training document in name order (code is about 10 MB, the other two about
1.7 MB together; the third keeps code from swamping them), trained on one thread. Ids 0 and 1
are the special tokens :data:`SEPARATOR_TOKEN` (joins documents, as byte 0 does in the
byte-level streams) and :data:`MASK_TOKEN` (the mask token of the DSpark/DFlash block input).
The byte-level pre-tokenizer and decoder make decode(encode(text)) == text for every string.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from .corpora import Corpus, Document

PROG = "python -m specproof.runners.e2e.subword_tokenizer"
VOCAB_SIZE = 4096
SEPARATOR_TOKEN = "<|sep|>"
MASK_TOKEN = "<|mask|>"
SPECIAL_TOKENS = (SEPARATOR_TOKEN, MASK_TOKEN)
CODE_EVERY = 3
TOKENIZER_FILE = Path(__file__).parents[1] / "subword_tokenizer.json"
COMMAND = f"{PROG} (nox -s train-subword)"


def training_documents(corpora: dict[str, Corpus]) -> list[Document]:
    """The fixed training text of the tokenizer (see the module docstring)."""
    docs: list[Document] = []
    for domain in sorted(corpora):
        train = corpora[domain].train
        docs += list(train[::CODE_EVERY] if domain == "code" else train)
    return docs


def train_tokenizer(documents: Sequence[Document], vocab_size: int = VOCAB_SIZE) -> str:
    """The trained tokenizer as JSON text. One thread (RAYON_NUM_THREADS=1): the merges do not
    depend on how the counting was split, and the machine is shared."""
    os.environ["RAYON_NUM_THREADS"] = "1"
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )

    def texts() -> Iterator[str]:
        for doc in documents:
            yield doc.data.decode("utf-8")

    tokenizer.train_from_iterator(texts(), trainer=trainer, length=len(documents))
    return str(tokenizer.to_str())


class SubwordTokenizer:
    """The committed (or a given) tokenizer file: bytes <-> token ids, and corpus streams."""

    def __init__(self, path: Path = TOKENIZER_FILE) -> None:
        from tokenizers import Tokenizer

        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer at {path}: write it with `{PROG} --out {path}`")
        self.path = path
        self.tokenizer = Tokenizer.from_file(str(path))
        self.separator = self.token_id(SEPARATOR_TOKEN)
        self.mask = self.token_id(MASK_TOKEN)

    def token_id(self, token: str) -> int:
        found = self.tokenizer.token_to_id(token)
        if found is None:
            raise ValueError(f"{self.path} has no token {token!r}")
        return int(found)

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.get_vocab_size())

    def encode(self, data: bytes) -> list[int]:
        return list(self.tokenizer.encode(data.decode("utf-8")).ids)

    def decode(self, ids: Sequence[int]) -> bytes:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False)).encode("utf-8")

    @cached_property
    def line_end_ids(self) -> frozenset[int]:
        """Tokens whose text ends with a newline: a prompt may start after one."""
        return frozenset(
            i for i in range(self.vocab_size) if self.tokenizer.decode([i]).endswith("\n")
        )

    def stream(self, corpus: Corpus, split: str) -> np.ndarray:
        """The split's documents as int32 token ids, joined by the separator token (the
        sub-word twin of :meth:`Corpus.stream`; splits as there)."""
        docs = corpus.documents(split)
        os.environ.setdefault("RAYON_NUM_THREADS", "1")
        encoded = self.tokenizer.encode_batch([d.data.decode("utf-8") for d in docs])
        ids: list[int] = []
        for index, item in enumerate(encoded):
            if index:
                ids.append(self.separator)
            ids += item.ids
        return np.asarray(ids, dtype=np.int32)
