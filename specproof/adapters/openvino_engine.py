"""OpenVINO GenAI as an audited engine (run in the ``audit-openvino`` venv, CPU).

The tiny target and draft of :mod:`specproof.subjects.real_models` are converted to float16 GGUF
with the converter :mod:`.llamacpp_engine` uses (OpenVINO GenAI refuses float32 GGUF); OpenVINO
GenAI reads each GGUF once with ``enable_save_ov_model``, which writes the model and its
tokenizer/detokenizer as OpenVINO IR beside it, and the audit loads those IR folders (a draft model
must be an IR folder). The audit hands the engine token ids and never tokenizes text.

One call is ``ContinuousBatchingPipeline.generate`` on a batch of prompts, each request with
its own ``GenerationConfig`` (``rng_seed`` per request, ``ignore_eos``, ``max_new_tokens``),
added with ``add_request`` and stepped to the end as ``generate`` does; the pipeline keeps one
random generator per request, seeded by its ``rng_seed``. Speculation
is the pipeline's own: a draft model (``draft_model`` property, ``num_assistant_tokens``) or
prompt lookup (``prompt_lookup`` property, ``num_assistant_tokens`` and ``max_ngram_size``).
Each request's new tokens are read after every step (one verification round), and their
counts kept as a note (the engine reports no per-request draft lengths).

Every model is compiled at f32 compute and KV-cache precision (:data:`PRECISION`).

The law: HF transformers on the same float16-rounded weights, through OpenVINO GenAI's chain
(``LogitProcessor``): the repetition, presence and frequency penalties (:func:`penalised`),
top-k on the logits, softmax at the temperature, min-p against the most probable token, then
top-p keeping the most probable tokens up to and including the first whose cumulative
probability exceeds ``top_p``, renormalised at the draw. ``logprobs`` changes what the
sampler stores, not the law.
"""

from __future__ import annotations

