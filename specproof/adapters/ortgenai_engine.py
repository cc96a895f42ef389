"""ONNX Runtime GenAI as an audited engine (run in the ``audit-ortgenai`` venv, CPU).

The tiny target and draft of :mod:`specproof.subjects.real_models` are exported in float32 by the
model builder in the wheel (``python -m onnxruntime_genai.models.builder -p fp32 -e cpu``, offline
from the saved HF folders). Draft-model speculation reads a composite ``genai_config.json`` beside
both exports: the target's config with a ``model.draft`` decoder block (the draft's own) added; the
engine refuses paths with ``..``, so the exports sit in ``target/`` and ``draft/`` under it. The
audit hands the engine token ids and never tokenizes text.

One call is one ``Generator``: search options ``do_sample``, ``temperature``, ``top_k``,
``top_p``, ``repetition_penalty``, ``min_length``, ``random_seed``, ``max_length``, and
``batch_size`` for the configurations that put several requests in one call (the plain path
only: speculation refuses a batch larger than 1, recorded as REFUSED); speculation through
``set_speculative_options`` (``max_draft_tokens``, and ``ngram_size`` for n-gram drafting), at a
fixed width (``min_adaptive_k`` 0). EOS cannot be switched off (the engine refuses an
``eos_token_id`` outside the vocabulary), so runs end at EOS and the audit's law knows it; a
sampled EOS is read with ``get_next_tokens`` after its step, since the engine ends the run
without appending it to ``get_sequence``. A speculative call's rounds are read from the
generator's statistics after every step (a step that runs a round raises ``rounds``; the
others hand out its buffered tokens), so each run carries its rounds for the coverage and
acceptance rows; the statistics are also summed over the audit as a note.

The law: HF transformers on the same float32 weights through ONNX Runtime GenAI's CPU chain:
the penalties first (``LogitsPenaltyProcessor``: EOS masked while the sequence, prompt
included, is shorter than ``min_length``; then the logit of every distinct token of the
sequence divided by ``repetition_penalty`` when positive, multiplied when negative), then
``ComputeSampledCategorical``: top-k on the logits when top_k > 1, softmax at the temperature
over the kept logits, then top-p keeping the most probable tokens up to and including the
first at which the cumulative probability reaches ``top_p``, renormalised. Sampled speculation
requires a positive top_k, so T = 1 is written top_k = V (no truncation). The draft model's
law (for the acceptance row) is the drafter's HF weights through the same chain: the engine
puts each draft row through the target's penalties and sampling options.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.adapters.beside_hf import (
    audit_beside_hf,
    entry,
    gap_sequences,
    logit_gap,
    prompt_shown,
)
from specproof.adapters.configurations import (
    DRAFTER_LABELS,
    Setting,
    SpeculativeConfig,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.audit import EngineReport
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.audit.report import exact_row
from specproof.models import AuditModel

VERSION = "0.18.0"
K = 3
NGRAM = 2
"""``ngram_size``: the last token is looked up in the committed history."""
T1 = {"do_sample": True, "temperature": 1.0, "top_p": 1.0}
"""With ``top_k`` the vocabulary size (:func:`settings`): the engine cuts at its default
otherwise."""
TRUNCATED = {**T1, "temperature": 0.8, "top_k": 5, "top_p": 0.9}
GREEDY = {**T1, "do_sample": False}
GREEDY_TOKENS = 8
TOP_K = 50
"""top_k of the penalised and guided settings (the builder's default)."""
PENALTY = 1.3
MIN_NEW = 2
"""``min_length`` is the prompt's length plus this: EOS is masked at the first two positions."""
BATCH = 4
"""Requests per call of the batched configurations."""
ANSWERS = ("Paris", "London", "Berlin", "Rome", "Madrid")
GUIDANCE = f"({'|'.join(ANSWERS)})\\."
"""The guided configurations' grammar (a regex): one of a few words and a full stop, then EOS.
No two words share a first letter, so everything after the first token is forced text. The
engine's grammar (llguidance) then allows only the tokenizer's own encoding of that text, one
token at a time (after "L" the engine wrote "ondon" in 37 runs of 37 where HF's law within
the grammar puts 0.54 on "on" and 0.41 on "ond"); with fast-forward tokens on it commits
those tokens without a forward pass. Both give the law :meth:`Answers.next_tokens` states."""
GRAMMAR_VOCAB = 64
"""Guided settings only above this vocabulary: a tokenizer of a few ids spells no word."""
STATS = (
    "rounds",
    "draft_tokens_evaluated",
    "draft_tokens_accepted",
    "full_accept_rounds",
    "partial_accept_rounds",
    "zero_accept_rounds",
    "correction_tokens",
    "bonus_tokens",
)
"""The generator's speculative statistics summed over the audit."""


@dataclass(frozen=True)
class OrtConfig(SpeculativeConfig):
    """A configuration and how many requests one call carries."""

    batch: int = 1

    @property
    def label(self) -> str:
        kind = DRAFTER_LABELS[self.drafter]
        base = kind if self.drafter == "none" else f"{kind} k={self.k}"
        return f"{base}, {self.batch} requests per call" if self.batch > 1 else base


def batched(config: SpeculativeConfig, batch: int, control: str = "") -> OrtConfig:
    """``config`` with ``batch`` requests per call, renamed after it."""
    values = {item.name: getattr(config, item.name) for item in fields(SpeculativeConfig)}
    made = OrtConfig(**{**values, "batch": batch, "control": control or config.control})
    tag = config.name.split(" ", 1)[0]
    return OrtConfig(**{**values, "batch": batch, "control": made.control,
                        "name": f"{tag} {made.label}"})  # fmt: skip


def turn_end_prompt(model: AuditModel) -> tuple[int, ...]:
    """The model's penalty prompt cut before its last EOS id, so that EOS is the likely next
    token (a chat prompt's user turn left open) and ``min_length`` moves the law; the prompt
    itself when it holds no EOS."""
    prompt = model.penalty
    ends = [i for i, token in enumerate(prompt) if token in model.eos]
    return prompt[: ends[-1]] if ends and ends[-1] > 0 else prompt


def penalties(model: AuditModel) -> dict[str, Any]:
    return {"repetition_penalty": PENALTY, "min_length": len(turn_end_prompt(model)) + MIN_NEW}


def settings(model: AuditModel) -> list[Setting]:
    """At T = 1 the model's lookup prompt, after which n-gram drafts are accepted in full now
    and then; the penalties (repetition and min_length) after :func:`turn_end_prompt`, and
    min_length alone there (the repetition penalty over a chat prompt that holds EOS already
    takes most of EOS's mass: on SmolLM2 from 0.82 to 0.04 at the first position). The
    penalised and guided settings sample at top-k :data:`TOP_K`: the engine's correction after
    a rejection pairs every kept target token with a search of the draft's kept tokens, about a
    second a rejection at top_k = V = 49,152 on this machine. Guided settings only for a real
    vocabulary (above :data:`GRAMMAR_VOCAB`)."""
    every = {"top_k": model.vocab}
    top = {"top_k": min(TOP_K, model.vocab)}
    end = turn_end_prompt(model)
    penalised = f"top-k {TOP_K}, repetition penalty {PENALTY}, min_length prompt + {MIN_NEW}"
    out: list[Setting] = [
        ("T=1", {**T1, **every}, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "T = 0.8, top-k 5, top-p 0.9", model.prompt),
        ("greedy", {**GREEDY, **every}, "greedy (do_sample off)", model.prompt),
        ("penalties", {**T1, **top, **penalties(model)}, f"T = 1, {penalised}", end),
        ("min-length", {**T1, **top, "min_length": len(end) + MIN_NEW},
         f"T = 1, top-k {TOP_K}, min_length prompt + {MIN_NEW}", end),
        ("greedy-penalties", {**GREEDY, **every, **penalties(model)}, f"greedy, {penalised}",
         end),
    ]  # fmt: skip
    if model.vocab > GRAMMAR_VOCAB:
        out += [
            ("guided", {**T1, **top, "guidance": GUIDANCE},
             f"T = 1, top-k {TOP_K}, regex {GUIDANCE}", model.prompt),
            ("guided-ff", {**T1, **top, "guidance": GUIDANCE, "fast_forward": True},
             f"T = 1, top-k {TOP_K}, regex {GUIDANCE}, fast-forward tokens", model.prompt),
        ]  # fmt: skip
    return out


def configurations(model: AuditModel) -> list[OrtConfig]:
    """Every audited configuration, each control first (the same sampling and prompt,
    speculation off): the draft model and n-gram drafting, both at k = 3, in every setting;
    at T = 1 also the target drafting for itself (every draft then has the target's law, so a
    correct verifier accepts every draft), and {BATCH} requests per call, speculation off
    (its own control) and with the draft model (which the engine refuses)."""
    base = build_configurations(
        settings(model), ("draft", "ngram"), k=K, self_drafting="T=1",
        greedy_tokens=GREEDY_TOKENS,
    )  # fmt: skip
    out = [batched(config, 1) for config in base]
    control = batched(next(c for c in base if c.name == "T=1 no draft"), BATCH)
    drafted = next(c for c in base if c.name == "T=1 draft model k=3")
    return [*out, control, batched(drafted, BATCH, control=control.name)]


def by_name(name: str, model: AuditModel) -> OrtConfig:
    found = configuration_named(name, configurations(model), "ONNX Runtime GenAI")
    assert isinstance(found, OrtConfig)
    return found


def search_options(config: SpeculativeConfig, length: int, seed: int) -> dict[str, Any]:
    """``set_search_options`` of one call: ``length`` is the prompt plus the new tokens."""
    options: dict[str, Any] = {
        "max_length": length,
        "do_sample": bool(config.sampling["do_sample"]),
        "random_seed": seed,
    }
    if options["do_sample"]:
        options.update(
            temperature=float(config.sampling["temperature"]),
            top_k=int(config.sampling["top_k"]),
            top_p=float(config.sampling["top_p"]),
        )
    for key in ("repetition_penalty", "min_length"):
        if key in config.sampling:
            options[key] = config.sampling[key]
    return options


def speculative_options(config: SpeculativeConfig) -> dict[str, Any]:
    """``set_speculative_options`` of one call (none without speculation): a fixed width."""
    if config.drafter == "none":
        return {}
    options: dict[str, Any] = {"max_draft_tokens": config.k, "min_adaptive_k": 0}
    if config.drafter == "ngram":
        options["ngram_size"] = NGRAM
    return options


def call_seed(seed: int) -> int:
    """The audit's seed as ``random_seed`` (a 31-bit value; distinct seeds stay distinct below
    2**31, far above any audit's run count)."""
    return seed % 2**31


def penalised(
    logits: torch.Tensor, sequence: Sequence[int], sampling: Mapping[str, Any],
    eos: Sequence[int],
) -> torch.Tensor:  # fmt: skip
    """One row of logits after ``sequence`` (prompt included) through the engine's penalties:
    EOS masked while the sequence is shorter than ``min_length``, then every distinct token of
    the sequence divided by ``repetition_penalty`` when positive, multiplied otherwise."""
    scores = logits.to(torch.float64).clone()
    if len(sequence) < int(sampling.get("min_length", 0)):
        scores[list(eos)] = -torch.inf
    penalty = float(sampling.get("repetition_penalty", 1.0))
    if penalty != 1.0 and len(sequence):
        seen = torch.tensor(sorted(set(sequence)))
        chosen = scores[seen]
        scores[seen] = torch.where(chosen < 0, chosen * penalty, chosen / penalty)
    return scores


def chain_probs(logits: torch.Tensor, sampling: Mapping[str, Any]) -> torch.Tensor:
    """Rows [..., V] through ONNX Runtime GenAI's CPU chain (see the module's docstring);
    greedy: the softmax (the audit reads only its argmax)."""
    scores = logits.to(torch.float64)
    if not sampling["do_sample"]:
        return torch.softmax(scores, -1)
    top_k = min(int(sampling["top_k"]), scores.shape[-1])
    if 1 < top_k < scores.shape[-1]:
        kept = scores.topk(top_k, -1).indices
        masked = torch.full_like(scores, -torch.inf)
        scores = masked.scatter(-1, kept, scores.gather(-1, kept))
    probs = torch.softmax(scores / float(sampling["temperature"]), -1)
    top_p = float(sampling["top_p"])
    if 0.0 < top_p < 1.0:
        ordered, index = probs.sort(-1, descending=True)
        before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
        # the token whose cumulative mass reaches top_p is kept
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, index, before < top_p)
        probs = torch.where(keep, probs, 0.0)
    return probs / probs.sum(-1, keepdim=True)


