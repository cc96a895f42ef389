"""mlx-lm as an audited engine (run in the ``audit-mlx`` venv, mlx's CPU backend).

mlx-lm loads the audited model's target and draft straight from their HF folders
(``mlx_lm.utils.load_model``; float32 safetensors, no conversion). One run is
``mx.random.seed(seed)`` then ``generate_step`` (the control) or ``speculative_generate_step``
(a draft model proposing ``k`` tokens), stopped after ``num_new_tokens`` tokens; EOS is an
ordinary token to both. mlx-lm's speculative decoding is sample-and-match: the draft model
samples its ``k`` tokens with the request's sampler, the target samples every drafted position
with it, and drafts are kept while the two agree. ``speculative_generate_step`` yields each
token with a flag saying whether the draft supplied it; the rounds are read from those flags.
mlx-lm (0.32.2) offers no other drafter (no prompt lookup, no n-gram).

The law: HF transformers on the same weights through mlx-lm's chain as ``make_sampler`` and
``make_logits_processors`` build it: the repetition, presence and frequency penalties, each over
the last 20 tokens of the context the control hands its processors (prompt and generated
tokens), then top-p, min-p, top-k, temperature.

mlx-lm keeps a draft when it equals the token the target samples at that position (sample-and-
match, :data:`specproof.audit.engine.acceptance.MATCH`): the engine hands the audit the draft
model's law (HF on the draft's weights through the same chain), so the acceptance row tests the
count of kept drafts against sum p(x) q(x).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.adapters.beside_hf import (
    GAP_SEQUENCES,
    audit_beside_hf,
    gap_sequences,
    logit_gap,
    prompt_shown,
)
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.acceptance import MATCH
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.models import AuditModel

VERSION = "0.32.2"
PENALTY_CONTEXT = 20
"""mlx-lm's default ``repetition_context_size``, passed explicitly."""
PENALTIES = ("repetition_penalty", "presence_penalty", "frequency_penalty")
"""``make_logits_processors``' penalties, in the order it applies them."""
T1 = {"temp": 1.0, "top_k": 0, "top_p": 0.0, "min_p": 0.0, **dict.fromkeys(PENALTIES, 0.0)}
"""mlx-lm's "off" values: top_p 0 (its sampler applies top-p only when 0 < top_p < 1) and
penalties of 0 (no processor)."""
TRUNCATED = {**T1, "top_k": 5, "top_p": 0.9, "min_p": 0.05}
PENALISED = {**T1, "repetition_penalty": 1.3}
PRESENCE = {**T1, "presence_penalty": 5.0}
FREQUENCY = {**T1, "frequency_penalty": 5.0}
"""Additive penalties large enough to move the law after a real model's chat prompt: on
SmolLM2-135M-Instruct, 5.0 over the prompt moves the second and third tokens' laws by TV 0.73
and 0.60 along the greedy answer, OpenAI's largest 2.0 by 0.11 and 0.06 (HF, the chain below)."""
GREEDY = {**T1, "temp": 0.0}
GREEDY_TOKENS = 8
K = 3
REAL_GAP_SEQUENCES = 8
LAST_TOKEN_LAW = "law penalising only the prompt's last token"
WHOLE_PROMPT = "processors handed the whole prompt"


@dataclass(frozen=True)
class MlxConfig:
    name: str
    drafter: str  # "none", "draft" (the draft model), "target" (the target drafting itself)
    k: int
    sampling: Mapping[str, float]
    sampling_label: str
    control: str = ""
    tokens: int = 5
    prompt: tuple[int, ...] = ()
    lossy_by_design: bool = False
    localise: str = ""
    """"" as shipped; :data:`LAST_TOKEN_LAW` tests the engine against the law with only the
    prompt's last token in the penalty's context; :data:`WHOLE_PROMPT` hands the engine's
    processors the rest of the prompt in front of the tokens mlx-lm gives them."""

    @property
    def label(self) -> str:
        return {"none": "no draft", "target": f"draft = target k={self.k}"}.get(
            self.drafter, f"draft model k={self.k}"
        )

    @property
    def greedy(self) -> bool:
        return float(self.sampling["temp"]) == 0.0


