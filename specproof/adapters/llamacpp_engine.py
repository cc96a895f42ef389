"""llama.cpp (llama-cpp-python) as an audited engine (run in the ``audit-llamacpp`` venv).

The audited model's target and draft are converted to float32 GGUF with the
converter vendored in llama-cpp-python's source distribution (the tokenizer, made here, has no
known pre-tokenizer hash, so the converter is told "default"; the audit hands llama.cpp token
ids and never tokenizes text). One run is ``Llama.generate(prompt, ...)`` after ``set_seed``,
stopped after ``num_new_tokens`` tokens (EOS is an ordinary token to ``generate``).

Drafting: none (the control), ``LlamaPromptLookupDecoding``, or :class:`DraftLlama`, a
``LlamaDraftModel`` that proposes the draft model's greedy continuation. llama-cpp-python
verifies by sampling the target at every drafted position and keeping the draft while they
agree; the drafter is traced to record each round's draft length and accepted count.

The law: HF transformers on the same weights, with llama-cpp-python's sampler chain as it
builds it (``Llama._init_sampler``): the penalties over the last ``last_n_tokens_size`` (64)
tokens the sampler has emitted (the generated ones, not the prompt: ``llama_sampler_sample``
accepts each sampled token into the chain), then top-k, top-p, min-p, temperature. The
penalties are llama.cpp's ``llama_sampler_penalties_apply``: each such token's logit divided
by the repetition penalty when positive (multiplied otherwise), then lowered by the frequency
penalty times its count and by the presence penalty once.

Several requests per call: none. ``Llama`` holds one context whose tokens all go to sequence 0
(``LlamaBatch.set_batch``), ``generate`` and ``create_completion`` take one prompt, and the
draft model is used on that path only; each run is its own call.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.adapters.beside_hf import audit_beside_hf, gap_sequences, logit_gap
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.models import AuditModel

VERSION = "0.3.36"
N_CTX = 64
NO_PENALTY = {"repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
"""``Llama.generate``'s own defaults: the settings without penalties are what they were."""
T1 = {"temp": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, **NO_PENALTY}
TRUNCATED = {**T1, "top_k": 5, "top_p": 0.9, "min_p": 0.05, "repeat_penalty": 1.3}
GREEDY = {**T1, "temp": 0.0}
"""llama-cpp-python's greedy sampler (temperature 0)."""
PENALTIES = {**T1, "repeat_penalty": 1.3, "presence_penalty": 0.5, "frequency_penalty": 0.5}
"""T = 1 with all three penalties (OpenVINO GenAI's audited values)."""
GREEDY_PENALTIES = {**PENALTIES, "temp": 0.0}
PENALTY_LABEL = "repetition penalty 1.3, presence penalty 0.5, frequency penalty 0.5"
PENALTY_LAST_N = 64
"""``Llama``'s ``last_n_tokens_size`` default: the penalties see the last 64 emitted tokens."""
REPEATING_TEXT = "red green blue red green blue red green blue red green blue"
"""The penalties' prompt on a real vocabulary, as plain text (no chat template): its
continuation repeats its own words, so penalties over the generated tokens move the law (on
SmolLM2 by TV 0.11-0.25 at positions 2-5; after the chat prompts the model hardly repeats a
token within 5, and the penalties moved the law by TV 0.015 at most)."""
TOKENIZED_VOCAB = 64
"""Above this vocabulary the model's tokenizer spells :data:`REPEATING_TEXT`; a tiny model
uses its lookup prompt, which its target continues with the same token."""
GREEDY_TOKENS = 8
SAMPLING_KEYS = ("temp", "top_k", "top_p", "min_p", "repeat_penalty", "presence_penalty",
                 "frequency_penalty")  # fmt: skip
CONVERTER_PARTS = ("convert_hf_to_gguf.py", "conversion", "gguf-py")


@dataclass(frozen=True)
class LlamaCppConfig:
    name: str
    drafter: str  # "none", "lookup", "draft"
    k: int
    sampling: Mapping[str, float]
    sampling_label: str
    control: str = ""
    tokens: int = 5
    prompt: tuple[int, ...] = ()
    lossy_by_design: bool = False

    @property
    def label(self) -> str:
        return {"none": "no draft", "lookup": f"prompt lookup k={self.k}"}.get(
            self.drafter, f"draft model k={self.k}"
        )

    @property
    def greedy(self) -> bool:
        return float(self.sampling["temp"]) == 0.0


@lru_cache(maxsize=4)
def encoded(folder: str, text: str) -> tuple[int, ...]:
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(folder)
    return tuple(int(t) for t in tokenizer.encode(text, add_special_tokens=False))