@dataclass(frozen=True)
class Answers:
    """The guided configurations' grammar as a token mask: after generated text ``s``, a token
    is allowed when ``s`` and its text are a prefix of one of the answers (each word and its
    full stop), EOS only once ``s`` is a whole answer. ``pieces``: each token's text, and the
    ids that have it."""

    answers: tuple[str, ...]
    pieces: Mapping[str, tuple[int, ...]]
    eos: tuple[int, ...]

    def allowed(self, text: str) -> list[int]:
        out: set[int] = set(self.eos) if text in self.answers else set()
        for answer in self.answers:
            if answer.startswith(text):
                rest = answer[len(text) :]
                for end in range(1, len(rest) + 1):
                    out.update(self.pieces.get(rest[:end], ()))
        return sorted(out)

    def forced(self, text: str) -> str:
        """The text every answer still open after ``text`` continues with (none once ``text``
        is a whole answer)."""
        rests = [a[len(text) :] for a in self.answers if a.startswith(text) and a != text]
        if not rests or text in self.answers:
            return ""
        common = rests[0]
        for rest in rests[1:]:
            while not rest.startswith(common):
                common = common[:-1]
        return common

    def next_tokens(
        self, tokens: Sequence[int], decode: Callable[[list[int]], str],
        encode: Callable[[str], list[int]] | None,
    ) -> int | list[int]:  # fmt: skip
        """After the generated ``tokens``: the token the grammar forces next (with ``encode``:
        the text forced after each freely chosen token, as the tokenizer encodes it, one token
        at a time), or the tokens the mask allows."""
        text = ""
        pending: list[int] = []
        for token in tokens:
            text += decode([token])
            if pending:
                pending.pop(0)
            elif encode is not None:
                rest = self.forced(text)
                pending = encode(rest) if rest else []
        return pending[0] if pending else self.allowed(text)


