"""HF transformers' assisted generation audited on a model given as an
:class:`~specproof.models.AuditModel` (registered as ``hf``; runs in the default venv).

Settings: T = 1 (no cut), truncated (top-k 50, top-p 0.9, min-p 0.05) and greedy, each with
speculation off (the control) and with the model's drafter (``assistant_model``, k = 3 at a
constant schedule, no confidence stop), DFlash (``speculation_type="dflash"``, a block of the
anchor and 3 drafts, where the model has a block drafter:
:mod:`specproof.models.block_drafter`), prompt lookup (``prompt_lookup_num_tokens`` = 3,
after the model's lookup prompt) and, at T = 1, the target drafting for itself. The engine is
HF's own ``generate`` (:func:`.hf.hf_engine`); the law is a plain teacher-forced pass of the
same target with transformers' processors, so there is no logit gap to state. A control makes
its runs in batches of :data:`CONTROL_BATCH` through one ``generate`` call (rows of one batch
are independent draws); assisted generation runs one request at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch

from specproof.adapters.beside_hf import audit_beside_hf
from specproof.adapters.configurations import (
    Setting,
    SpeculativeConfig,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import hf_engine, quiet_transformers
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine
from specproof.models import AuditModel
from specproof.models.block_drafter import HEAD as BLOCK_HEAD
from specproof.models.block_drafter import load_block_drafter

K = 3
GREEDY_TOKENS = 8
CONTROL_BATCH = 64
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0}
"""``top_k`` 0: transformers would otherwise cut at its default of 50."""
TRUNCATED = {"do_sample": True, "temperature": 1.0, "top_k": 50, "top_p": 0.9, "min_p": 0.05}
GREEDY = {"do_sample": False}
DRAFTERS = ("draft", "dflash", "lookup")


def settings(model: AuditModel) -> list[Setting]:
    return [
        ("T=1", T1, "T = 1", model.prompt),
        ("truncated", TRUNCATED, "top-k 50, top-p 0.9, min-p 0.05", model.prompt),
        ("greedy", GREEDY, "greedy (do_sample off)", model.prompt),
    ]


def configurations(model: AuditModel) -> list[SpeculativeConfig]:
    """Each setting's control, then the drafters (the model's drafter only where it has one);
    prompt lookup after the model's lookup prompt, as its own control beside it."""
    offered = {"draft": model.draft is not None, "dflash": BLOCK_HEAD in model.heads}
    drafters = [d for d in DRAFTERS if offered.get(d, True)]
    built = build_configurations(
        settings(model),
        [d for d in drafters if d != "lookup"],
        k=K,
        self_drafting="T=1",
        greedy_tokens=GREEDY_TOKENS,
    )
    lookup = build_configurations(
        [("T=1 lookup prompt", T1, "T = 1", model.lookup)],
        ["lookup"],
        k=K,
        self_drafting="",
        greedy_tokens=GREEDY_TOKENS,
    )
    return built + (lookup if "lookup" in drafters else [])


def load(folder: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def generate_kwargs(config: SpeculativeConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(config.sampling)
    if config.drafter in ("draft", "target"):
        # A fixed draft of k: no schedule, and no early stop on the assistant's confidence
        # (transformers' default threshold 0.4 ends most greedy drafts after one token).
        kwargs.update(
            num_assistant_tokens=config.k,
            num_assistant_tokens_schedule="constant",
            assistant_confidence_threshold=0.0,
        )
    if config.drafter == "lookup":
        kwargs["prompt_lookup_num_tokens"] = config.k
    if config.drafter == "dflash":
        kwargs["speculation_type"] = "dflash"  # the block's size is the drafter's config
    return kwargs


def cut_at_eos(tokens: Sequence[int], eos: frozenset[int]) -> tuple[int, ...]:
    """A batched row's tokens up to and including its first EOS (the padding after it is not
    the engine's output)."""
    out: list[int] = []
    for token in tokens:
        out.append(int(token))
        if token in eos:
            break
    return tuple(out)


def batched_control(engine: Engine, target: Any, kwargs: Mapping[str, Any]) -> Engine:
    """``engine`` (the target alone) with its runs made ``CONTROL_BATCH`` at a time by one
    ``generate`` call on same-length prompts, seeded once per call."""
    eos = engine.eos_ids
    pad = min(eos) if eos else 0

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        torch.manual_seed(seed)
        ids = torch.tensor([list(p) for p in prompts], dtype=torch.long)
        with torch.no_grad(), quiet_transformers():
            out = target.generate(ids, max_new_tokens=num_new_tokens,
                                  attention_mask=torch.ones_like(ids), pad_token_id=pad,
                                  **kwargs)  # fmt: skip
        return [Emission(cut_at_eos(row[ids.shape[1] :].tolist(), eos)) for row in out]

    engine.generate_many = generate_many
    engine.batch = CONTROL_BATCH
    return engine


def assisted_engine(config: SpeculativeConfig, model: AuditModel) -> Engine:
    target = load(model.target)
    assistant = None
    if config.drafter in ("draft", "target"):
        assistant = load(model.drafter(config.drafter))  # a second copy drafts for the target
    if config.drafter == "dflash":
        assistant = load_block_drafter(model.head(BLOCK_HEAD))
    kwargs = generate_kwargs(config)
    engine = hf_engine(target, assistant, kwargs, prompt=config.prompt, name=config.name)
    if config.drafter == "none":
        engine = batched_control(engine, target, kwargs)
    return engine


def installed_version() -> str:
    import transformers

    return str(transformers.__version__)


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one configuration in this process; write its entry to ``out``."""
    torch.set_num_threads(1)
    config = configuration_named(name, configurations(model), "hf")
    build = partial(assisted_engine, config, model)
    audit_beside_hf("HF transformers", installed_version(), config, build, None, plan, out, model)