def penalty_prompt(model: AuditModel) -> tuple[int, ...]:
    """The prompt of the penalised settings: :data:`REPEATING_TEXT` in the model's tokens, or
    the lookup prompt for a vocabulary of :data:`TOKENIZED_VOCAB` or fewer ids."""
    if model.vocab <= TOKENIZED_VOCAB:
        return model.lookup
    return encoded(str(model.target), REPEATING_TEXT)


def configurations(model: AuditModel) -> list[LlamaCppConfig]:
    """Every audited configuration, each control first; a control and the configurations
    compared with it share one prompt (at T = 1 the one after which prompt lookup's drafts
    are accepted in full, the model's lookup prompt). The penalties run after
    :func:`penalty_prompt`, whose continuation repeats its own tokens: llama.cpp penalises
    only the generated ones."""
    penalised_prompt = penalty_prompt(model)
    out = []
    for tag, sampling, label, prompt in (
        ("T=1", T1, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "top-k 5, top-p 0.9, min-p 0.05, repetition penalty 1.3",
         model.prompt),
        ("greedy", GREEDY, "greedy (temperature 0)", model.prompt),
        ("penalties", PENALTIES, f"T = 1, {PENALTY_LABEL}", penalised_prompt),
        ("greedy-penalties", GREEDY_PENALTIES, f"greedy, {PENALTY_LABEL}", penalised_prompt),
    ):  # fmt: skip
        control = f"{tag} no draft"
        tokens = GREEDY_TOKENS if float(sampling["temp"]) == 0.0 else 5
        out.append(LlamaCppConfig(control, "none", 0, sampling, label, tokens=tokens,
                                  prompt=prompt))  # fmt: skip
        for drafter, name in (("lookup", "prompt lookup"), ("draft", "draft model")):
            out.append(
                LlamaCppConfig(
                    f"{tag} {name} k=3", drafter, 3, sampling, label, control, tokens, prompt
                )
            )
    return out


def by_name(name: str, model: AuditModel) -> LlamaCppConfig:
    for config in configurations(model):
        if config.name == name:
            return config
    known = ", ".join(c.name for c in configurations(model))
    raise KeyError(f"no llama.cpp configuration {name!r}; known: {known}")


def penalised(
    logits: torch.Tensor, previous: Sequence[int], penalty: float, presence: float = 0.0,
    frequency: float = 0.0,
) -> torch.Tensor:  # fmt: skip
    """llama.cpp's penalties over ``previous`` (the emitted tokens in its window): each
    distinct token's logit divided by the repetition ``penalty`` when positive, multiplied by
    it otherwise (HF's rule, on a different token set), then lowered by ``frequency`` times
    the token's count and by ``presence`` once."""
    if (penalty == 1.0 and presence == 0.0 and frequency == 0.0) or not previous:
        return logits
    out = logits.clone()
    counts = Counter(int(t) for t in previous)
    index = torch.tensor(sorted(counts), dtype=torch.long)
    chosen = out[index]
    chosen = torch.where(chosen > 0, chosen / penalty, chosen * penalty)
    times = torch.tensor([counts[int(t)] for t in index], dtype=chosen.dtype)
    out[index] = chosen - (frequency * times + presence)
    return out


def chain_probs(logits: torch.Tensor, sampling: Mapping[str, float]) -> torch.Tensor:
    """One row through top-k, top-p, min-p and temperature, in llama.cpp's order."""
    scores = logits.to(torch.float64)
    top_k = int(sampling["top_k"])
    if 0 < top_k < scores.numel():
        kth = scores.topk(top_k).values[-1]
        scores = torch.where(scores < kth, -torch.inf, scores)
    top_p = float(sampling["top_p"])
    if top_p < 1.0:
        probs = torch.softmax(scores, -1)
        ordered, index = probs.sort(descending=True)
        before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
        drop = torch.zeros_like(probs, dtype=torch.bool)
        drop[index] = before >= top_p
        scores = torch.where(drop, -torch.inf, scores)
    min_p = float(sampling["min_p"])
    if min_p > 0.0:
        probs = torch.softmax(scores, -1)
        scores = torch.where(probs < min_p * probs.max(), -torch.inf, scores)
    temp = float(sampling["temp"])
    return torch.softmax(scores / (temp if temp > 0 else 1.0), -1)  # greedy: the argmax's row