def answers_of(folder: Path, eos: Sequence[int]) -> Answers:
    """:data:`ANSWERS` as a mask over the tokenizer in ``folder`` (special tokens excluded)."""
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(folder)
    special = set(tokenizer.all_special_ids)
    pieces: dict[str, list[int]] = {}
    for token in range(len(tokenizer)):
        if token not in special:
            pieces.setdefault(tokenizer.decode([token]), []).append(token)
    frozen = {text: tuple(ids) for text, ids in pieces.items()}
    return Answers(tuple(f"{answer}." for answer in ANSWERS), frozen, tuple(eos))


@dataclass(frozen=True)
class Guide:
    """What a guided row needs: the grammar's mask, the tokenizer (``encode`` None: forced
    text is not encoded, every token of the mask stays free) and where the generated tokens
    start."""

    answers: Answers
    decode: Callable[[list[int]], str]
    encode: Callable[[str], list[int]] | None
    start: int


def ortgenai_probs(
    hf: Any, sampling: Mapping[str, Any], eos: Sequence[int], guide: Guide | None = None
) -> TargetProbs:
    """[B, L] -> [B, L, V]: an HF model's logits through ONNX Runtime GenAI's penalties and
    chain, each row after its own prefix (the target's law, or the draft model's); ``guide``:
    guided rows after the prompt keep only the tokens the grammar allows, or the one it
    forces."""

    def probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = hf(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        per_row = guide is not None or "repetition_penalty" in sampling or "min_length" in sampling
        for b in range(sequences.shape[0]):
            scores = logits[b].to(torch.float64)
            row = sequences[b].tolist()
            for t in range(sequences.shape[1]) if per_row else ():
                scores[t] = penalised(scores[t], row[: t + 1], sampling, eos)
                if guide is not None and t + 1 >= guide.start:
                    generated = row[guide.start : t + 1]
                    allowed = guide.answers.next_tokens(generated, guide.decode, guide.encode)
                    allowed = [allowed] if isinstance(allowed, int) else allowed
                    if not allowed:  # past the run's EOS (padding): a row no token is read from
                        continue
                    kept = torch.full_like(scores[t], -torch.inf)
                    kept[allowed] = scores[t, allowed]
                    scores[t] = kept
            out[b] = chain_probs(scores, sampling).to(torch.float32)
        return out

    return probs


@dataclass(frozen=True)
class Exports:
    """The model builder's exports of the target and the draft, and the composite folders."""

    root: Path

    @property
    def target(self) -> Path:
        return self.root / "target"

    @property
    def draft(self) -> Path:
        return self.root / "draft"

    def folder(self, drafter: str) -> Path:
        """The folder ``og.Model`` loads for a drafter: the target's export, or a composite."""
        return self.target if drafter in ("none", "ngram") else self.root / f"spec-{drafter}"


def export(model: Path, out: Path) -> Path:
    """``model`` (an HF folder) as the builder's fp32 CPU export in ``out``."""
    if not (out / "genai_config.json").exists():
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(model),
                   "-o", str(out), "-p", "fp32", "-e", "cpu"]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def composite_config(target: Mapping[str, Any], draft: Mapping[str, Any]) -> dict[str, Any]:
    """The target's ``genai_config.json`` with the draft's decoder block as ``model.draft``,
    both files named relative to the composite folder (``target/``, ``draft/``)."""
    config = copy.deepcopy(dict(target))
    config["model"]["decoder"]["filename"] = "target/model.onnx"
    config["model"]["draft"] = copy.deepcopy(draft["model"]["decoder"])
    config["model"]["draft"]["filename"] = "draft/model.onnx"
    config["speculative"] = {"max_draft_tokens": K}
    return config


