"""The DFlash reference implementation (``dflash`` on the package index) as an audited engine
(run in the ``audit-dflash`` venv, CPU).

``dflash.model.dflash_generate(draft, target, input_ids, max_new_tokens, stop_token_ids,
temperature, top_p, top_k, block_size)`` is its whole speculative loop, batch size 1: the target
is any HF causal LM (its hidden states feed the drafter; the package documents Qwen3 and
Llama-3.1 targets for DFlash), the drafter a :class:`DFlashDraftModel` (one block of masked
positions drafted in parallel, the target's embedding and output head shared) or a
:class:`DFlash2DraftModel` (the same, plus grouped causal convolutions and a low-rank candidate
selector that drafts the block position by position over the draft logits' top-k, so its
draft law is sparse). A block of ``block_size`` holds the last committed token and
``block_size - 1`` drafts; ``block_size = 1`` drafts nothing (the control: the same loop,
speculation off).

No trained drafter is needed: losslessness must hold for any drafter, so each is built from a
config beside the target's (its hidden size, heads and depth read from the target) with seeded
random weights. Randomness comes from torch's global generator (``torch.multinomial``,
``torch.rand_like``), seeded per call.

The rounds of a run are read from the target's own inputs: each verification call's block
(a forward pre-hook records it) against the tokens the run committed. A rejected draft is
never the token emitted in its place (sampled: the residual has no mass where p(x) < q(x);
greedy: the argmax is emitted), so the accepted count is the drafts matching the committed
tokens in order.

The law: a plain teacher-forced pass of a second copy of the target in HF transformers, with
transformers' own processors for the same sampling parameters (temperature, top-k, then top-p),
the chain ``dflash`` documents for ``sample``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from specproof.adapters.beside_hf import audit_beside_hf, prompt_shown
from specproof.adapters.configurations import (
    Setting,
    SpeculativeConfig,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import hf_target_probs, load_hf
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Emission, Engine
from specproof.models import AuditModel

VERSION = "0.1.0"
K = 3
"""Drafts per round: a block of K + 1 (the last committed token and K masked positions)."""
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0}
TRUNCATED = {**T1, "temperature": 0.8, "top_k": 5, "top_p": 0.9}
GREEDY = {**T1, "do_sample": False}
STOPPING = {**T1, "stop_at_eos": True}
"""T = 1 with the model's EOS ids as ``stop_token_ids`` (elsewhere EOS is an ordinary token)."""
GREEDY_TOKENS = 8
DRAFTERS = ("dflash1", "dflash2")
DRAFT_LAYERS = 1
DRAFT_SEED = 1
DRAFT_SCALE = 0.2
"""Initializer std of the drafters: draft rows far from uniform, so drafts are rejected often
and accepted in full now and then."""
CONV_KERNEL = 2
CONV_GROUP = 16
SELECTOR_RANK = 4
SELECTOR_TOP_K = 4
"""DFlash2's candidates per position: at V = 8 its draft law has support on half the
vocabulary, so the sparse residual (the target's law less a top-k draft law) is exercised."""


def settings(model: AuditModel) -> list[Setting]:
    return [
        ("T=1", T1, "T = 1", model.prompt),
        ("truncated", TRUNCATED, "T = 0.8, top-k 5, top-p 0.9", model.prompt),
        ("greedy", GREEDY, "greedy (temperature 0)", model.prompt),
    ]


def configurations(model: AuditModel) -> list[SpeculativeConfig]:
    """Every audited configuration, each control first (the same loop with ``block_size`` 1):
    DFlash and DFlash2 drafting K tokens a round in every setting; runs stopping at EOS with
    DFlash (the stop is handled by the loop both drafters share)."""
    stopping: Setting = ("T=1 EOS", STOPPING, "T = 1, stop at EOS", model.prompt)
    return [
        *build_configurations(settings(model), DRAFTERS, k=K, self_drafting=None,
                              greedy_tokens=GREEDY_TOKENS),
        *build_configurations([stopping], DRAFTERS[:1], k=K, self_drafting=None,
                              greedy_tokens=GREEDY_TOKENS),
    ]  # fmt: skip