def llamacpp_target_probs(
    target: Any, sampling: Mapping[str, float], prompt_length: int
) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through llama-cpp-python's sampler chain; the
    penalties see the last :data:`PENALTY_LAST_N` tokens after the first ``prompt_length``
    (the ones the sampler emitted)."""

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for b in range(sequences.shape[0]):
            for t in range(sequences.shape[1]):
                emitted = sequences[b, prompt_length : t + 1].tolist()[-PENALTY_LAST_N:]
                row = penalised(logits[b, t], emitted, float(sampling["repeat_penalty"]),
                                float(sampling["presence_penalty"]),
                                float(sampling["frequency_penalty"]))  # fmt: skip
                out[b, t] = chain_probs(row, sampling).to(torch.float32)
        return out

    return target_probs


@dataclass(frozen=True)
class ConverterSource:
    """A source distribution on the package index that carries llama.cpp's GGUF converter."""

    project: str
    version: str
    inside: str
    """The llama.cpp folder inside the archive's top folder."""

    @property
    def archive_stem(self) -> str:
        return f"{self.project.replace('-', '_')}-{self.version}"


LLAMA_CPP_PYTHON = ConverterSource("llama-cpp-python", VERSION, "vendor/llama.cpp")


def converter_folder(cache: Path, source: ConverterSource = LLAMA_CPP_PYTHON) -> Path:
    """The GGUF converter from ``source``'s source distribution (pip downloads it)."""
    folder = cache / f"{source.project}-{source.version}-convert"
    if all((folder / part).exists() for part in CONVERTER_PARTS):
        return folder
    downloads = cache / "sdist"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", source.project,
         f"{source.project}=={source.version}", "-d", str(downloads)],
        check=True,
    )  # fmt: skip
    archive = next(downloads.glob(f"{source.archive_stem}.tar.gz"))
    prefix = f"{source.archive_stem}/{source.inside}/"
    with tarfile.open(archive) as tar:
        members = [
            m for m in tar.getmembers()
            if m.name.startswith(prefix) and m.name[len(prefix):].split("/")[0] in CONVERTER_PARTS
        ]  # fmt: skip
        for member in members:
            member.name = member.name[len(prefix) :]
        tar.extractall(folder, members=members, filter="data")
    return folder


CONVERT = """
import sys
sys.path[:0] = [{folder!r}, {gguf!r}]
import convert_hf_to_gguf
from conversion.base import TextModel
# A tokenizer made here has no known pre-tokenizer hash; token ids are all llama.cpp sees.
TextModel.get_vocab_base_pre = lambda self, tokenizer: "default"
sys.argv = ["convert_hf_to_gguf.py", {model!r}, "--outtype", {outtype!r}, "--outfile", {out!r},
            *{extra!r}]
convert_hf_to_gguf.main()
"""


def to_gguf(
    model: Path,
    converter: Path,
    out: Path | None = None,
    outtype: str = "f32",
    extra: Sequence[str] = (),
) -> Path:
    """``model`` (an HF folder) as GGUF at ``out`` (default: beside it), weights ``outtype``;
    ``extra``: more converter options (``--target-model-dir`` for a draft head)."""
    out = out or model.parent / f"{model.name}.gguf"
    script = CONVERT.format(folder=str(converter), gguf=str(converter / "gguf-py"),
                            model=str(model), out=str(out), outtype=outtype,
                            extra=list(extra))  # fmt: skip
    subprocess.run([sys.executable, "-c", script], check=True)
    return out


class DraftLlama:
    """A ``LlamaDraftModel`` proposing the draft Llama's greedy continuation of ``k`` tokens,
    recording (drafted, accepted) per round: the next call's context shows how much of the
    last draft was kept (the target's sample differs from the draft where it was rejected)."""

    def __init__(self, draft: Any, k: int) -> None:
        self.draft = draft
        self.k = k
        self.rounds: list[tuple[int, int]] = []
        self.last: tuple[int, np.ndarray] | None = None

    def propose(self, context: list[int]) -> np.ndarray:
        tokens = []
        for token in self.draft.generate(context, temp=0.0, top_k=0, top_p=1.0, min_p=0.0):
            tokens.append(token)
            if len(tokens) == self.k:
                break
        return np.array(tokens, dtype=np.intc)

    def record(self, input_ids: np.ndarray) -> None:
        if self.last is not None:
            start, proposed = self.last
            kept = input_ids[start : start + len(proposed)]
            accepted = 0
            while accepted < len(kept) and kept[accepted] == proposed[accepted]:
                accepted += 1
            self.rounds.append((len(proposed), accepted))

    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        self.record(input_ids)
        proposed = self.propose([int(t) for t in input_ids])
        self.last = (len(input_ids), proposed)
        return proposed

    def begin(self) -> None:
        """A new run."""
        self.rounds = []
        self.last = None

    def finish(self, sequence: Sequence[int]) -> None:
        """The run stopped at ``sequence`` (prompt and tokens): its last round counts when the
        tokens after the draft decide it (a token differing from the draft, or every drafted
        token kept); a run that stopped inside the draft leaves it undecided, and uncounted."""
        if self.last is None:
            return
        start, proposed = self.last
        kept = [int(t) for t in sequence[start : start + len(proposed)]]
        accepted = 0
        while accepted < len(kept) and kept[accepted] == proposed[accepted]:
            accepted += 1
        if accepted < len(kept) or accepted == len(proposed):
            self.rounds.append((len(proposed), accepted))
        self.last = None


