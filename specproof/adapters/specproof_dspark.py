"""specproof's own end-to-end decoder as an audited engine: the DSpark drafter with Algorithm 1
(:mod:`specproof.e2e`), in process, CPU.

``speculative_generate(target, drafter, prompts, max_new_tokens, temperature, schedule,
sps, seed, truncation)`` decodes a whole batch of requests per call; every batch of the audit's
runs is one call (:func:`~specproof.adapters.configurations.batched_engine`). The target is the
model's HF folder loaded into :class:`~specproof.e2e.models.llama_target.LlamaTarget` (specproof's
own torch Llama with a ragged KV cache), the drafter a :class:`DSparkDrafter` with seeded
weights, each perturbed so that the Markov head, its gate and the confidence head all act
(losslessness must hold for any drafter, so no trained one is needed), the schedule
:class:`~specproof.reference.schedulers.Algorithm1`, whose admitted prefix length varies with
the confidences. The control is the same target's plain decoding
(``autoregressive_generate``: one token per request per step, the same sampling).

Truncated sampling restricts the target's law and the draft law alike (top-k, then top-p, on
the tempered law, renormalised) before verification.

The rounds of each request (scheduled drafts, accepted drafts) come from the decoder's round
logs (the active requests of each round, in order); a round that schedules no draft is no round.

The law: a plain teacher-forced pass of the same folder in HF transformers, with transformers'
own processors (temperature, top-k, top-p), beside the engine's logit gap to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from specproof.adapters.beside_hf import audit_beside_hf, gap_sequences, logit_gap, prompt_shown
from specproof.adapters.configurations import (
    Setting,
    SpeculativeConfig,
    batched_engine,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import hf_target_probs, load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine
from specproof.models import AuditModel

ENGINE = "specproof-dspark"
"""The engine's label in the results (its registry record's)."""
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
TRUNCATED = {**T1, "temperature": 0.8, "top_k": 5, "top_p": 0.9}
GREEDY = {**T1, "do_sample": False}
GREEDY_TOKENS = 8
BATCH = 256
"""Requests per decoder call."""
DRAFT_SEED = 1
PERTURBATION = 0.3
"""Std of the noise added to every drafter parameter (the zero-initialised Markov factor and
gate included), as tests/e2e/test_markov_heads.py's ``drafter_with`` does."""
SPS_SLOPE = 0.5
"""Algorithm 1's throughput curve sps(b) = 1 / (1 + SPS_SLOPE b / R) over the b tokens a round
verifies for R requests (the falling curve of tests/e2e/test_lossless.py): it admits some
drafts, not all."""
GAP_COUNT = 8
MAX_LEN = 512


SMALL_GAMMA = 3
"""gamma of the small DSpark built for a Llama other than SmolLM2."""


def is_smollm2(model: AuditModel) -> bool:
    from specproof.models.smollm2 import NAME, VOCAB

    return model.name == NAME and model.vocab == VOCAB


def gamma_of(model: AuditModel) -> int:
    from specproof.e2e.plans import SMOLLM2

    return SMOLLM2.dspark.gamma if is_smollm2(model) else SMALL_GAMMA


