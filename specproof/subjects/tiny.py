"""Tiny seeded transformers models built from config (never downloaded), and the assisted
generation settings the engine audit runs them under.

The target is a 2-layer Llama with V = 6 tokens; the assistant is a Mistral with the target's
weights plus seeded noise as large as the weights, a weak assistant: drafts are rejected often
(the correction path runs) yet accepted in full now and then. Each ``MODULE:FN`` here returns
(target, assistant, generate kwargs), as ``specproof audit-engine --hf`` expects.
"""

from __future__ import annotations

import tempfile
from functools import cache
from typing import Any

import torch

VOCAB = 6
EOS = VOCAB - 1
SCALE = 0.3
"""Initializer std: large enough for the target's rows to differ visibly from uniform."""
ASSISTANT_NOISE = 1.0
"""Noise on the assistant's copy of the target's weights, relative to SCALE."""
DRAFT = 3
PROMPT = (1, 2, 3)

HFSetup = tuple[Any, Any, dict[str, Any]]


def _config(cls: Any, scale: float) -> Any:
    return cls(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        initializer_range=scale,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=False,
    )


def tiny_models(
    seed: int = 0, scale: float = SCALE, noise: float = ASSISTANT_NOISE, eos: bool = False
) -> tuple[Any, Any]:
    """(Llama target, Mistral assistant), both in eval mode, the same for the same seed; with
    ``eos`` token 5 ends generation, otherwise it is an ordinary token."""
    from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    torch.manual_seed(seed)
    target = LlamaForCausalLM(_config(LlamaConfig, scale)).eval()
    assistant = MistralForCausalLM(_config(MistralConfig, scale)).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    weights = {
        key: value + noise * scale * torch.randn(value.shape, generator=generator)
        if value.dim() > 1
        else value
        for key, value in target.state_dict().items()
    }
    assistant.load_state_dict(weights)
    for model in (target, assistant):
        model.generation_config.eos_token_id = EOS if eos else None
        model.generation_config.pad_token_id = EOS
    return target, assistant


def assisted(eos: bool = False, **sampling: Any) -> HFSetup:
    """Drafts of up to DRAFT tokens, no confidence cut, with these sampling kwargs."""
    target, assistant = tiny_models(eos=eos)
    kwargs = {
        "num_assistant_tokens": DRAFT,
        "num_assistant_tokens_schedule": "constant",
        "assistant_confidence_threshold": 0.0,
        **sampling,
    }
    return target, assistant, kwargs


def sample_t1() -> HFSetup:
    return assisted(do_sample=True)


def sample_t07() -> HFSetup:
    return assisted(do_sample=True, temperature=0.7)


def sample_top_k3() -> HFSetup:
    return assisted(do_sample=True, top_k=3)


def sample_top_p09() -> HFSetup:
    return assisted(do_sample=True, top_p=0.9)


def sample_repetition() -> HFSetup:
    return assisted(do_sample=True, repetition_penalty=1.3)


def sample_eos() -> HFSetup:
    """T = 1 with token 5 as EOS: runs end early, and the rows see the shorter lists."""
    return assisted(eos=True, do_sample=True)


def greedy() -> HFSetup:
    return assisted(do_sample=False)


ENSEMBLE_WEIGHT = 0.5
"""transformers' ``assistant_ensemble_weight``: verification against w p + (1 - w) q, biased
by its own documentation; at w = 0.5 the first token's law moves by half of TV(p, q)."""


def sample_ensemble() -> HFSetup:
    """T = 1 with transformers' biased ensemble verification on: a must-fail control."""
    return assisted(do_sample=True, assistant_ensemble_weight=ENSEMBLE_WEIGHT)


def hf_defaults() -> HFSetup:
    """transformers' own assistant defaults (20 drafts, confidence threshold 0.4), at T = 1."""
    target, assistant = tiny_models()
    return target, assistant, {"do_sample": True}


MTP_MASK_TOKEN = 0
"""DFlash's mask token: any id of the vocabulary (the drafter only embeds it)."""


def _mellum_config() -> Any:
    from transformers import MellumConfig

    return MellumConfig(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        moe_intermediate_size=16,
        num_experts=4,
        num_experts_per_tok=2,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=64,
        sliding_window=64,
        initializer_range=SCALE,
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=False,
        num_mtp_layers=1,
        mtp_layer_types=["full_attention"],
    )


@cache
def _mtp_checkpoint(seed: int) -> tempfile.TemporaryDirectory[str]:
    """A seeded tiny Mellum (MoE) saved with one seeded MTP layer in its checkpoint:
    transformers loads MTP weights from the checkpoint on disk at every ``generate`` call."""
    import safetensors.torch
    from transformers import MellumForCausalLM
    from transformers.modeling_layers import MtpModel

    torch.manual_seed(seed)
    model = MellumForCausalLM(_mellum_config()).eval()
    head = MtpModel(model, 1)
    shared = ("embed_tokens", "shared_head", "rotary_emb")
    # MtpModel built outside from_pretrained leaves its experts' weights as uninitialised memory
    # (NaN in some processes): draw every matrix of the head from a seeded generator instead.
    generator = torch.Generator().manual_seed(seed + 3)
    with torch.no_grad():
        for name, weight in head.named_parameters():
            if weight.dim() > 1 and not name.startswith(shared):
                weight.copy_(SCALE * torch.randn(weight.shape, generator=generator))
    mtp = {
        f"mtp.{k}": v.contiguous() for k, v in head.state_dict().items() if not k.startswith(shared)
    }
    folder = tempfile.TemporaryDirectory(prefix="specproof-mtp-")
    model.save_pretrained(folder.name)
    path = f"{folder.name}/model.safetensors"
    weights = safetensors.torch.load_file(path)
    safetensors.torch.save_file({**weights, **mtp}, path, metadata={"format": "pt"})
    return folder