def settings(model: AuditModel) -> list[tuple[str, Mapping[str, float], str, tuple[int, ...]]]:
    """(tag, sampling, label, prompt) of each setting; the penalty runs after the model's
    penalty prompt, whose repeated tokens make the penalty move the law."""
    return [
        ("T=1", T1, "T = 1", model.prompt),
        ("truncated", TRUNCATED, "top-p 0.9, min-p 0.05, top-k 5", model.prompt),
        ("penalty", PENALISED,
         f"T = 1, repetition penalty 1.3 over the last {PENALTY_CONTEXT} tokens", model.penalty),
        ("presence", PRESENCE,
         f"T = 1, presence penalty 5 over the last {PENALTY_CONTEXT} tokens", model.penalty),
        ("frequency", FREQUENCY,
         f"T = 1, frequency penalty 5 over the last {PENALTY_CONTEXT} tokens", model.penalty),
        ("greedy", GREEDY, "greedy (temp 0)", model.prompt),
    ]  # fmt: skip


def configurations(model: AuditModel) -> list[MlxConfig]:
    """Every audited configuration, each control first (the same sampling, speculation off):
    the draft model at k = 3 everywhere, and at T = 1 also the target drafting for itself
    (every draft then has the target's law: the most drafts accepted); with the repetition
    penalty two localising twins (:attr:`MlxConfig.localise`)."""
    out = []
    for tag, sampling, label, prompt in settings(model):
        tokens = GREEDY_TOKENS if sampling is GREEDY else 5
        control = f"{tag} no draft"
        out.append(MlxConfig(control, "none", 0, sampling, label, tokens=tokens, prompt=prompt))
        drafts = [("draft", K)]
        if sampling is T1:
            drafts.append(("target", K))
        for drafter, k in drafts:
            name = f"{tag} {MlxConfig('', drafter, k, sampling, label).label}"
            out.append(MlxConfig(name, drafter, k, sampling, label, control, tokens, prompt))
        if sampling is PENALISED:  # where the prompt's tokens go missing (docs/findings)
            for localise in (LAST_TOKEN_LAW, WHOLE_PROMPT):
                out.append(MlxConfig(f"{name}, {localise}", "draft", K, sampling, label,
                                     control, tokens, prompt, localise=localise))  # fmt: skip
    return out


def by_name(name: str, model: AuditModel) -> MlxConfig:
    for config in configurations(model):
        if config.name == name:
            return config
    known = ", ".join(c.name for c in configurations(model))
    raise KeyError(f"no mlx-lm configuration {name!r}; known: {known}")


def sampler_kwargs(sampling: Mapping[str, float]) -> dict[str, Any]:
    """``make_sampler``'s arguments."""
    return {
        "temp": float(sampling["temp"]),
        "top_p": float(sampling["top_p"]),
        "min_p": float(sampling["min_p"]),
        "top_k": int(sampling["top_k"]),
    }


def processor_kwargs(sampling: Mapping[str, float]) -> dict[str, Any]:
    """``make_logits_processors``'s arguments (none without a penalty)."""
    out: dict[str, Any] = {}
    for name in PENALTIES:
        if float(sampling[name]) != 0.0:
            out[name] = float(sampling[name])
            out[f"{name.removesuffix('_penalty')}_context_size"] = PENALTY_CONTEXT
    return out


def penalised(logits: torch.Tensor, context: Sequence[int], penalty: float) -> torch.Tensor:
    """mlx-lm's repetition penalty: each distinct token among the last
    :data:`PENALTY_CONTEXT` of ``context`` has its logit multiplied by the penalty when
    negative, divided by it otherwise."""
    recent = list(context)[-PENALTY_CONTEXT:]
    if penalty == 0.0 or not recent:
        return logits
    out = logits.clone()
    index = torch.tensor(sorted(set(recent)), dtype=torch.long)
    chosen = out[index]
    out[index] = torch.where(chosen < 0, chosen * penalty, chosen / penalty)
    return out


def presence_penalised(
    logits: torch.Tensor, context: Sequence[int], penalty: float
) -> torch.Tensor:
    """mlx-lm's presence penalty: ``penalty`` subtracted once from the logit of each distinct
    token among the last :data:`PENALTY_CONTEXT` of ``context``."""
    recent = sorted(set(list(context)[-PENALTY_CONTEXT:]))
    if penalty == 0.0 or not recent:
        return logits
    out = logits.clone()
    out[torch.tensor(recent, dtype=torch.long)] -= penalty
    return out


def frequency_penalised(
    logits: torch.Tensor, context: Sequence[int], penalty: float
) -> torch.Tensor:
    """mlx-lm's frequency penalty: ``penalty`` subtracted from a token's logit once for each
    time it occurs among the last :data:`PENALTY_CONTEXT` of ``context``."""
    recent = list(context)[-PENALTY_CONTEXT:]
    if penalty == 0.0 or not recent:
        return logits
    counts = torch.bincount(torch.tensor(recent, dtype=torch.long), minlength=logits.numel())
    return logits - penalty * counts.to(logits.dtype)


