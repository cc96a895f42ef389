"""vLLM's offline ``LLM`` as an audited engine (run in the ``audit-vllm`` venv).

One ``generate`` call carries a whole batch of requests, request i seeded with its own seed
(``SamplingParams.seed``), EOS ignored, so every run has ``num_new_tokens`` tokens. The law is
HF transformers' teacher-forced pass of the same saved target with the same sampling
parameters. vLLM does not report rounds per request; the coverage row is built from its
speculative-decoding counters (drafts, drafted tokens, accepted tokens per position), read
before and after the audit.

Nothing here imports vllm at module level: the default test suite imports this module to test
the pure parts (configuration and parameter building, counter arithmetic).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from specproof.adapters.hf import hf_target_probs, load_hf
from specproof.audit.engine.coverage import WARN
from specproof.audit.engine.rows import greedy_row
from specproof.audit.engine.subject import Emission, Engine
from specproof.audit.report import CaseResult, exact_row
from specproof.models import AuditModel, ModelPaths

ENV = {
    "HF_HUB_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache: the tiny models need a few MiB
    "TOKENIZERS_PARALLELISM": "false",
}
MAX_MODEL_LEN = 64
BATCH = 512
"""Requests per ``generate`` call."""
TOKEN_BUDGET = 16384
"""Tokens per engine step (``max_num_batched_tokens``): at least every prompt the KV cache can
hold (VLLM_CPU_KVCACHE_SPACE=1: 11,648 tokens of SmolLM2-135M) plus every drafted token, so no
prompt is prefilled in chunks. On vllm-cpu 0.32.0 a seeded request whose prefill is chunked
kills the engine (docs/findings/vllm_cpu_seeded_chunked_prefill.md); vLLM's CPU default of
4,096 chunks SmolLM2's batches."""

T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
T07 = {"do_sample": True, "temperature": 0.7, "top_k": 5, "top_p": 0.9}
MIN_P = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.25}
"""min-p alone (vLLM applies it after the temperature, as HF does: one law for both)."""
PENALTY = {
    "do_sample": True,
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "repetition_penalty": 1.3,
}
"""A repetition penalty at T = 1. vLLM's divides a seen token's positive logit by it and
multiplies a negative one, over the prompt and the output, as HF's RepetitionPenaltyLogitsProcessor
does over the whole sequence: one law for both. (Presence and frequency penalties count the
output only, which HF's processors cannot reproduce: not audited.)"""
SYNTHETIC_RATES = (0.9, 0.6, 0.3)
"""Per-position acceptance rates asked of vLLM's synthetic mode (lossy by design: drafts are
kept at these rates whatever the target says)."""
FP64_GUMBEL = (("use_fp64_gumbel", True),)
GREEDY: dict[str, Any] = {"do_sample": False}
EAGLE_LABELS = {"eagle": "EAGLE", "eagle3": "EAGLE-3", "dflash": "DFlash"}
"""Drafters that are heads saved beside the target, each in a folder named after its method."""
VERIFIER_NOTE = (
    "specproof's verification step installed (specproof.adapters.vllm_verifier.install: "
    "RejectionSampler.forward replaced; engine core and worker in this process)"
)
GREEDY_TOKENS = 16
"""Tokens per greedy run. The greedy audit draws a random prompt per run; after 5 tokens the
target's argmax continuation has rarely repeated itself, so n-gram drafts of 3 were never
accepted in full (35, 6, 0 accepted at positions 1-3 in 50 runs). By 16 tokens it has usually
fallen into a cycle that the n-gram proposer drafts exactly (vLLM's own proposer function on
HF's argmax continuations of 50 random prompts: 153, 55, 17; the audit's run: 164, 61, 26)."""


@dataclass(frozen=True)
class Speculation:
    """What vLLM drafts with: nothing, n-gram lookup, a draft model (``target``: the target itself
    as its own draft), or an EAGLE / EAGLE-3 head of :mod:`specproof.subjects.real_eagle`, proposing
    ``k`` tokens."""

    method: str  # "none", "ngram", "draft", "target", "eagle", "eagle3", "dflash"
    k: int = 0

    @property
    def label(self) -> str:
        if self.method == "none":
            return "no speculation"
        if self.method == "ngram":
            return f"ngram k={self.k}"
        if self.method == "target":
            return f"draft = target k={self.k}"
        if self.method in EAGLE_LABELS:
            return f"{EAGLE_LABELS[self.method]} k={self.k}"
        return f"draft model k={self.k}"