def write_composite(exports: Exports, drafter: str) -> None:
    folder = exports.folder(drafter)
    if (folder / "genai_config.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    source = exports.draft if drafter == "draft" else exports.target
    for name, path in (("target", exports.target), ("draft", source)):
        shutil.copytree(path, folder / name, dirs_exist_ok=True)
    read = lambda path: json.loads((path / "genai_config.json").read_text())  # noqa: E731
    config = composite_config(read(exports.target), read(source))
    (folder / "genai_config.json").write_text(json.dumps(config, indent=1))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(exports.target / name, folder / name)


def exports_of(model: AuditModel) -> Exports:
    exports = Exports(model.target.parent / "ortgenai")
    export(model.paths.target, exports.target)
    export(model.paths.draft, exports.draft)
    for drafter in ("draft", "target"):
        write_composite(exports, drafter)
    return exports


def onnx_logits(folder: Path) -> Callable[[list[int]], torch.Tensor]:
    """The exported target's logits at every position in one pass, [len, V], through
    onnxruntime on CPU (the session the engine runs, with an empty KV cache)."""
    import onnxruntime as ort

    config = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    types = {i.name: i for i in session.get_inputs()}

    def logits(sequence: list[int]) -> torch.Tensor:
        feeds: dict[str, np.ndarray] = {}
        for name, meta in types.items():
            dtype = np.int64 if "int64" in meta.type else np.int32
            if name == "input_ids":
                feeds[name] = np.array([sequence], dtype=dtype)
            elif name == "attention_mask":
                feeds[name] = np.ones((1, len(sequence)), dtype=dtype)
            elif name == "position_ids":
                feeds[name] = np.arange(len(sequence), dtype=dtype)[None]
            else:  # an empty past
                shape = (1, config["num_key_value_heads"], 0, config["head_size"])
                feeds[name] = np.zeros(shape, dtype=np.float32)
        (rows,) = session.run(["logits"], feeds)
        return torch.tensor(rows[0], dtype=torch.float64)

    return logits


def generator_logits(folder: Path, vocab: int) -> Callable[[list[int]], torch.Tensor]:
    """The engine's own logits token by token, [len, V]: one ``append_tokens`` per token
    through its KV cache, ``get_logits`` after each."""
    import onnxruntime_genai as og

    model = og.Model(str(folder))

    def logits(sequence: list[int]) -> torch.Tensor:
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(sequence) + 1)
        generator = og.Generator(model, params)
        rows = []
        for token in sequence:
            generator.append_tokens(np.array([[token]], dtype=np.int32))
            rows.append(np.array(generator.get_logits()).reshape(-1)[-vocab:])
        return torch.tensor(np.stack(rows), dtype=torch.float64)

    return logits