def mtp_target(seed: int = 0, eos: bool = False) -> Any:
    """The tiny Mellum with its MTP layer (a seeded random head, a weak drafter of one token
    per round), loaded through transformers' own checkpoint path."""
    from transformers import MellumForCausalLM

    model = MellumForCausalLM.from_pretrained(_mtp_checkpoint(seed).name).eval()
    model.generation_config.eos_token_id = EOS if eos else None
    model.generation_config.pad_token_id = EOS
    return model


DFLASH_BLOCK = DRAFT
"""DFlash's block: the anchor (the target's last token) and ``DFLASH_BLOCK - 1`` drafts. Its
first round is the target's prefill (no draft), so within the audit's 4 tokens a block of 3
can be accepted in full (2 drafts and the bonus token fill the 3 tokens left); a block of 4
would always be cut by the length budget."""


def dflash_assistant(seed: int = 0, block_size: int = DFLASH_BLOCK) -> Any:
    """A seeded DFlash drafter (transformers' MuseGlimmerAssistantModel, one layer) reading the
    hidden states of both target layers; it drafts ``block_size - 1`` tokens per round."""
    from transformers import MuseGlimmerAssistantConfig, MuseGlimmerAssistantModel

    torch.manual_seed(seed + 2)
    config = MuseGlimmerAssistantConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=64,
        sliding_window=64,
        layer_types=["full_attention"],
        bos_token_id=0,
        eos_token_id=EOS,
        pad_token_id=EOS,
        block_size=block_size,
        mask_token_id=MTP_MASK_TOKEN,
        target_layer_ids=[0, 1],
    )
    config.initializer_range = SCALE  # a PreTrainedConfig field the class does not declare
    return MuseGlimmerAssistantModel(config).eval()


def mtp(eos: bool = False, **sampling: Any) -> HFSetup:
    """transformers' MTP candidate generator (``use_mtp=True``), no assistant model."""
    return mtp_target(eos=eos), None, {"use_mtp": True, **sampling}


def dflash(eos: bool = False, **sampling: Any) -> HFSetup:
    """transformers' DFlash candidate generator (``speculation_type="dflash"``) on the Llama
    target of :func:`tiny_models`."""
    target, _ = tiny_models(eos=eos)
    return target, dflash_assistant(), {"speculation_type": "dflash", **sampling}


def mtp_t1() -> HFSetup:
    return mtp(do_sample=True)


def mtp_top_k3() -> HFSetup:
    return mtp(do_sample=True, top_k=3)


def mtp_eos() -> HFSetup:
    return mtp(eos=True, do_sample=True)


def mtp_greedy() -> HFSetup:
    return mtp(do_sample=False)


def dflash_t1() -> HFSetup:
    return dflash(do_sample=True)


def dflash_top_k3() -> HFSetup:
    return dflash(do_sample=True, top_k=3)


def dflash_eos() -> HFSetup:
    return dflash(eos=True, do_sample=True)


def dflash_greedy() -> HFSetup:
    return dflash(do_sample=False)


def greedy_ensemble() -> HFSetup:
    """Greedy with the ensemble weight on: transformers compares drafts with argmax(w p +
    (1 - w) q), so a token the target's argmax would not pick can be emitted."""
    return assisted(do_sample=False, assistant_ensemble_weight=ENSEMBLE_WEIGHT)


CONFIGS = {
    "t1": sample_t1,
    "t0.7": sample_t07,
    "top-k 3": sample_top_k3,
    "top-p 0.9": sample_top_p09,
    "repetition 1.3": sample_repetition,
    "eos": sample_eos,
}
"""The sampled settings the installed transformers is audited under (name -> setup)."""

NEW_GENERATORS = {
    "MTP t1": mtp_t1,
    "MTP top-k 3": mtp_top_k3,
    "MTP eos": mtp_eos,
    "MTP greedy": mtp_greedy,
    "DFlash t1": dflash_t1,
    "DFlash top-k 3": dflash_top_k3,
    "DFlash eos": dflash_eos,
    "DFlash greedy": dflash_greedy,
}
"""transformers 5.25's MTP and DFlash candidate generators on tiny seeded drafters."""

BIASED = {
    "assistant_ensemble_weight 0.5": sample_ensemble,
    "assistant_ensemble_weight 0.5, greedy": greedy_ensemble,
}
"""transformers' own lossy mode (biased by its documentation): must-fail controls."""