@dataclass(frozen=True)
class VllmConfig:
    """One audited configuration and the control it is compared with."""

    name: str
    speculation: Speculation
    sampling: Mapping[str, Any]
    sampling_label: str
    control: str = ""
    mixed: bool = False
    """Greedy companions and unseeded requests ride in every batch (see :func:`vllm_engine`)."""
    tokens: int = 5
    notes: tuple[str, ...] = field(default=())
    expand_fixed: bool = False
    """The engine runs in this process with vLLM's CPU ``expand_kernel`` replaced by
    :func:`.vllm_sampler.expand_in_place` (docs/findings/vllm_cpu_expand_kernel.md): the
    engine-level control that ties a failure to that kernel."""
    verifier: bool = False
    """The engine runs in this process with specproof's verification step installed
    (:func:`.vllm_verifier.install`) as its ``RejectionSampler.forward``."""
    refused: bool = False
    """The engine is expected to refuse these requests (vLLM's own validation or kernels, or
    specproof's step): one request is tried first; a refusal is recorded with its message,
    never audited as a pass (requests it accepts are audited)."""
    speculative_options: tuple[tuple[str, Any], ...] = ()
    """More ``speculative_config`` fields (vLLM's synthetic acceptance mode)."""
    engine_options: tuple[tuple[str, Any], ...] = ()
    """More ``vllm.LLM`` arguments (``use_fp64_gumbel``)."""
    lossy_by_design: bool = False
    """A must-fail control: the engine is asked for a lossy mode, so PASS would be the finding."""

    @property
    def engine_key(self) -> tuple[Any, ...]:
        """Configurations with one key can share one started engine."""
        return (
            self.speculation, self.expand_fixed, self.verifier, self.speculative_options,
            self.engine_options,
        )  # fmt: skip

    def audit_prompt(self, model: AuditModel) -> tuple[int, ...]:
        """The prompt of its sampled runs: the model's penalty prompt under a penalty."""
        if self.sampling.get("repetition_penalty") and model.penalty_prompt:
            return model.penalty_prompt
        return model.prompt


def speculative_config(
    speculation: Speculation, paths: ModelPaths, options: tuple[tuple[str, Any], ...] = ()
) -> dict[str, Any] | None:
    """vLLM's ``speculative_config`` for ``speculation`` (None: speculation off), with the
    extra fields ``options``."""
    if speculation.method == "none":
        return None
    if options:
        return {**(speculative_config(speculation, paths) or {}), **dict(options)}
    if speculation.method == "ngram":
        return {
            "method": "ngram",
            "num_speculative_tokens": speculation.k,
            "prompt_lookup_min": 1,
            "prompt_lookup_max": 3,
        }
    if speculation.method in EAGLE_LABELS:
        return {
            "method": speculation.method,
            "model": str(eagle_path(paths, speculation.method)),
            "num_speculative_tokens": speculation.k,
        }
    model = paths.draft if speculation.method == "draft" else paths.target
    return {"model": str(model), "num_speculative_tokens": speculation.k}


def eagle_path(paths: ModelPaths, method: str) -> Path:
    """Where the model's ``method`` head is saved: beside the target (``AuditModel.head``)."""
    return paths.target.parent / method


def sampling_kwargs(sampling: Mapping[str, Any]) -> dict[str, Any]:
    """vLLM ``SamplingParams`` fields for HF generate kwargs (the law the audit tests)."""
    known = {"do_sample", "temperature", "top_k", "top_p", "min_p", "repetition_penalty"}
    unsupported = set(sampling) - known
    if unsupported:
        raise ValueError(f"no vLLM sampling field for {sorted(unsupported)}")
    penalty = (
        {"repetition_penalty": float(sampling["repetition_penalty"])}
        if "repetition_penalty" in sampling
        else {}
    )
    if not sampling.get("do_sample"):
        return {"temperature": 0.0, **penalty}
    return {
        "temperature": float(sampling.get("temperature", 1.0)),
        "top_k": int(sampling.get("top_k") or 0) or -1,
        "top_p": float(sampling.get("top_p", 1.0)),
        "min_p": float(sampling.get("min_p", 0.0)),
        **penalty,
    }


def configurations(model: AuditModel, verifier: bool = False) -> list[VllmConfig]:
    """Every audited configuration, each control first (EAGLE heads where the model has
    them); ``verifier``: the speculative ones again with specproof's verification step
    installed (their controls: vLLM's, speculation off, where the step is never called)."""
    if verifier:
        return [
            replace(c, verifier=True, notes=(*c.notes, VERIFIER_NOTE),
                    refused=c.refused or step_refuses(c))
            for c in configurations(model)
            if c.speculation.method != "none" and not c.expand_fixed
        ]  # fmt: skip
    return [c for c in every_configuration() if available(c.speculation, model)]


