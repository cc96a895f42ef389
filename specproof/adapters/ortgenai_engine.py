"""ONNX Runtime GenAI as an audited engine (run in the ``audit-ortgenai`` venv, CPU).

The tiny target and draft of :mod:`specproof.subjects.real_models` are exported in float32 by the
model builder in the wheel (``python -m onnxruntime_genai.models.builder -p fp32 -e cpu``, offline
from the saved HF folders). Draft-model speculation reads a composite ``genai_config.json`` beside
both exports: the target's config with a ``model.draft`` decoder block (the draft's own) added; the
engine refuses paths with ``..``, so the exports sit in ``target/`` and ``draft/`` under it. The
audit hands the engine token ids and never tokenizes text.

One call is one ``Generator`` (the engine's speculation runs at batch size 1): search options
``do_sample``, ``temperature``, ``top_k``, ``top_p``, ``random_seed``, ``max_length``;
speculation through ``set_speculative_options`` (``max_draft_tokens``, and ``ngram_size`` for
n-gram drafting), at a fixed width (``min_adaptive_k`` 0). EOS cannot be switched off (the
engine refuses an ``eos_token_id`` outside the vocabulary), so runs end at EOS and the audit's
law knows it; a sampled EOS is read with ``get_next_tokens`` after its step, since the engine
ends the run without appending it to ``get_sequence``. The generator's speculative statistics
are summed over the audit as a note.

The law: HF transformers on the same float32 weights through ONNX Runtime GenAI's CPU chain
(``ComputeSampledCategorical``): top-k on the logits when top_k > 1, softmax at the
temperature over the kept logits, then top-p keeping the most probable tokens up to and
including the first at which the cumulative probability reaches ``top_p``, renormalised.
Sampled speculation requires a positive top_k, so T = 1 is written top_k = V (no truncation).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.adapters.beside_hf import (
    audit_beside_hf,
    chained_target_probs,
    gap_sequences,
    logit_gap,
    prompt_shown,
)
from specproof.adapters.configurations import (
    Setting,
    SpeculativeConfig,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
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


def settings(model: AuditModel) -> list[Setting]:
    """At T = 1 the model's lookup prompt, after which n-gram drafts are accepted in full now
    and then."""
    every = {"top_k": model.vocab}
    return [
        ("T=1", {**T1, **every}, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "T = 0.8, top-k 5, top-p 0.9", model.prompt),
        ("greedy", {**GREEDY, **every}, "greedy (do_sample off)", model.prompt),
    ]


def configurations(model: AuditModel) -> list[SpeculativeConfig]:
    """Every audited configuration, each control first (the same sampling and prompt,
    speculation off): the draft model and n-gram drafting, both at k = 3, in every setting;
    at T = 1 also the target drafting for itself (every draft then has the target's law, so a
    correct verifier accepts every draft)."""
    return build_configurations(
        settings(model), ("draft", "ngram"), k=K, self_drafting="T=1",
        greedy_tokens=GREEDY_TOKENS,
    )  # fmt: skip


def by_name(name: str, model: AuditModel) -> SpeculativeConfig:
    return configuration_named(name, configurations(model), "ONNX Runtime GenAI")


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


def chain_probs(logits: torch.Tensor, sampling: Mapping[str, Any]) -> torch.Tensor:
    """One row through ONNX Runtime GenAI's CPU chain (see the module's docstring); greedy:
    the softmax (the audit reads only its argmax)."""
    scores = logits.to(torch.float64)
    if not sampling["do_sample"]:
        return torch.softmax(scores, -1)
    top_k = min(int(sampling["top_k"]), scores.numel())
    if top_k > 1:
        kept = scores.topk(top_k).indices
        masked = torch.full_like(scores, -torch.inf)
        masked[kept] = scores[kept]
        scores = masked
    probs = torch.softmax(scores / float(sampling["temperature"]), -1)
    top_p = float(sampling["top_p"])
    if 0.0 < top_p < 1.0:
        ordered, index = probs.sort(descending=True)
        before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
        keep = torch.zeros_like(probs, dtype=torch.bool)
        keep[index] = before < top_p  # the token whose cumulative mass reaches top_p is kept
        probs = torch.where(keep, probs, 0.0)
    return probs / probs.sum()


def ortgenai_target_probs(target: Any, sampling: Mapping[str, Any]) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through ONNX Runtime GenAI's chain."""
    return chained_target_probs(target, partial(chain_probs, sampling=sampling))


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
    """The larger of the one-pass and the token-by-token gaps to HF."""
    sequences = gap_sequences(model)
    readers = (onnx_logits(exports.target), generator_logits(exports.target, model.vocab))
    gaps = [logit_gap(read, target, sequences) for read in readers]
    return max(g[0] for g in gaps), max(g[1] for g in gaps)