def stops_at_eos(config: SpeculativeConfig) -> bool:
    return bool(config.sampling.get("stop_at_eos", False))


def by_name(name: str, model: AuditModel) -> SpeculativeConfig:
    return configuration_named(name, configurations(model), "dflash")


def call_sampling(sampling: dict[str, Any] | Any) -> dict[str, Any]:
    """``dflash_generate``'s sampling arguments: temperature 0 is its greedy path; top_k 0 and
    top_p 1 truncate nothing."""
    if not sampling["do_sample"]:
        return {"temperature": 0.0, "top_p": 1.0, "top_k": 0}
    return {
        "temperature": float(sampling["temperature"]),
        "top_p": float(sampling["top_p"]),
        "top_k": int(sampling["top_k"]),
    }


def law_kwargs(sampling: dict[str, Any] | Any) -> dict[str, Any]:
    """The same sampling as generate kwargs for transformers' processors (top_k 0 given
    explicitly: left out, transformers would cut at 50)."""
    return {key: sampling[key] for key in ("do_sample", "temperature", "top_k", "top_p")}


def draft_options(kind: str, target_config: Any, vocab: int) -> dict[str, Any]:
    """The ``dflash_config`` of a drafter of ``kind`` for this target: block K + 1, the mask
    token id 0 (any id of the vocabulary; a trained drafter has its own), DFlash2's convolution
    and selector sizes."""
    options: dict[str, Any] = {"block_size": K + 1, "mask_token_id": 0}
    if kind == "dflash2":
        options.update(
            conv_kernel_size=CONV_KERNEL,
            conv_group_size=math.gcd(target_config.hidden_size, CONV_GROUP),
            selector_rank=SELECTOR_RANK,
            selector_top_k=min(SELECTOR_TOP_K, vocab - 1),
        )
    return options


def draft_config(kind: str, target_config: Any, vocab: int) -> Any:
    """A Qwen3 config for the drafter (``DFlashDraftModel`` is a Qwen3 pretrained model): the
    target's width and heads, :data:`DRAFT_LAYERS` layers reading the target layers dflash
    picks for its depth (``num_target_layers``)."""
    from transformers import Qwen3Config

    heads = target_config.num_attention_heads
    config: Any = Qwen3Config  # it keeps the keys it does not define (dflash's own) as attributes
    return config(
        vocab_size=vocab,
        hidden_size=target_config.hidden_size,
        intermediate_size=2 * target_config.hidden_size,
        num_hidden_layers=DRAFT_LAYERS,
        num_attention_heads=heads,
        num_key_value_heads=getattr(target_config, "num_key_value_heads", heads),
        head_dim=getattr(target_config, "head_dim", None) or target_config.hidden_size // heads,
        max_position_embeddings=target_config.max_position_embeddings,
        rms_norm_eps=getattr(target_config, "rms_norm_eps", 1e-6),
        initializer_range=DRAFT_SCALE,
        num_target_layers=target_config.num_hidden_layers,
        dflash_config=draft_options(kind, target_config, vocab),
    )


def build_drafter(kind: str, target: Any, vocab: int, seed: int = DRAFT_SEED) -> Any:
    """A randomly initialised drafter of ``kind`` ("dflash1": DFlash, or "dflash2") for ``target``,
    float32, eval mode, the same for the same seed. DFlash2's convolution kernels are left
    uninitialised by the package's ``post_init`` (``torch.empty``): drawn here."""
    from dflash.model import DFlash2DraftModel, DFlashDraftModel

    cls = {"dflash1": DFlashDraftModel, "dflash2": DFlash2DraftModel}[kind]
    torch.manual_seed(seed)
    drafter = cls(draft_config(kind, target.config, vocab)).to(torch.float32).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in drafter.named_parameters():
            if name.endswith("base_kernel"):
                parameter.copy_(DRAFT_SCALE * torch.randn(parameter.shape, generator=generator))
    if not all(bool(torch.isfinite(p).all()) for p in drafter.parameters()):
        raise RuntimeError(f"the {kind} drafter has non-finite weights")
    return drafter