def step_refuses(config: VllmConfig) -> bool:
    """specproof's step refuses what the configuration asks (penalties, synthetic mode)."""
    return bool(config.sampling.get("repetition_penalty")) or bool(config.speculative_options)


def available(speculation: Speculation, model: AuditModel) -> bool:
    """The model offers what ``speculation`` drafts with."""
    if speculation.method in EAGLE_LABELS:
        return speculation.method in model.heads
    return speculation.method != "draft" or model.draft is not None


def every_configuration() -> list[VllmConfig]:
    """The configurations of a model that offers every drafter."""
    none = Speculation("none")
    out = [VllmConfig("T=1 control", none, T1, "T = 1")]
    for speculation in (
        Speculation("ngram", 3),
        Speculation("draft", 1),
        Speculation("draft", 3),
        Speculation("draft", 4),
        Speculation("target", 3),
        Speculation("eagle", 3),
        Speculation("eagle3", 3),
    ):
        out.append(VllmConfig(f"T=1 {speculation.label}", speculation, T1, "T = 1", "T=1 control"))
    out.append(VllmConfig("T=1 DFlash k=3", Speculation("dflash", 3), T1, "T = 1", "T=1 control"))
    for speculation in (
        Speculation("ngram", 3),
        Speculation("draft", 3),
        Speculation("target", 3),
        Speculation("eagle", 3),
        Speculation("dflash", 3),
    ):
        name = f"T=1 {speculation.label}, CPU expand kernel replaced"
        out.append(VllmConfig(name, speculation, T1, "T = 1", "T=1 control", expand_fixed=True))
    draft3 = Speculation("draft", 3)
    out.append(
        VllmConfig(
            "T=1 draft model k=3, CPU expand kernel replaced, fp64 Gumbel", draft3, T1, "T = 1",
            "T=1 control", expand_fixed=True, engine_options=FP64_GUMBEL,
        )
    )  # fmt: skip
    synthetic = (
        ("rejection_sample_method", "synthetic"), ("synthetic_acceptance_rates", SYNTHETIC_RATES),
    )  # fmt: skip
    out.append(
        VllmConfig(
            "T=1 draft model k=3, synthetic acceptance (lossy)", draft3, T1, "T = 1",
            "T=1 control", refused=True, speculative_options=synthetic, lossy_by_design=True,
        )
    )  # fmt: skip
    label = "T = 0.7, top-k 5, top-p 0.9"
    out.append(VllmConfig("T=0.7 control", none, T07, label))
    for speculation in (Speculation("ngram", 3), Speculation("draft", 3)):
        name = f"T=0.7 {speculation.label}"
        out.append(VllmConfig(name, speculation, T07, label, "T=0.7 control"))
    out.append(
        VllmConfig(
            "T=0.7 draft model k=3, CPU expand kernel replaced", draft3, T07, label,
            "T=0.7 control", expand_fixed=True,
        )
    )  # fmt: skip
    out.append(VllmConfig("greedy control", none, GREEDY, "greedy", tokens=GREEDY_TOKENS))
    for speculation in (Speculation("ngram", 3), Speculation("draft", 3)):
        name = f"greedy {speculation.label}"
        out.append(
            VllmConfig(name, speculation, GREEDY, "greedy", "greedy control", tokens=GREEDY_TOKENS)
        )
    label = "T = 0.7, min-p 0.25"
    out.append(VllmConfig("T=0.7 min-p control", none, MIN_P, label))
    out.append(
        VllmConfig(
            "T=0.7 min-p draft model k=3", Speculation("draft", 3), MIN_P, label,
            "T=0.7 min-p control", refused=True,
        )
    )  # fmt: skip
    label = "T = 1, repetition penalty 1.3"
    out.append(VllmConfig("T=1 repetition penalty control", none, PENALTY, label))
    out.append(
        VllmConfig(
            "T=1 repetition penalty draft model k=3", draft3, PENALTY, label,
            "T=1 repetition penalty control",
        )
    )  # fmt: skip
    out.append(
        VllmConfig(
            "T=1 repetition penalty draft model k=3, CPU expand kernel replaced", draft3, PENALTY,
            label, "T=1 repetition penalty control", expand_fixed=True,
        )
    )  # fmt: skip
    mixed = "T = 1 seeded and unseeded, with greedy requests in the same batch"
    out.append(VllmConfig("mixed control", none, T1, mixed, mixed=True))
    out.append(
        VllmConfig(
            "mixed draft model k=3", Speculation("draft", 3), T1, mixed, "mixed control", True
        )
    )
    return out