@dataclass
class SpeculativeTrace:
    """The generators' speculative statistics summed over the audit (the engine reports no
    per-round record per call)."""

    totals: Counter[str] = field(default_factory=Counter)
    calls: int = 0

    def add(self, stats: Mapping[str, Any]) -> None:
        self.calls += 1
        for key in STATS:
            self.totals[key] += int(stats.get(key, 0))

    def note(self, k: int) -> str:
        counts = ", ".join(f"{key} {self.totals[key]}" for key in STATS)
        return (
            f"speculative statistics summed over {self.calls} calls (k = {k}): {counts} "
            f"(the engine reports no per-call rounds; coverage of rejections is not traced)"
        )

    def coverage(self) -> str:
        """The table's coverage column: drafts accepted and how the rounds ended."""
        t = self.totals
        return (
            f"{t['draft_tokens_accepted']} of {t['draft_tokens_evaluated']} drafts accepted; "
            f"rounds keeping all / some / none: {t['full_accept_rounds']} / "
            f"{t['partial_accept_rounds']} / {t['zero_accept_rounds']} (engine totals)"
        )


def ortgenai_engine(
    config: SpeculativeConfig,
    exports: Exports,
    target: Any,
    trace: SpeculativeTrace,
    eos: tuple[int, ...],
) -> Engine:
    """The engine: one ``Generator`` per call, stepped until done; the new tokens read after
    each step (``get_next_tokens``: a sampled EOS ends the run but never joins the sequence)."""
    import onnxruntime_genai as og

    model = og.Model(str(exports.folder(config.drafter)))
    speculative = speculative_options(config)

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        params = og.GeneratorParams(model)
        params.set_search_options(
            **search_options(config, len(prompt) + num_new_tokens, call_seed(seed))
        )
        if speculative:
            params.set_speculative_options(**speculative)
        generator = og.Generator(model, params)
        generator.append_tokens(np.array([list(prompt)], dtype=np.int32))
        new = []
        while not generator.is_done():
            generator.generate_next_token()
            new.append(int(generator.get_next_tokens()[0]))
        committed = [int(t) for t in generator.get_sequence(0)[len(prompt) :]]
        ended = any(t in eos for t in new)
        if committed != new[: len(committed)] or len(new) - len(committed) > ended:
            raise RuntimeError(f"step tokens {new} disagree with the sequence {committed}")
        if speculative:
            trace.add(generator.get_speculative_stats())
        return Emission(tuple(new))

    return Engine(
        name=config.name,
        generate=generate,
        target_probs=ortgenai_target_probs(target, config.sampling),
        prompt=config.prompt,
        eos=eos,
        greedy=config.greedy,
        max_draft=config.k or None,
    )


def installed_version() -> str:
    from importlib.metadata import version

    return f"{version('onnxruntime-genai')} (onnxruntime {version('onnxruntime')}, CPU)"


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one ONNX Runtime GenAI configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    exports = exports_of(model)
    target = load_hf(model.target)
    gap = engine_gap(exports, target, model)
    prompt = prompt_shown(config.prompt, config.greedy)
    trace = SpeculativeTrace()
    build = partial(ortgenai_engine, config, exports, target, trace, model.eos)
    audit_beside_hf("ONNX Runtime GenAI", installed_version(), config, build, gap, plan, out,
                    model, prompt, notes=lambda: [trace.note(config.k)] if config.drafter != "none"
                    else [], coverage_text_of=trace.coverage)  # fmt: skip