def processed(
    logits: torch.Tensor, context: Sequence[int], sampling: Mapping[str, float]
) -> torch.Tensor:
    """One row through ``make_logits_processors``' penalties, in its order."""
    out = penalised(logits, context, float(sampling["repetition_penalty"]))
    out = presence_penalised(out, context, float(sampling["presence_penalty"]))
    return frequency_penalised(out, context, float(sampling["frequency_penalty"]))


def chain_probs(logits: torch.Tensor, sampling: Mapping[str, float]) -> torch.Tensor:
    """One row through mlx-lm's sampler: top-p, min-p, top-k on the log-probabilities, then
    the temperature (greedy: the softmax, whose argmax is the greedy token)."""
    scores = torch.log_softmax(logits.to(torch.float64), -1)
    top_p = float(sampling["top_p"])
    if 0.0 < top_p < 1.0:
        probs = scores.exp()
        ordered, index = probs.sort(descending=True)
        before = ordered.cumsum(-1) - ordered  # mass of the more probable tokens
        drop = torch.zeros_like(probs, dtype=torch.bool)
        drop[index] = before >= top_p * probs.sum()
        scores = torch.where(drop, -torch.inf, scores)
    min_p = float(sampling["min_p"])
    if min_p > 0.0:
        scores = torch.where(scores < scores.max() + math.log(min_p), -torch.inf, scores)
    top_k = int(sampling["top_k"])
    if 0 < top_k < scores.numel():
        kth = scores.topk(top_k).values[-1]
        scores = torch.where(scores < kth, -torch.inf, scores)
    temp = float(sampling["temp"])
    return torch.softmax(scores / (temp if temp > 0 else 1.0), -1)