def prompt_settings(config: VllmConfig, prompt: Sequence[int]) -> dict[str, Any]:
    """What the results file says about the prompts a configuration's runs used."""
    from specproof.audit.engine.audit import GREEDY_RUNS

    if not config.sampling.get("do_sample"):
        return {"prompt": f"{GREEDY_RUNS} random prompts of {len(prompt)} tokens, one per run"}
    out: dict[str, Any] = {"prompt": list(prompt)}
    if config.mixed:
        out["greedy_prompts"] = f"random prompts of {len(prompt)} tokens, one per greedy request"
    return out


def by_name(name: str, model: AuditModel, verifier: bool = False) -> VllmConfig:
    for config in configurations(model, verifier):
        if config.name == name:
            return config
    known = ", ".join(c.name for c in configurations(model, verifier))
    raise KeyError(f"no vLLM configuration {name!r}; known: {known}")


# Counters of vLLM's speculative decoding, cumulative over the engine's life.
DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"


@dataclass(frozen=True)
class SpecCounters:
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: tuple[int, ...] = ()

    def __sub__(self, other: SpecCounters) -> SpecCounters:
        width = max(len(self.per_position), len(other.per_position))
        mine = (*self.per_position, *[0] * (width - len(self.per_position)))
        theirs = (*other.per_position, *[0] * (width - len(other.per_position)))
        return SpecCounters(
            self.drafts - other.drafts,
            self.draft_tokens - other.draft_tokens,
            self.accepted - other.accepted,
            tuple(a - b for a, b in zip(mine, theirs, strict=True)),
        )


def counters_from(metrics: Sequence[Any]) -> SpecCounters:
    """The speculative-decoding counters in ``LLM.get_metrics()`` (zeros when absent)."""
    values: dict[str, Any] = {}
    for metric in metrics:
        if metric.name in (DRAFTS, DRAFT_TOKENS, ACCEPTED):
            values[metric.name] = values.get(metric.name, 0) + int(metric.value)
        elif metric.name == PER_POSITION:
            values[metric.name] = tuple(int(v) for v in metric.values)
    return SpecCounters(
        values.get(DRAFTS, 0),
        values.get(DRAFT_TOKENS, 0),
        values.get(ACCEPTED, 0),
        values.get(PER_POSITION, ()),
    )


def coverage_from_counters(case: str, counters: SpecCounters, k: int, n: int) -> CaseResult:
    """The coverage row from the counters: drafts rejected at the first position, after an
    accepted token, and accepted in full (position k accepted) must all have occurred."""
    per = counters.per_position
    summary = (
        f"{counters.drafts} drafts, {counters.draft_tokens} drafted tokens, "
        f"{counters.accepted} accepted; accepted per position {list(per)}"
    )
    warnings = []
    if counters.drafts == 0:
        warnings.append("nothing was drafted")
    else:
        full = per[k - 1] if len(per) >= k else 0
        if counters.accepted >= counters.draft_tokens:
            warnings.append("no drafted token was rejected (the correction path never ran)")
        if per and per[0] == counters.drafts:
            warnings.append("no draft was rejected at its first position")
        if k >= 2 and full == 0:
            warnings.append(f"no draft of {k} tokens was accepted in full")
        if k >= 2 and per and per[0] == full:
            warnings.append("no draft was rejected after an accepted token")
    if not warnings:
        return exact_row(case, "coverage", n, "pass", summary)
    return exact_row(case, "coverage", n, WARN, summary, f"{case}/coverage: " + "; ".join(warnings))


def companion_prompts(
    count: int, length: int, seed: int, model: AuditModel
) -> list[tuple[int, ...]]:
    """Random prompts for the greedy requests of a mixed batch (one prompt, one output)."""
    rng = np.random.default_rng([seed, 2])
    tokens = [t for t in range(model.vocab) if t not in model.eos]
    return [tuple(int(t) for t in rng.choice(tokens, length)) for _ in range(count)]


@dataclass
class VllmRun:
    """A started ``vllm.LLM`` and what its runs left behind for rows outside the audit."""

    llm: Any
    config: VllmConfig
    version: str
    greedy_companions: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)

    def counters(self) -> SpecCounters:
        return counters_from(self.llm.get_metrics())


