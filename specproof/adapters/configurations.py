"""An engine's audited configurations: each sampling setting with speculation off (the control)
and with each of the engine's drafters, beside that control on the same prompt.

A real-engine adapter names its settings and drafters; this builds, names and finds the
configurations the same way for every engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specproof.audit.engine.subject import Emission, Engine, GenerateMany, TargetProbs

DRAFTER_LABELS = {
    "none": "no draft",
    "draft": "draft model",
    "target": "draft = target",
    "lookup": "prompt lookup",
    "ngram": "n-gram",
    "dflash": "DFlash block",
    "dflash1": "DFlash",
    "dflash2": "DFlash2",
    "eagle3": "EAGLE-3",
    "dspark": "DSpark + Algorithm 1",
}
"""What each drafter is called in a configuration's name ("target": a second copy of the
target drafting for itself, so a correct verifier accepts every draft; "dflash": transformers'
DFlash generator; "dflash1", "dflash2": the DFlash reference implementation's two drafters;
"eagle3": an EAGLE-3 head reading the target's hidden states; "dspark": specproof's DSpark
drafter with Algorithm 1, k its gamma, the most it drafts)."""


@dataclass(frozen=True)
class SpeculativeConfig:
    name: str
    drafter: str  # a key of DRAFTER_LABELS
    k: int
    sampling: Mapping[str, Any]
    sampling_label: str
    control: str = ""
    tokens: int = 5
    prompt: tuple[int, ...] = ()
    """The audited prompt (every configuration built here is given its setting's)."""
    lossy_by_design: bool = False
    """A must-fail control: the engine is asked for a lossy mode, so PASS would be the finding."""

    @property
    def label(self) -> str:
        kind = DRAFTER_LABELS[self.drafter]
        return kind if self.drafter == "none" else f"{kind} k={self.k}"

    @property
    def greedy(self) -> bool:
        return not self.sampling["do_sample"]


Setting = tuple[str, Mapping[str, Any], str, tuple[int, ...]]
"""(tag, sampling, how the table shows the sampling, prompt)."""


def build_configurations(
    settings: Sequence[Setting],
    drafters: Sequence[str],
    *,
    k: int,
    self_drafting: str | None,
    greedy_tokens: int,
) -> list[SpeculativeConfig]:
    """Every configuration, each control first (the same sampling and prompt, speculation
    off), then each drafter at ``k``; the setting tagged ``self_drafting`` (None: none) also
    gets the target drafting for itself. Greedy settings run ``greedy_tokens`` tokens (one
    prompt has one output, so the audit varies prompts instead)."""
    out = []
    for tag, sampling, label, prompt in settings:
        tokens = 5 if sampling["do_sample"] else greedy_tokens
        control = f"{tag} no draft"
        out.append(SpeculativeConfig(control, "none", 0, sampling, label, tokens=tokens,
                                     prompt=prompt))  # fmt: skip
        for drafter in [*drafters, *(["target"] if tag == self_drafting else [])]:
            name = f"{tag} {SpeculativeConfig('', drafter, k, sampling, label).label}"
            out.append(SpeculativeConfig(name, drafter, k, sampling, label, control, tokens,
                                         prompt))  # fmt: skip
    return out


def configuration_named(
    name: str, configurations: Sequence[SpeculativeConfig], engine: str
) -> SpeculativeConfig:
    for config in configurations:
        if config.name == name:
            return config
    known = ", ".join(c.name for c in configurations)
    raise KeyError(f"no {engine} configuration {name!r}; known: {known}")


def batched_engine(
    config: SpeculativeConfig, target_probs: TargetProbs, generate_many: GenerateMany, batch: int
) -> Engine:
    """The audited engine of ``config`` for an engine that serves many requests per call: a
    single run goes through ``generate_many`` too, so both paths are the engine's one path."""

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        return generate_many([tuple(prompt)], num_new_tokens, seed)[0]

    return Engine(
        name=config.name,
        generate=generate,
        target_probs=target_probs,
        prompt=config.prompt,
        eos=None,
        greedy=config.greedy,
        max_draft=config.k or None,
        generate_many=generate_many,
        batch=batch,
    )