def mlx_target_probs(target: Any, sampling: Mapping[str, float], skip: int = 0) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through mlx-lm's chain; the penalties see the whole
    prefix (prompt and generated tokens), as ``generate_step`` hands it to its processors,
    less its first ``skip`` tokens (a law for localising, not the target's). ``target``: any
    HF model (the draft model's law is built the same way)."""

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for b in range(sequences.shape[0]):
            for t in range(sequences.shape[1]):
                row = processed(logits[b, t], sequences[b, skip : t + 1].tolist(), sampling)
                out[b, t] = chain_probs(row, sampling).to(torch.float32)
        return out

    return target_probs


def rounds_from_flags(flags: Sequence[bool], k: int, total: int) -> tuple[tuple[int, int], ...]:
    """(drafted, accepted) per round from ``speculative_generate_step``'s per-token "from the
    draft" flags: a round drafts ``min(k, tokens left)``, yields its accepted drafts (True)
    and then the target's own token (False), unless the accepted drafts end the run."""
    rounds = []
    accepted = 0
    drafted = min(k, total)
    for done, flag in enumerate(flags, 1):
        if flag:
            accepted += 1
            if accepted == drafted and done == total:  # the whole draft kept, run over
                rounds.append((drafted, accepted))
        else:
            rounds.append((drafted, accepted))
            accepted = 0
            drafted = min(k, total - done)
    return tuple(rounds)


def with_prompt_prefix(processor: Any, prompt: Sequence[int]) -> Any:
    """``processor`` handed the prompt less its last token in front of the tokens
    ``speculative_generate_step`` gives it (the prompt's last token and those generated)."""
    import mlx.core as mx

    prefix = mx.array(list(prompt[:-1]), dtype=mx.uint32)

    def processor_with_prompt(tokens: Any, logits: Any) -> Any:
        return processor(mx.concatenate([prefix, tokens.astype(mx.uint32)]), logits)

    return processor_with_prompt


def rope_override(folder: Path) -> dict[str, float]:
    """``load_model``'s ``model_config`` for a folder that transformers 5 wrote: it keeps the
    RoPE base inside ``rope_parameters``, and mlx-lm 0.32.2's llama reads only a top-level
    ``rope_theta``, else 10000 (docs/findings/mlx_lm_llama_rope_parameters.md). Empty when
    the top level has it or nothing nests it."""
    config = json.loads((Path(folder) / "config.json").read_text())
    nested = config.get("rope_parameters") or {}
    if "rope_theta" in config or "rope_theta" not in nested:
        return {}
    if nested.get("rope_type", "default") != "default":
        raise ValueError(f"{folder}: rope_type {nested['rope_type']!r} is not carried over")
    return {"rope_theta": float(nested["rope_theta"])}


def load_mlx(path: Path) -> Any:
    from mlx_lm.utils import load_model

    model, _ = load_model(Path(path), model_config=rope_override(Path(path)))
    return model


def mlx_logits(model: Any) -> Callable[[list[int]], torch.Tensor]:
    """mlx-lm's logits at every position of a sequence, [len, V]."""
    import mlx.core as mx

    def logits(sequence: list[int]) -> torch.Tensor:
        out = model(mx.array([sequence]))
        return torch.tensor(np.array(out.astype(mx.float32))[0], dtype=torch.float64)

    return logits


def mlx_engine(config: MlxConfig, model_files: AuditModel) -> Engine:
    import mlx.core as mx
    from mlx_lm.generate import generate_step, speculative_generate_step
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    model = load_mlx(model_files.target)
    # The target drafting for itself is a second copy of it (the same weights).
    draft = None if config.drafter == "none" else load_mlx(model_files.drafter(config.drafter))
    sampler = make_sampler(**sampler_kwargs(config.sampling))
    processors = make_logits_processors(**processor_kwargs(config.sampling)) or None
    if processors and config.localise == WHOLE_PROMPT:
        processors = [with_prompt_prefix(p, config.prompt) for p in processors]

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        mx.random.seed(seed)
        tokens: list[int] = []
        flags: list[bool] = []
        prompt_array = mx.array(list(prompt), dtype=mx.uint32)
        if draft is None:
            steps = generate_step(prompt_array, model, max_tokens=num_new_tokens,
                                  sampler=sampler, logits_processors=processors)  # fmt: skip
            for token, _ in steps:
                tokens.append(int(token))
        else:
            steps = speculative_generate_step(
                prompt_array, model, draft, num_draft_tokens=config.k,
                max_tokens=num_new_tokens, sampler=sampler, logits_processors=processors,
            )  # fmt: skip
            for token, _, from_draft in steps:
                tokens.append(int(token))
                flags.append(bool(from_draft))
        rounds = rounds_from_flags(flags, config.k, num_new_tokens) if draft is not None else ()
        return Emission(tuple(tokens), rounds)

    target = load_hf(model_files.target)
    skip = len(config.prompt) - 1 if config.localise == LAST_TOKEN_LAW else 0
    target_probs = mlx_target_probs(target, config.sampling, skip)
    draft_probs = None
    if config.drafter != "none":
        drafter = target if config.drafter == "target" else load_hf(model_files.drafter("draft"))
        draft_probs = mlx_target_probs(drafter, config.sampling, skip)
    override = rope_override(model_files.target)
    notes = [
        f"mlx-lm loaded with rope_theta {override['rope_theta']:g} from the folder's "
        "rope_parameters (its llama reads only a top-level rope_theta, else 10000)"
    ]
    return Engine(
        name=config.name,
        notes=notes if override else [],
        generate=generate,
        target_probs=target_probs,
        prompt=config.prompt,
        eos=None,
        greedy=config.greedy,
        max_draft=config.k or None,
        draft_probs=draft_probs,
        acceptance_rule=MATCH,
    )


def blas_in_use() -> str:
    """ ", OpenBLAS" when an OpenBLAS is loaded into this process (preloaded: the mlx[cpu]
    wheel links the reference BLAS, about 12x slower at the model's matrix products here)."""
    maps = Path("/proc/self/maps")
    loaded = maps.read_text() if maps.exists() else ""
    return ", OpenBLAS" if "libopenblas" in loaded else ""


def installed_version() -> str:
    import mlx.core as mx
    import mlx_lm

    return f"{mlx_lm.__version__} (mlx {mx.__version__}, CPU{blas_in_use()})"


def gap_count(model: AuditModel) -> int:
    """How many sequences the logit gap is measured on: the audit's 32 on a tiny model, 8 on
    a real one (each a full forward pass of prompt and 16 ids through mlx and through HF)."""
    return GAP_SEQUENCES if model.vocab <= 64 else REAL_GAP_SEQUENCES


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one mlx-lm configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    count = gap_count(model)
    gap = logit_gap(mlx_logits(load_mlx(model.target)), load_hf(model.target),
                    gap_sequences(model, count))  # fmt: skip
    prompt = prompt_shown(config.prompt, config.greedy)
    build = partial(mlx_engine, config, model)
    audit_beside_hf("mlx-lm", installed_version(), config, build, gap, plan, out, model, prompt,
                    gap_count=count)  # fmt: skip
