"""The model an engine is audited on: one value every adapter takes as an argument.

An adapter reads the target's HF folder (float weights, tokenizer), a drafter folder that shares
the tokenizer, the vocabulary size, the EOS ids and the prompts from it; nothing about a
particular model is written into an adapter. The value travels to an engine's child process as
JSON (:meth:`AuditModel.to_json`, :func:`read_model`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelPaths:
    """Two folders of one family: a target and its drafter (HF folders, or an engine's own
    format converted from them)."""

    target: Path
    draft: Path


@dataclass(frozen=True)
class AuditModel:
    """A target and its drafters, and what an audit needs to know of them."""

    name: str
    """Shown in the table's model column."""
    target: Path
    """HF folder: config.json, float safetensors, the tokenizer."""
    vocab: int
    eos: tuple[int, ...]
    prompt: tuple[int, ...]
    """The audited prompt of sampled configurations (token ids)."""
    draft: Path | None = None
    """A weaker drafter with the same tokenizer (HF folder); None: the model offers none."""
    lookup_prompt: tuple[int, ...] | None = None
    """A prompt after which prompt-lookup / n-gram drafts are accepted in full now and then
    (None: :attr:`prompt`)."""
    penalty_prompt: tuple[int, ...] | None = None
    """A prompt whose repeated tokens make a repetition penalty move the law visibly (None:
    :attr:`prompt`)."""
    dtype: str = "float32"
    """The dtype of the weights in :attr:`target`."""
    heads: tuple[str, ...] = ()
    """Draft heads saved beside the target, each in a folder named after its method
    ("eagle", "eagle3"), for engines that draft with one."""
    notes: tuple[str, ...] = field(default=())
    """What a reader of the results should know (where the weights came from, how the drafter
    was made, why the prompt)."""

    def __post_init__(self) -> None:
        if self.vocab < 2:
            raise ValueError(f"vocab must be at least 2, got {self.vocab}")
        for label, ids in (("prompt", self.prompt), ("lookup_prompt", self.lookup_prompt),
                           ("penalty_prompt", self.penalty_prompt), ("eos", self.eos)):  # fmt: skip
            if ids is None:
                continue
            if label != "eos" and not ids:
                raise ValueError(f"{label} is empty: give at least one token id")
            outside = [t for t in ids if not 0 <= t < self.vocab]
            if outside:
                raise ValueError(
                    f"{label} id {outside[0]} is outside the vocabulary 0..{self.vocab - 1}"
                )

    @property
    def lookup(self) -> tuple[int, ...]:
        return self.lookup_prompt or self.prompt

    @property
    def penalty(self) -> tuple[int, ...]:
        return self.penalty_prompt or self.prompt

    def head(self, method: str) -> Path:
        """The folder of the draft head ``method`` (one of :attr:`heads`)."""
        if method not in self.heads:
            raise ValueError(f"{self.name} has no {method!r} head")
        return self.target.parent / method

    def drafter(self, kind: str) -> Path:
        """The folder drafting for ``kind``: "draft" (the weaker drafter) or "target"."""
        if kind == "target":
            return self.target
        if kind == "draft" and self.draft is not None:
            return self.draft
        raise ValueError(f"{self.name} has no {kind!r} drafter folder")

    @property
    def paths(self) -> ModelPaths:
        """The target and the drafter folders (the target twice when there is no drafter)."""
        return ModelPaths(self.target, self.draft or self.target)

    def to_json(self) -> str:
        values: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            values[item.name] = str(value) if isinstance(value, Path) else value
        return json.dumps(values)


def read_model(text: str) -> AuditModel:
    """The value :meth:`AuditModel.to_json` wrote."""
    raw: dict[str, Any] = json.loads(text)
    paths = {"target", "draft"}
    tuples = {"eos", "prompt", "lookup_prompt", "penalty_prompt", "notes", "heads"}
    values: dict[str, Any] = {
        key: (
            (Path(value) if key in paths else tuple(value) if key in tuples else value)
            if value is not None
            else None
        )
        for key, value in raw.items()
    }
    return AuditModel(**values)


def eos_ids(config: Mapping[str, Any]) -> tuple[int, ...]:
    """The EOS ids an HF config (or generation config) lists."""
    eos = config.get("eos_token_id")
    if eos is None:
        return ()
    return tuple(int(t) for t in eos) if isinstance(eos, list) else (int(eos),)


def model_from_folder(
    folder: Path,
    *,
    prompt: Sequence[int] | None = None,
    prompt_text: str | None = None,
    draft: Path | None = None,
    name: str | None = None,
) -> AuditModel:
    """A user's own HF folder as an :class:`AuditModel`: vocabulary and EOS from its
    config.json; the prompt as ids, or a text put through its tokenizer (its chat template
    when it has one); ``draft``: a drafter folder with the same tokenizer. Raises ValueError
    naming what is missing or inconsistent."""
    folder = Path(folder)
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise ValueError(f"{folder} is not an HF model folder (no config.json)")
    config = json.loads(config_path.read_text())
    text_config = config.get("text_config", config)
    vocab = text_config.get("vocab_size")
    if not isinstance(vocab, int):
        raise ValueError(f"{config_path} gives no integer vocab_size")
    generation = folder / "generation_config.json"
    eos = eos_ids(json.loads(generation.read_text())) if generation.is_file() else ()
    eos = eos or eos_ids(text_config)
    if draft is not None:
        draft_config = Path(draft) / "config.json"
        if not draft_config.is_file():
            raise ValueError(f"--draft {draft} is not an HF model folder (no config.json)")
        draft_vocab = json.loads(draft_config.read_text()).get("vocab_size")
        if draft_vocab != vocab:
            raise ValueError(f"--draft {draft} has vocab_size {draft_vocab}, the target {vocab}")
    if prompt is None:
        prompt = encoded_prompt(folder, prompt_text or "The capital of France is")
    return AuditModel(
        name=name or folder.name,
        target=folder,
        vocab=vocab,
        eos=eos,
        prompt=tuple(int(t) for t in prompt),
        draft=Path(draft) if draft is not None else None,
        notes=(f"HF folder {folder}",),
    )


def encoded_prompt(folder: Path, text: str) -> tuple[int, ...]:
    """``text`` as the model's tokenizer encodes it: as a user turn of its chat template when
    it has one (an instruction model answers that), else as plain text."""
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(folder)
    if getattr(tokenizer, "chat_template", None):
        ids: Any = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        ids = ids["input_ids"] if isinstance(ids, Mapping) else ids
    else:
        ids = tokenizer(text)["input_ids"]
    return tuple(int(t) for t in ids)