def engine_gap(exports: Exports, target: Any, model: AuditModel) -> tuple[float, float]:
    """The larger of the one-pass and the token-by-token gaps to HF, measured once per export
    and kept beside it (``logit_gap.json``): it depends only on the exported and the HF
    weights, and on SmolLM2 one measurement takes minutes."""
    kept = exports.root / "logit_gap.json"
    if kept.exists():
        logit, tv = json.loads(kept.read_text())
        return float(logit), float(tv)
    sequences = gap_sequences(model)
    readers = (onnx_logits(exports.target), generator_logits(exports.target, model.vocab))
    gaps = [logit_gap(read, target, sequences) for read in readers]
    gap = max(g[0] for g in gaps), max(g[1] for g in gaps)
    kept.write_text(json.dumps(gap))
    return gap


@dataclass
class SpeculativeTrace:
    """The generators' speculative statistics summed over the audit."""

    totals: Counter[str] = field(default_factory=Counter)
    calls: int = 0

    def add(self, stats: Mapping[str, Any]) -> None:
        self.calls += 1
        for key in STATS:
            self.totals[key] += int(stats.get(key, 0))

    def note(self, k: int) -> str:
        counts = ", ".join(f"{key} {self.totals[key]}" for key in STATS)
        return f"speculative statistics summed over {self.calls} calls (k = {k}): {counts}"

    def coverage(self) -> str:
        """The table's coverage column where runs carry no rounds: the engine's totals."""
        t = self.totals
        return (
            f"{t['draft_tokens_accepted']} of {t['draft_tokens_evaluated']} drafts accepted; "
            f"rounds keeping all / some / none: {t['full_accept_rounds']} / "
            f"{t['partial_accept_rounds']} / {t['zero_accept_rounds']} (engine totals)"
        )