import hashlib
import itertools
import json
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
    gap_sequences,
    logit_gap,
    prompt_shown,
)
from specproof.adapters.configurations import (
    Setting,
    SpeculativeConfig,
    batched_engine,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.models import AuditModel, ModelPaths

VERSION = "2026.4.1.0"
K = 3
NGRAM = 2
NO_PENALTY = {"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
      **NO_PENALTY, "logprobs": 0}  # fmt: skip
TRUNCATED = {**T1, "top_k": 5, "top_p": 0.9, "min_p": 0.05}
GREEDY = {**T1, "do_sample": False}
PENALTIES = {"repetition_penalty": 1.3, "presence_penalty": 0.5, "frequency_penalty": 0.5}
"""All three penalties the pipeline offers, in one request (its chain applies them in this
order, each to the logit the previous one left)."""
PENALISED = {**T1, **PENALTIES}
GREEDY_PENALISED = {**GREEDY, **PENALTIES}
TRUNCATED_LOGPROBS = {**TRUNCATED, "logprobs": 1}
"""With ``logprobs`` the sampler stores each token's raw log-probability (before penalties and
filters) where it otherwise stores the processed one, and the draft-model test reads it."""
PENALTY_LABEL = "repetition 1.3, presence 0.5, frequency 0.5"
GREEDY_TOKENS = 8
BATCH = 512
"""Requests per ``generate`` call (the audit's default batch)."""
PRECISION = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
"""The CPU plugin's compute and KV-cache precision for every model the audit compiles. Its
defaults follow the CPU (bf16 compute where it has avx512_bf16, a u8 KV cache), which on
SmolLM2-135M put OpenVINO's logits 1.39 from HF's (row TV 0.075), too far for a law test; at
f32 the gap is 4.9e-3. The sampler, the code under audit, is the same at any precision."""


def settings(model: AuditModel) -> list[Setting]:
    """At T = 1 and with the penalties the model's lookup prompt, after which prompt lookup's
    drafts are accepted in full now and then, and whose answer repeats the prompt's tokens,
    which the penalties act on; ``logprobs`` under truncation, where the raw and the processed
    log-probabilities differ."""
    return [
        ("T=1", T1, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "top-k 5, min-p 0.05, top-p 0.9", model.prompt),
        ("greedy", GREEDY, "greedy (do_sample off)", model.prompt),
        ("penalties", PENALISED, f"T = 1, {PENALTY_LABEL}", model.lookup),
        ("greedy penalties", GREEDY_PENALISED, f"greedy, {PENALTY_LABEL}", model.lookup),
        ("truncated logprobs", TRUNCATED_LOGPROBS, "top-k 5, min-p 0.05, top-p 0.9, logprobs 1",
         model.prompt),
    ]  # fmt: skip


def configurations(model: AuditModel) -> list[SpeculativeConfig]:
    """Every audited configuration, each control first (the same sampling and prompt,
    speculation off): the draft model and prompt lookup, both at k = 3, in every setting; at
    T = 1 also the target drafting for itself (a second copy of its weights: every draft then
    has the target's law, so a correct verifier accepts every draft and the law cannot move)."""
    return build_configurations(
        settings(model), ("draft", "lookup"), k=K, self_drafting="T=1",
        greedy_tokens=GREEDY_TOKENS,
    )  # fmt: skip


def by_name(name: str, model: AuditModel) -> SpeculativeConfig:
    return configuration_named(name, configurations(model), "OpenVINO GenAI")


def generation_kwargs(config: SpeculativeConfig, num_new_tokens: int, seed: int) -> dict[str, Any]:
    """One request's ``GenerationConfig`` fields: EOS an ordinary token, the sampling of
    ``config`` (none but greedy when sampling is off), the speculation's draft length."""
    kwargs: dict[str, Any] = {
        "max_new_tokens": num_new_tokens,
        "ignore_eos": True,
        "do_sample": bool(config.sampling["do_sample"]),
        "rng_seed": seed,
    }
    if kwargs["do_sample"]:
        kwargs.update(
            temperature=float(config.sampling["temperature"]),
            top_k=int(config.sampling["top_k"]),
            top_p=float(config.sampling["top_p"]),
            min_p=float(config.sampling["min_p"]),
        )
    kwargs.update({name: float(config.sampling[name]) for name, off in NO_PENALTY.items()
                   if float(config.sampling[name]) != off})  # fmt: skip
    if int(config.sampling["logprobs"]):
        kwargs["logprobs"] = int(config.sampling["logprobs"])
    if config.drafter != "none":
        kwargs["num_assistant_tokens"] = config.k
    if config.drafter == "lookup":
        kwargs["max_ngram_size"] = NGRAM
    return kwargs


def request_seeds(seed: int, count: int) -> list[int]:
    """Distinct 32-bit ``rng_seed``s for the requests of one call (the call's seed and the
    request's index through a SeedSequence: calls with different seeds share none)."""
    state = np.random.SeedSequence(seed).generate_state(count, dtype=np.uint32)
    return [int(s) for s in state]


def chain_probs(logits: torch.Tensor, sampling: Mapping[str, Any]) -> torch.Tensor:
    """One row through OpenVINO GenAI's chain: top-k, softmax at the temperature, min-p,
    top-p (kept up to the first token whose cumulative probability exceeds top_p, the sums
    taken without renormalising after min-p), renormalised; greedy: the softmax."""
    scores = logits.to(torch.float64)
    if not sampling["do_sample"]:
        return torch.softmax(scores, -1)
    top_k = int(sampling["top_k"])
    if 0 < top_k < scores.numel():
        kth = scores.topk(top_k).values[-1]
        scores = torch.where(scores < kth, -torch.inf, scores)
    probs = torch.softmax(scores / float(sampling["temperature"]), -1)
    min_p = float(sampling["min_p"])
    if min_p > 0.0:
        probs = torch.where(probs >= min_p * probs.max(), probs, 0.0)
    top_p = float(sampling["top_p"])
    if top_p != 1.0:
        ordered, index = probs.sort(descending=True)
        before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
        keep = torch.zeros_like(probs, dtype=torch.bool)
        keep[index] = before <= top_p  # the token crossing top_p is kept
        probs = torch.where(keep, probs, 0.0)
    return probs / probs.sum()


def penalised(
    logits: torch.Tensor, prompt: Sequence[int], generated: Sequence[int],
    sampling: Mapping[str, Any],
) -> torch.Tensor:  # fmt: skip
    """OpenVINO GenAI's penalties on one row, in its order: the repetition penalty on every
    distinct token of the prompt and of the generated tokens (a logit >= 0 divided by it, a
    negative one multiplied), then the presence penalty on every distinct generated token and
    the frequency penalty times its count (subtracted from a logit >= 0, added to a negative
    one: both move the logit towards 0)."""
    repetition = float(sampling["repetition_penalty"])
    presence = float(sampling["presence_penalty"])
    frequency = float(sampling["frequency_penalty"])
    scores = logits.to(torch.float64).clone()
    counts = Counter(int(t) for t in generated)
    if repetition != 1.0:
        seen = torch.tensor(sorted({*(int(t) for t in prompt), *counts}), dtype=torch.long)
        if len(seen):
            chosen = scores[seen]
            scores[seen] = torch.where(chosen >= 0, chosen / repetition, chosen * repetition)
    if counts and (presence or frequency):
        ids = torch.tensor(sorted(counts), dtype=torch.long)
        for shift in (
            torch.full((len(ids),), presence, dtype=torch.float64),
            frequency * torch.tensor([counts[int(t)] for t in ids], dtype=torch.float64),
        ):
            chosen = scores[ids]
            scores[ids] = torch.where(chosen >= 0, chosen - shift, chosen + shift)
    return scores


def has_penalties(sampling: Mapping[str, Any]) -> bool:
    return any(float(sampling[name]) != off for name, off in NO_PENALTY.items())


def shared_prefix_logits(target: Any, sequences: torch.Tensor) -> tuple[torch.Tensor, int]:
    """([B, L, V] float32 logits of HF's ``target`` on ``sequences``, C): the first C tokens,
    which every sequence shares (the audit's runs share their prompt), go through the model
    once and their KV cache serves every sequence's remaining tokens. Rows before C are the
    same for every sequence. At a real model's size this is most of the law's cost saved."""
    rows = sequences.shape[0]
    same = (sequences == sequences[:1]).all(dim=0)
    shared = int(same.long().cumprod(0).sum())
    shared = min(shared, sequences.shape[1] - 1)  # at least one token per sequence of its own
    with torch.no_grad():
        if shared == 0:
            return target(sequences).logits.to(torch.float32), 0
        head = target(sequences[:1, :shared], use_cache=True)
        cache = head.past_key_values
        cache.batch_repeat_interleave(rows)
        tail = target(sequences[:, shared:], past_key_values=cache, use_cache=True).logits
    logits = torch.cat([head.logits.expand(rows, -1, -1), tail], dim=1)
    return logits.to(torch.float32), shared


def openvino_target_probs(
    target: Any, sampling: Mapping[str, Any], prompt_length: int = 0
) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through OpenVINO GenAI's chain; with penalties, each
    row penalised by the sequence's first ``prompt_length`` tokens (the prompt) and the tokens
    after them up to the row's position (the generated ones). A row before the shared prefix's
    end is the same in every sequence (same tokens, same context) and is worked once."""
    chain = partial(chain_probs, sampling=sampling)
    penalties = has_penalties(sampling)

    def row_law(row: torch.Tensor, sequence: list[int], t: int) -> torch.Tensor:
        if penalties:
            row = penalised(row, sequence[:prompt_length], sequence[prompt_length : t + 1],
                            sampling)  # fmt: skip
        return chain(row).to(torch.float32)

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        logits, shared = shared_prefix_logits(target, sequences)
        out = torch.empty_like(logits)
        first = sequences[0].tolist()
        for t in range(shared):
            out[:, t] = row_law(logits[0, t], first, t)
        for b in range(sequences.shape[0]):
            sequence = sequences[b].tolist()
            for t in range(shared, sequences.shape[1]):
                out[b, t] = row_law(logits[b, t], sequence, t)
        return out

    return target_probs


def load_f16_target(path: Path) -> Any:
    """The saved target as HF runs it, every weight matrix rounded to float16 as the GGUF
    holds it (vectors stay float32, as the converter writes them)."""
    target = load_hf(path)
    with torch.no_grad():
        for parameter in target.parameters():
            if parameter.dim() > 1:
                parameter.copy_(parameter.half().float())
    return target


def to_ir(model: Path, converter: Path) -> Path:
    """``model`` (an HF folder) as float16 GGUF, then as the IR folder OpenVINO GenAI writes
    from it: ``<model>-openvino/`` with openvino_model.xml and the tokenizer's IR."""
    import openvino_genai

    from specproof.adapters.llamacpp_engine import to_gguf

    folder = model.parent / f"{model.name}-openvino"
    if (folder / "openvino_model.xml").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    gguf = to_gguf(model, converter, folder / "model.gguf", "f16")
    openvino_genai.LLMPipeline(str(gguf), "CPU", enable_save_ov_model=True)
    return folder


def ir_folders(model: AuditModel) -> ModelPaths:
    from specproof.adapters.llamacpp_engine import converter_folder

    converter = converter_folder(Path(sys.prefix) / "share" / "specproof")  # kept with the venv
    paths = model.paths
    return ModelPaths(*(to_ir(folder, converter) for folder in (paths.target, paths.draft)))


def ir_logits(folder: Path, stepwise: bool) -> Callable[[list[int]], torch.Tensor]:
    """OpenVINO's logits at every position of a sequence, [len, V], from the IR compiled with
    the CPU plugin's defaults: in one pass, or token by token through its KV cache (stored in
    the plugin's default KV-cache precision)."""
    import openvino as ov

    core = ov.Core()
    request = core.compile_model(core.read_model(folder / "openvino_model.xml"), "CPU", PRECISION)
    infer = request.create_infer_request()

    def feed(tokens: list[int], start: int) -> np.ndarray:
        length = start + len(tokens)
        infer.infer({
            "input_ids": np.array([tokens], dtype=np.int64),
            "attention_mask": np.ones((1, length), dtype=np.int64),
            "position_ids": np.arange(start, length, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, dtype=np.int32),
        })  # fmt: skip
        return np.array(infer.get_tensor("logits").data[0])

    def logits(sequence: list[int]) -> torch.Tensor:
        infer.reset_state()
        if not stepwise:
            rows = feed(sequence, 0)
        else:
            rows = np.stack([feed([token], t)[-1] for t, token in enumerate(sequence)])
        return torch.tensor(rows, dtype=torch.float64)

    return logits


def engine_gap(irs: ModelPaths, target: Any, model: AuditModel) -> tuple[float, float]:
    """The larger of the one-pass and the token-by-token gaps to HF, measured once per IR,
    engine version, precision and set of sequences and kept beside the IR (token by token it
    takes minutes at a real model's size, and every configuration needs it)."""
    sequences = gap_sequences(model)
    key = json.dumps([installed_version(), PRECISION, sequences])
    kept = irs.target / f"gap-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
    if kept.exists():
        logit, tv = json.loads(kept.read_text())
        return float(logit), float(tv)
    gaps = [logit_gap(ir_logits(irs.target, stepwise), target, sequences)
            for stepwise in (False, True)]  # fmt: skip
    worst = max(g[0] for g in gaps), max(g[1] for g in gaps)
    kept.write_text(json.dumps(worst))
    return worst


@dataclass
class StepTrace:
    """How many tokens each request received per engine step, over the whole audit: a step is
    one verification round, so a step handing a request e > 1 tokens kept e - 1 drafted ones,
    and k + 1 tokens mean a whole draft of k kept (the engine says nothing of what it drafted
    per request, so the rounds' draft lengths stay unknown)."""

    emitted: Counter[int] = field(default_factory=Counter)
    requests: int = 0

    def note(self, k: int) -> str:
        histogram = " ".join(f"{e}:{self.emitted[e]}" for e in sorted(self.emitted))
        full = self.emitted[k + 1]
        return (
            f"tokens per request per engine step over {self.requests} requests: {histogram} "
            f"({full} steps kept a whole draft of {k}; coverage of rejections is not traced)"
        )


def start_pipeline(config: SpeculativeConfig, irs: ModelPaths) -> Any:
    import openvino_genai

    scheduler = openvino_genai.SchedulerConfig()
    scheduler.cache_size = 1  # GB of KV cache: ample for the tiny models
    properties: dict[str, Any] = {}
    if config.drafter in ("draft", "target"):
        draft = irs.draft if config.drafter == "draft" else irs.target
        properties["draft_model"] = openvino_genai.draft_model(str(draft), "CPU", **PRECISION)
    elif config.drafter == "lookup":
        properties["prompt_lookup"] = True
    properties.update(PRECISION)
    return openvino_genai.ContinuousBatchingPipeline(str(irs.target), scheduler, "CPU", properties)


def openvino_engine(
    config: SpeculativeConfig, irs: ModelPaths, target: Any, trace: StepTrace
) -> Engine:
    """The engine: requests added one by one (``add_request``) and the pipeline stepped until
    every one is done, as ``generate`` does, reading each request's new tokens per step."""
    import openvino as ov
    import openvino_genai

    pipeline = start_pipeline(config, irs)
    request_ids = itertools.count()

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        handles = []
        for prompt, request_seed in zip(prompts, request_seeds(seed, len(prompts)), strict=True):
            request = openvino_genai.GenerationConfig(
                **generation_kwargs(config, num_new_tokens, request_seed)
            )
            ids = ov.Tensor(np.array([prompt], dtype=np.int64))
            handles.append(pipeline.add_request(next(request_ids), ids, request))
        tokens: list[list[int]] = [[] for _ in prompts]
        while pipeline.has_non_finished_requests():
            pipeline.step()
            for index, handle in enumerate(handles):
                if handle.can_read():
                    (output,) = handle.read().values()
                    tokens[index] += [int(t) for t in output.generated_ids]
                    trace.emitted[len(output.generated_ids)] += 1
        trace.requests += len(prompts)
        return [Emission(tuple(run)) for run in tokens]

    law = openvino_target_probs(target, config.sampling, len(config.prompt))
    return batched_engine(config, law, generate_many, BATCH)


def installed_version() -> str:
    from importlib.metadata import version

    return f"{version('openvino-genai')} (openvino {version('openvino')}, CPU)"


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one OpenVINO GenAI configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    irs = ir_folders(model)
    target = load_f16_target(model.target)
    gap = engine_gap(irs, target, model)
    prompt = prompt_shown(config.prompt, config.greedy)
    trace = StepTrace()
    build = partial(openvino_engine, config, irs, target, trace)
    audit_beside_hf("OpenVINO GenAI", installed_version(), config, build, gap, plan, out, model,
                    prompt,
                    notes=lambda: [trace.note(config.k)] if config.drafter != "none" else [],
                    coverage_text_of=lambda: trace.note(config.k))  # fmt: skip