def start(config: VllmConfig, paths: ModelPaths) -> VllmRun:
    """Start vLLM on the saved target (float32, the same weights HF reads)."""
    os.environ.update({k: v for k, v in ENV.items() if k not in os.environ})
    os.environ.pop("TRITON_INTERPRET", None)  # vLLM must pick its CPU kernels, not Triton's
    extra: dict[str, Any] = {}
    if config.verifier:
        # In this process (engine core and worker), so the step is the worker's.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from specproof.adapters.vllm_verifier import install

        install()
        extra["distributed_executor_backend"] = "uni"
    if config.expand_fixed:
        # In this process (engine core and worker), so the replacement is what the worker
        # registers when it starts.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from vllm.utils import cpu_triton_utils

        from specproof.adapters.vllm_sampler import expand_in_place

        cpu_triton_utils._expand_kernel_impl = expand_in_place
        extra["distributed_executor_backend"] = "uni"
    import vllm

    llm = vllm.LLM(
        model=str(paths.target),
        dtype="float32",
        max_model_len=MAX_MODEL_LEN,
        seed=0,
        speculative_config=speculative_config(
            config.speculation, paths, config.speculative_options
        ),
        generation_config="vllm",  # the saved generation_config.json sets no sampling default
        disable_log_stats=False,  # the speculative-decoding counters of the coverage row
        enable_prefix_caching=False,
        enforce_eager=True,  # skips the model's compile warm-up (minutes here); same sampler
        max_num_batched_tokens=TOKEN_BUDGET,
        **dict(config.engine_options),
        **extra,
    )
    return VllmRun(llm, config, vllm.__version__)


def vllm_engine(run: VllmRun, model: AuditModel, audit_prompt: Sequence[int]) -> Engine:
    """The audited engine: batches of requests through ``run.llm.generate``. A mixed batch
    leaves every third request unseeded and adds one greedy request (random prompt) per two
    audited ones, whose outputs are kept for :func:`greedy_companion_row`."""
    from vllm import SamplingParams

    config = run.config
    fields = sampling_kwargs(config.sampling)
    greedy = not config.sampling.get("do_sample")

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        common = {"max_tokens": num_new_tokens, "ignore_eos": True, "detokenize": False}
        requests: list[tuple[tuple[int, ...], Any]] = []
        for index, request_prompt in enumerate(prompts):
            seeded = not (config.mixed and index % 3 == 2)
            request_seed = seed * 1_000_003 + index if seeded else None
            requests.append((request_prompt, SamplingParams(**fields, seed=request_seed, **common)))
        companions = (
            companion_prompts(len(prompts) // 2, len(audit_prompt), seed, model)
            if config.mixed
            else []
        )
        greedy_params = SamplingParams(temperature=0.0, **common)
        for index, companion in enumerate(companions):  # interleaved with the audited requests
            requests.insert(3 * index + 1, (companion, greedy_params))
        outputs = run.llm.generate(
            [{"prompt_token_ids": list(p)} for p, _ in requests],
            [params for _, params in requests],
            use_tqdm=False,
        )
        emitted = []
        for (request_prompt, params), output in zip(requests, outputs, strict=True):
            tokens = tuple(int(t) for t in output.outputs[0].token_ids)
            if params is greedy_params:
                run.greedy_companions.append((request_prompt, tokens))
            else:
                emitted.append(Emission(tokens))
        return emitted

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        return generate_many([tuple(prompt)], num_new_tokens, seed)[0]

    return Engine(
        name=config.name,
        generate=generate,
        target_probs=hf_target_probs(load_hf(model.target), config.sampling),
        prompt=tuple(audit_prompt),
        eos=None,
        greedy=greedy,
        max_draft=config.speculation.k or None,
        generate_many=generate_many,
        batch=BATCH,
    )


def greedy_companion_row(
    engine: Engine, companions: list[tuple[tuple[int, ...], tuple[int, ...]]]
) -> CaseResult:
    """The greedy row of a mixed batch's greedy requests, against HF's argmax (the mixed
    configurations sample at T = 1 with no cut, whose law has the raw logits' argmax). The
    prompts differ but share one length, so the teacher-forced pass is batched."""
    import torch

    from specproof.audit.engine.laws import CHUNK, probability_rows

    emitted = [Emission(tokens) for _, tokens in companions]
    if not companions:
        return exact_row(f"{engine.name} (greedy requests)", "greedy", 0, WARN, "no request")
    width = max(len(p) + len(t) for p, t in companions)
    if any(len(p) + len(t) != width for p, t in companions):
        raise ValueError("greedy companions must share one prompt and output length")
    start = len(companions[0][0]) - 1
    rows = []
    for first in range(0, len(companions), CHUNK):
        batch = torch.tensor([[*p, *t] for p, t in companions[first : first + CHUNK]])
        rows.append(probability_rows(engine.target_probs(batch)[:, start:]))
    return greedy_row(f"{engine.name} (greedy requests)", emitted, np.concatenate(rows))