Block = tuple[int, tuple[int, ...]]
"""One target call: the position of its first token and the tokens it was given."""


def record_blocks(target: Any) -> list[Block]:
    """Every call of ``target`` from now on, as a :data:`Block` (a forward pre-hook)."""
    blocks: list[Block] = []

    def hook(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = args[0] if args else kwargs["input_ids"]
        positions = kwargs.get("position_ids")
        start = int(positions[0, 0]) if positions is not None else 0
        blocks.append((start, tuple(int(t) for t in ids[0])))

    target.register_forward_pre_hook(hook, with_kwargs=True)
    return blocks


def rounds_of(blocks: Sequence[Block], sequence: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """(drafts, accepted) of each verification call after the prefill (the first call):
    a block's drafts are its tokens after the first; accepted, those equal in order to the
    committed tokens after its start (a call drafting nothing is no round)."""
    out = []
    for start, block in blocks[1:]:
        drafts = block[1:]
        if not drafts:
            continue
        committed = sequence[start + 1 : start + 1 + len(drafts)]
        accepted = 0
        for drafted, kept in zip(drafts, committed, strict=False):
            if drafted != kept:
                break
            accepted += 1
        out.append((len(drafts), accepted))
    return tuple(out)


def dflash_engine(
    config: SpeculativeConfig, target: Any, law_target: Any, model: AuditModel
) -> Engine:
    """The engine: one ``dflash_generate`` call per run, seeded through torch's global
    generator; the control runs the DFlash drafter's loop with ``block_size`` 1."""
    from dflash.model import dflash_generate

    kind = "dflash1" if config.drafter == "none" else config.drafter
    drafter = build_drafter(kind, target, model.vocab)
    stop = list(model.eos) if stops_at_eos(config) else None
    block_size = 1 if config.drafter == "none" else config.k + 1
    sampling = call_sampling(config.sampling)
    blocks = record_blocks(target)

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        torch.manual_seed(seed)
        blocks.clear()
        ids = torch.tensor([list(prompt)], dtype=torch.long)
        out = dflash_generate(drafter, target, ids, num_new_tokens, stop, **sampling,
                              block_size=block_size)  # fmt: skip
        sequence = [int(t) for t in out[0]]
        return Emission(tuple(sequence[len(prompt) :]), rounds_of(blocks, sequence))

    return Engine(
        name=config.name,
        generate=generate,
        target_probs=hf_target_probs(law_target, law_kwargs(config.sampling)),
        prompt=config.prompt,
        eos=tuple(stop) if stop else None,
        greedy=config.greedy,
        max_draft=config.k or None,
    )


def drafter_notes(model: AuditModel) -> list[str]:
    return [
        f"drafters: dflash's DFlashDraftModel / DFlash2DraftModel built from a Qwen3 config "
        f"beside the target ({DRAFT_LAYERS} layer, the target's width and heads), weights "
        f"drawn with seed {DRAFT_SEED} at std {DRAFT_SCALE}; block {K + 1} (K = {K} drafts), "
        f"mask token 0; DFlash2: convolution kernel {CONV_KERNEL}, selector rank "
        f"{SELECTOR_RANK}, top-{min(SELECTOR_TOP_K, model.vocab - 1)} candidates per position",
        "control: the same dflash_generate loop with block_size 1 (no draft)",
        "law: a second copy of the target, one teacher-forced pass, transformers' processors",
    ]


def installed_version() -> str:
    from importlib.metadata import version

    versions = f"transformers {version('transformers')}, torch {torch.__version__}"
    return f"{version('dflash')} ({versions})"


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one dflash configuration in this process; write its entry to ``out``."""
    config = by_name(name, model)
    target, law_target = load_hf(model.target), load_hf(model.target)
    build: Callable[[], Engine] = lambda: dflash_engine(  # noqa: E731
        config, target, law_target, model
    )
    prompt = prompt_shown(config.prompt, config.greedy)
    # gap None: the engine's target is HF transformers on the same weights in this process.
    audit_beside_hf("dflash", installed_version(), config, build, None, plan, out, model,
                    prompt, notes=lambda: drafter_notes(model))  # fmt: skip
