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
``make_logits_processors`` build it: the repetition penalty over the last 20 tokens of the
context the control hands its processors (prompt and generated tokens), then top-p, min-p,
top-k, temperature.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
from specproof.adapters.hf import load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.models import AuditModel

VERSION = "0.32.2"
PENALTY_CONTEXT = 20
"""mlx-lm's default ``repetition_context_size``, passed explicitly."""
T1 = {"temp": 1.0, "top_k": 0, "top_p": 0.0, "min_p": 0.0, "repetition_penalty": 0.0}
"""mlx-lm's "off" values: top_p 0 (its sampler applies top-p only when 0 < top_p < 1) and a
repetition penalty of 0 (no processor)."""
TRUNCATED = {**T1, "top_k": 5, "top_p": 0.9, "min_p": 0.05}
PENALISED = {**T1, "repetition_penalty": 1.3}
GREEDY = {**T1, "temp": 0.0}
GREEDY_TOKENS = 8
K = 3
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
                                     control, tokens, prompt, localise))  # fmt: skip
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
    penalty = float(sampling["repetition_penalty"])
    if penalty == 0.0:
        return {}
    return {"repetition_penalty": penalty, "repetition_context_size": PENALTY_CONTEXT}


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
    """[B, L] -> [B, L, V]: HF's logits through mlx-lm's chain; the penalty sees the whole
    prefix (prompt and generated tokens), as ``generate_step`` hands it to its processors,
    less its first ``skip`` tokens (a law for localising, not the target's)."""
    penalty = float(sampling["repetition_penalty"])

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for b in range(sequences.shape[0]):
            for t in range(sequences.shape[1]):
                row = penalised(logits[b, t], sequences[b, skip : t + 1].tolist(), penalty)
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


def load_mlx(path: Path) -> Any:
    from mlx_lm.utils import load_model

    model, _ = load_model(Path(path))
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
    return Engine(
        name=config.name,
        generate=generate,
        target_probs=mlx_target_probs(target, config.sampling, skip),
        prompt=config.prompt,
        eos=None,
        greedy=config.greedy,
        max_draft=config.k or None,
    )


def installed_version() -> str:
    import mlx.core as mx
    import mlx_lm

    return f"{mlx_lm.__version__} (mlx {mx.__version__}, CPU)"


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one mlx-lm configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    gap = logit_gap(mlx_logits(load_mlx(model.target)), load_hf(model.target),
                    gap_sequences(model))  # fmt: skip
    prompt = prompt_shown(config.prompt, config.greedy)
    build = partial(mlx_engine, config, model)
    audit_beside_hf("mlx-lm", installed_version(), config, build, gap, plan, out, model, prompt)
