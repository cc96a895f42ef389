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

The law: HF transformers on the same float16-rounded weights, through OpenVINO GenAI's chain
(``LogitProcessor``): top-k on the logits, softmax at the temperature, min-p against the most
probable token, then top-p keeping the most probable tokens up to and including the first
whose cumulative probability exceeds ``top_p``, renormalised at the draw.
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from collections.abc import Callable, Mapping
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
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
TRUNCATED = {**T1, "top_k": 5, "top_p": 0.9, "min_p": 0.05}
GREEDY = {**T1, "do_sample": False}
GREEDY_TOKENS = 8
BATCH = 512
"""Requests per ``generate`` call (the audit's default batch)."""


def settings(model: AuditModel) -> list[Setting]:
    """At T = 1 the model's lookup prompt, after which prompt lookup's drafts are accepted in
    full now and then."""
    return [
        ("T=1", T1, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "top-k 5, min-p 0.05, top-p 0.9", model.prompt),
        ("greedy", GREEDY, "greedy (do_sample off)", model.prompt),
    ]


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


def openvino_target_probs(target: Any, sampling: Mapping[str, Any]) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through OpenVINO GenAI's chain."""
    return chained_target_probs(target, partial(chain_probs, sampling=sampling))


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
    request = core.compile_model(core.read_model(folder / "openvino_model.xml"), "CPU")
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
    """The larger of the one-pass and the token-by-token gaps to HF."""
    gaps = [logit_gap(ir_logits(irs.target, stepwise), target, gap_sequences(model))
            for stepwise in (False, True)]  # fmt: skip
    return max(g[0] for g in gaps), max(g[1] for g in gaps)


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
        properties["draft_model"] = openvino_genai.draft_model(str(draft), "CPU")
    elif config.drafter == "lookup":
        properties["prompt_lookup"] = True
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

    return batched_engine(
        config, openvino_target_probs(target, config.sampling), generate_many, BATCH
    )


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