def round_of(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[int, int] | None:
    """The round a step ran, from the statistics around it: (drafts proposed, accepted) when
    it ran a speculative round, (0, 0) for a plain step (no draft proposed), None when it
    handed out a buffered token."""
    if after["rounds"] > before["rounds"]:
        drafted = after["draft_tokens_proposed"] - before["draft_tokens_proposed"]
        return drafted, after["draft_tokens_accepted"] - before["draft_tokens_accepted"]
    if after["standard_fallback_steps"] > before["standard_fallback_steps"]:
        return 0, 0
    return None


def visible_rounds(
    rounds: Sequence[tuple[int, int, int]], ended_at_eos: bool
) -> tuple[tuple[int, int], ...]:
    """(drafted, accepted, tokens seen) of each round as the run's (drafted, accepted): a
    round cut short by EOS ends at it (an accepted EOS draft counts as the round's last token,
    not as an accepted draft); one cut by the length limit can only have accepted every draft
    and lost its bonus token, which the acceptance row allows in the last round."""
    out = []
    for index, (drafted, accepted, seen) in enumerate(rounds):
        last = index == len(rounds) - 1
        if seen == accepted + 1:
            out.append((drafted, accepted))
        elif last and ended_at_eos and seen <= accepted:
            out.append((drafted, seen - 1))
        elif last and seen == accepted == drafted:
            out.append((drafted, accepted))
        else:
            raise RuntimeError(f"round {index} accepted {accepted} of {drafted} drafts and "
                               f"handed out {seen} tokens")  # fmt: skip
    return tuple(out)


def ortgenai_engine(
    config: OrtConfig,
    exports: Exports,
    laws: tuple[TargetProbs, TargetProbs | None],
    trace: SpeculativeTrace,
    eos: tuple[int, ...],
) -> Engine:
    """The engine: one ``Generator`` per call, stepped until done; the new tokens read after
    each step (``get_next_tokens``: a sampled EOS ends the run but never joins the sequence).
    ``laws``: the target's law and, for a draft model, the drafter's."""
    import onnxruntime_genai as og

    model = og.Model(str(exports.folder(config.drafter)))
    speculative = speculative_options(config)
    guided = "guidance" in config.sampling
    # A guided round that accepts every draft hands out no bonus token: its rounds are not
    # traced per run (the engine's totals make the coverage column).
    traced = bool(speculative) and not guided

    def generator(prompts: Sequence[Sequence[int]], num_new_tokens: int, seed: int) -> Any:
        params = og.GeneratorParams(model)
        length = len(prompts[0]) + num_new_tokens
        params.set_search_options(
            **search_options(config, length, call_seed(seed)), batch_size=len(prompts)
        )
        if speculative:
            params.set_speculative_options(**speculative)
        if guided:
            fast_forward = bool(config.sampling.get("fast_forward"))
            params.set_guidance("regex", str(config.sampling["guidance"]), fast_forward)
        made = og.Generator(model, params)
        made.append_tokens(np.array([list(p) for p in prompts], dtype=np.int32))
        return made

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        made = generator([prompt], num_new_tokens, seed)
        new: list[int] = []
        rounds: list[tuple[int, int, int]] = []
        before = made.get_speculative_stats() if traced else {}
        while not made.is_done():
            made.generate_next_token()
            new.append(int(made.get_next_tokens()[0]))
            if traced:
                after = made.get_speculative_stats()
                step = round_of(before, after)
                if step is not None:
                    rounds.append((*step, 0))
                drafted, accepted, seen = rounds[-1]
                rounds[-1] = (drafted, accepted, seen + 1)
                before = after
        committed = [int(t) for t in made.get_sequence(0)[len(prompt) :]]
        ended = any(t in eos for t in new)
        if config.sampling.get("fast_forward") and not speculative:
            # The plain path appends forced tokens to the sequence without handing them out.
            new = committed + new[-1:] if ended and new[-1] not in committed[-1:] else committed
        if committed != new[: len(committed)] or len(new) - len(committed) > ended:
            raise RuntimeError(f"step tokens {new} disagree with the sequence {committed}")
        if speculative:
            trace.add(made.get_speculative_stats())
        return Emission(tuple(new), visible_rounds(rounds, ended) if traced else ())

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        made = generator(prompts, num_new_tokens, seed)
        steps = []
        while not made.is_done():
            made.generate_next_token()
            steps.append([int(t) for t in made.get_next_tokens()])
        out = []
        for row in range(len(prompts)):
            tokens: list[int] = []
            for step in steps:  # after its EOS a row is padded
                if not tokens or tokens[-1] not in eos:
                    tokens.append(step[row])
            out.append(Emission(tuple(tokens[:num_new_tokens])))
        return out

    target_probs, draft_probs = laws
    return Engine(
        name=config.name,
        generate=generate,
        target_probs=target_probs,
        prompt=config.prompt,
        eos=eos,
        greedy=config.greedy,
        max_draft=config.k or None,
        generate_many=generate_many if config.batch > 1 else None,
        batch=config.batch,
        draft_probs=draft_probs,
    )


def installed_version() -> str:
    from importlib.metadata import version

    return f"{version('onnxruntime-genai')} (onnxruntime {version('onnxruntime')}, CPU)"


def laws_of(config: OrtConfig, model: AuditModel, target: Any) -> tuple[TargetProbs, Any]:
    """The target's law and, for a sampled draft-model configuration, the drafter's (the
    draft model's HF weights, or the target's when it drafts for itself); guided: the
    target's only."""
    if "guidance" in config.sampling:
        from transformers import AutoTokenizer

        tokenizer: Any = AutoTokenizer.from_pretrained(model.target)
        encode = partial(tokenizer.encode, add_special_tokens=False)
        guide = Guide(answers_of(model.target, model.eos), tokenizer.decode, encode,
                      len(config.prompt))  # fmt: skip
        return ortgenai_probs(target, config.sampling, model.eos, guide), None
    target_probs = ortgenai_probs(target, config.sampling, model.eos)
    if config.greedy or config.drafter not in ("draft", "target"):
        return target_probs, None
    if config.drafter == "target":
        return target_probs, target_probs
    return target_probs, ortgenai_probs(load_hf(model.paths.draft), config.sampling, model.eos)


def refused_entry(config: OrtConfig, error: BaseException, model: AuditModel) -> dict[str, Any]:
    """A configuration whose calls the engine refuses: one informational row with its message,
    verdict REFUSED (never a pass, never a finding about the law)."""
    message = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    row = exact_row(config.name, "refused", None, "info", f"refused by the engine: {message}")
    report = EngineReport(config.name, "engine", [row])
    record = entry("ONNX Runtime GenAI", installed_version(), config.name, report,
                   model=model.name, control=config.control,
                   settings={"sampling": config.sampling_label, "drafter": config.label},
                   coverage="-")  # fmt: skip
    record["verdict"] = "REFUSED"
    return record


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one ONNX Runtime GenAI configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    exports = exports_of(model)
    target = load_hf(model.target)
    gap = engine_gap(exports, target, model)
    prompt = prompt_shown(config.prompt, config.greedy)
    trace = SpeculativeTrace()
    laws = laws_of(config, model, target)
    build = partial(ortgenai_engine, config, exports, laws, trace, model.eos)
    if config.batch > 1 and config.drafter != "none":
        started = time.perf_counter()
        many = build().generate_many
        assert many is not None
        try:
            many([config.prompt] * config.batch, 1, 0)
        except Exception as error:  # the engine's refusal is the result
            record = refused_entry(config, error, model)
            record["seconds"] = round(time.perf_counter() - started, 1)
            out.write_text(json.dumps(record))
            print(f"{config.name}: {record['report']['results'][0]['summary']}", file=sys.stderr)
            return
    untraced = "guidance" in config.sampling
    audit_beside_hf("ONNX Runtime GenAI", installed_version(), config, build, gap, plan, out,
                    model, prompt, notes=lambda: [trace.note(config.k)] if config.drafter != "none"
                    else [], coverage_text_of=trace.coverage if untraced else None)  # fmt: skip