def drafter_config(model: AuditModel) -> Any:
    """SmolLM2's DSpark (:data:`specproof.e2e.plans.SMOLLM2`), or for another Llama a small
    DSpark whose heads have the target's head dimension (gamma :data:`SMALL_GAMMA`, one
    layer, Markov rank 4, block slots learned)."""
    import json

    from specproof.e2e.models.dspark import DSparkConfig
    from specproof.e2e.plans import SMOLLM2

    if is_smollm2(model):
        return SMOLLM2.dspark
    hf = json.loads((Path(model.target) / "config.json").read_text())
    width = int(hf["hidden_size"])
    head_dim = int(hf.get("head_dim") or width // int(hf["num_attention_heads"]))
    return DSparkConfig(gamma=SMALL_GAMMA, n_layers=1, n_heads=width // head_dim,
                        d_ff=2 * width, rank=4)  # fmt: skip


def settings(model: AuditModel) -> list[Setting]:
    return [
        ("T=1", T1, "T = 1", model.prompt),
        ("truncated", TRUNCATED, "T = 0.8, top-k 5, top-p 0.9", model.prompt),
        ("greedy", GREEDY, "greedy (temperature 0)", model.prompt),
    ]


def configurations(model: AuditModel) -> list[SpeculativeConfig]:
    """Each setting's control (plain decoding), then DSpark with Algorithm 1 drafting up to
    gamma tokens a round (k in the name is gamma)."""
    return build_configurations(settings(model), ("dspark",), k=gamma_of(model), self_drafting=None,
                                greedy_tokens=GREEDY_TOKENS)  # fmt: skip


def by_name(name: str, model: AuditModel) -> SpeculativeConfig:
    return configuration_named(name, configurations(model), "specproof-dspark")


def temperature_of(sampling: Any) -> float:
    return float(sampling["temperature"]) if sampling["do_sample"] else 0.0


def truncation_of(sampling: Any) -> Any:
    """The decoder's truncation for these sampling parameters (None: nothing is cut)."""
    from specproof.e2e.models.drafting import Truncation

    top_k, top_p = int(sampling["top_k"]), float(sampling["top_p"])
    if not sampling["do_sample"] or (top_k == 0 and top_p >= 1.0):
        return None
    return Truncation(top_k, top_p)


def law_kwargs(sampling: Any) -> dict[str, Any]:
    """The same sampling as generate kwargs for transformers' processors (top_k 0 given
    explicitly: left out, transformers would cut at 50)."""
    return {key: sampling[key] for key in ("do_sample", "temperature", "top_k", "top_p")}


def feature_layers(n_layers: int) -> tuple[int, ...]:
    """The release's spread of fused layers, or layer 0 for a target too shallow for it."""
    from specproof.e2e.models.llama_target import spread_layers

    return spread_layers(n_layers) if n_layers >= 4 else (0,)


def load_target(model: AuditModel) -> Any:
    import json

    from specproof.e2e.models.llama_target import load_llama_target

    hf = json.loads((Path(model.target) / "config.json").read_text())
    layers = feature_layers(int(hf["num_hidden_layers"]))
    return load_llama_target(Path(model.target), torch.float32, layers, MAX_LEN)


def build_drafter(target: Any, config: Any, seed: int = DRAFT_SEED) -> Any:
    """A seeded DSpark drafter for ``target`` whose own parameters (not the target's) are all
    perturbed by :data:`PERTURBATION` noise; eval mode."""
    from specproof.e2e.models.dspark import DSparkDrafter

    torch.manual_seed(seed)
    drafter = DSparkDrafter(target, config)
    shared = {p.data_ptr() for p in target.parameters()}
    with torch.no_grad():
        for parameter in drafter.parameters():
            if parameter.data_ptr() not in shared:
                parameter.add_(PERTURBATION * torch.randn_like(parameter))
    return drafter.eval()


def request_rounds(
    scheduled: Sequence[Sequence[int]],
    accepted: Sequence[Sequence[int]],
    batch: int,
    max_new_tokens: int,
) -> list[tuple[tuple[int, int], ...]]:
    """Each request's (drafts, accepted) per round, from round logs that list the active
    requests (those with fewer than ``max_new_tokens`` tokens) in order; a round emits the
    accepted drafts and one more token; rounds scheduling no draft are left out."""
    produced = [0] * batch
    out: list[list[tuple[int, int]]] = [[] for _ in range(batch)]
    for lengths, kept in zip(scheduled, accepted, strict=True):
        active = [r for r in range(batch) if produced[r] < max_new_tokens]
        if len(active) != len(lengths):
            raise ValueError(f"a round logs {len(lengths)} requests, {len(active)} are active")
        for r, length, count in zip(active, lengths, kept, strict=True):
            if length:
                out[r].append((int(length), int(count)))
            produced[r] += int(count) + 1
    return [tuple(rounds) for rounds in out]


class Counter:
    """Drafts scheduled and accepted over every call, for the report's notes."""

    def __init__(self) -> None:
        self.request_rounds = self.scheduled = self.accepted = self.empty = 0
        self.lengths: dict[int, int] = {}

    def add(self, scheduled: Sequence[Sequence[int]], accepted: Sequence[Sequence[int]]) -> None:
        for lengths, kept in zip(scheduled, accepted, strict=True):
            for length, count in zip(lengths, kept, strict=True):
                self.request_rounds += 1
                self.scheduled += length
                self.accepted += count
                self.empty += length == 0
                self.lengths[length] = self.lengths.get(length, 0) + 1

    def notes(self) -> list[str]:
        if not self.request_rounds:
            return []
        rate = self.accepted / self.scheduled if self.scheduled else float("nan")
        shown = ", ".join(f"{n}: {c}" for n, c in sorted(self.lengths.items()))
        return [
            f"Algorithm 1 over {self.request_rounds} request-rounds: {self.scheduled} drafts "
            f"verified, {self.accepted} accepted ({rate:.1%}); admitted lengths {{{shown}}}"
        ]


def dspark_engine(
    config: SpeculativeConfig,
    target: Any,
    law_target: Any,
    model: AuditModel,
    counter: Counter,
    verify: Any = None,
) -> Engine:
    """The engine: one decoder call per batch of runs, seeded by the run's seed; ``verify``
    replaces the decoder's verification step (None: its own; the tests' lossy step)."""
    from specproof.e2e.decoding.rounds import autoregressive_generate, speculative_generate
    from specproof.reference.schedulers import Algorithm1

    temperature = temperature_of(config.sampling)
    truncation = truncation_of(config.sampling)
    drafter = None if config.drafter == "none" else build_drafter(target, drafter_config(model))
    schedule = Algorithm1()

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        if drafter is None:
            done = autoregressive_generate(target, prompts, num_new_tokens,
                                           temperature=temperature, seed=seed,
                                           truncation=truncation)  # fmt: skip
            return [Emission(tuple(tokens)) for tokens in done.tokens]
        requests = len(prompts)

        def sps(tokens: int) -> float:
            return 1.0 / (1.0 + SPS_SLOPE * tokens / requests)

        done = speculative_generate(target, drafter, prompts, num_new_tokens,
                                    temperature=temperature, schedule=schedule, sps=sps,
                                    seed=seed, truncation=truncation,
                                    **({} if verify is None else {"verify": verify}))  # fmt: skip
        scheduled = [r.scheduled for r in done.rounds]
        accepted = [r.accepted for r in done.rounds]
        counter.add(scheduled, accepted)
        rounds = request_rounds(scheduled, accepted, requests, num_new_tokens)
        return [Emission(tuple(t), r) for t, r in zip(done.tokens, rounds, strict=True)]

    law = hf_target_probs(law_target, law_kwargs(config.sampling))
    return batched_engine(config, law, generate_many, BATCH)


def drafter_notes(model: AuditModel, config: SpeculativeConfig, counter: Counter) -> list[str]:
    dspark = drafter_config(model)
    notes = [
        "target: specproof's LlamaTarget (torch, ragged KV cache) on the model's float32 folder",
        "control: autoregressive_generate, the same target and sampling, no draft",
        "law: the same folder in HF transformers, one teacher-forced pass, its processors",
    ]
    if config.drafter == "none":
        return notes
    return [
        *notes,
        f"drafter: DSparkDrafter {dspark.as_dict()}, seed {DRAFT_SEED}, every own parameter "
        f"perturbed by N(0, {PERTURBATION}^2) noise; schedule Algorithm 1, sps(b) = 1 / (1 + "
        f"{SPS_SLOPE} b / R) for R requests per call ({BATCH} at most)",
        *counter.notes(),
    ]


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("specproof")
    except PackageNotFoundError:
        own = "source"
    return f"{own} (torch {torch.__version__}, transformers {version('transformers')})"


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    target, law_target = load_target(model), load_hf(model.target)

    def engine_logits(sequence: list[int]) -> torch.Tensor:
        with torch.no_grad():
            logits: torch.Tensor = target(torch.tensor([sequence])).logits[0]
        return logits

    sequences = gap_sequences(model, GAP_COUNT)
    gap = logit_gap(engine_logits, law_target, sequences)
    counter = Counter()
    build: Callable[[], Engine] = lambda: dspark_engine(  # noqa: E731
        config, target, law_target, model, counter
    )
    prompt = prompt_shown(config.prompt, config.greedy)
    audit_beside_hf(ENGINE, installed_version(), config, build, gap, plan, out,
                    model, prompt, notes=lambda: drafter_notes(model, config, counter),
                    gap_count=len(sequences))  # fmt: skip