class TracedLookup(DraftLlama):
    """llama-cpp-python's ``LlamaPromptLookupDecoding``, traced like :class:`DraftLlama`."""

    def __init__(self, k: int) -> None:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        super().__init__(None, k)
        self.lookup = LlamaPromptLookupDecoding(max_ngram_size=2, num_pred_tokens=k)

    def propose(self, context: list[int]) -> np.ndarray:
        return np.asarray(self.lookup(np.array(context, dtype=np.intc)), dtype=np.intc)


def as_llama_draft(traced: DraftLlama) -> Any:
    """A ``LlamaDraftModel`` subclass instance delegating to ``traced``."""
    from llama_cpp.llama_speculative import LlamaDraftModel

    class Delegate(LlamaDraftModel):
        def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
            return traced(input_ids, **kwargs)

    return Delegate()


def open_llama(path: Path, draft_model: Any = None) -> Any:
    from llama_cpp import Llama

    return Llama(
        model_path=str(path), n_ctx=N_CTX, n_threads=1, seed=0, verbose=False,
        draft_model=draft_model, logits_all=draft_model is None,
    )  # fmt: skip


def llama_logits(llama: Any) -> Callable[[list[int]], torch.Tensor]:
    """llama.cpp's logits at every position of a sequence, [len, V]."""

    def logits(sequence: list[int]) -> torch.Tensor:
        llama.reset()
        llama.eval(sequence)
        return torch.tensor(np.array(llama.scores[: len(sequence)]), dtype=torch.float64)

    return logits


def llamacpp_engine(config: LlamaCppConfig, model: AuditModel, ggufs: Mapping[str, Path]) -> Engine:
    """``ggufs``: the GGUF of the target ("target") and of the drafter ("draft")."""
    traced: DraftLlama | None = None
    if config.drafter == "draft":
        traced = DraftLlama(open_llama(ggufs["draft"]), config.k)
    elif config.drafter == "lookup":
        traced = TracedLookup(config.k)
    llama = open_llama(ggufs["target"], as_llama_draft(traced) if traced else None)
    sampling = {key: config.sampling[key] for key in SAMPLING_KEYS}

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        llama.set_seed(seed)
        if traced:
            traced.begin()
        tokens: list[int] = []
        for token in llama.generate(list(prompt), **sampling):
            tokens.append(int(token))
            if len(tokens) == num_new_tokens:
                break
        if traced:
            traced.finish([*prompt, *tokens])
        rounds = tuple(traced.rounds) if traced else ()
        return Emission(tuple(tokens), rounds)

    target = load_hf(model.target)
    return Engine(
        name=config.name,
        generate=generate,
        target_probs=llamacpp_target_probs(target, config.sampling, len(config.prompt)),
        prompt=config.prompt,
        eos=None,
        greedy=config.greedy,
        max_draft=config.k or None,
    )


def installed_version() -> str:
    import llama_cpp

    return str(llama_cpp.__version__)


def gguf_of(folder: Path, converter: Path) -> Path:
    """``folder``'s float32 GGUF beside it, converted once."""
    gguf = folder.parent / f"{folder.name}.gguf"
    return gguf if gguf.exists() else to_gguf(folder, converter, gguf)


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one llama.cpp configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    converter = converter_folder(Path(sys.prefix) / "share" / "specproof")  # kept with the venv
    ggufs = {"target": gguf_of(model.target, converter)}
    if config.drafter == "draft":
        ggufs["draft"] = gguf_of(model.drafter("draft"), converter)
    gap = logit_gap(llama_logits(open_llama(ggufs["target"])), load_hf(model.target),
                    gap_sequences(model))  # fmt: skip
    version = f"(llama-cpp-python {installed_version()})"
    build = partial(llamacpp_engine, config, model, ggufs)
    audit_beside_hf("llama.cpp", version, config, build, gap, plan, out, model)
