"""Tiny Llama target and draft for auditing real engines (vLLM, llama.cpp), built from config
with fixed seeds and saved with a locally made tokenizer: nothing is downloaded.

Both are 2-layer Llamas with V = 8 tokens and head_dim 32 (vLLM's CPU attention refuses 16).
The draft is the target's weights plus seeded noise, so its drafts are rejected often (the
correction path runs) yet accepted in full now and then. Token 0 is BOS and token 7 EOS in the
tokenizer; the audits sample with EOS ignored, so every token is an ordinary one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from specproof.models import AuditModel, ModelPaths

VOCAB = 8
BOS = 0
EOS = VOCAB - 1
HIDDEN = 64
HEADS = 2
"""HIDDEN / HEADS = 32: the smallest head size vLLM's CPU attention accepts."""
SCALE = 0.2
"""Initializer std: logits of a few units, so the rows are far from uniform and from one-hot."""
DRAFT_NOISE = 0.25
"""Noise on the draft's copy of the target's weights, relative to SCALE: TV about 0.4 from the
target's rows, so a draft of 4 is accepted in full about one time in eight."""
MAX_POSITIONS = 128
SEED = 0
PROMPT = (1, 2, 3, 1, 2, 3, 1, 2)
"""Repeats an n-gram, so n-gram and prompt-lookup drafters find something to propose."""
LOOKUP_PROMPT = (4, 4, 4, 4, 4, 4, 4, 4)
"""The target's own greedy continuation, repeated: its argmax continuation of this prompt is 4
again for every one of the 12 tokens checked (HF on these weights); the first has probability
0.65 at T = 1. Prompt lookup then drafts 4, 4, 4 after a sampled 4, and the first draft (made
after the first sampled token) is accepted in full with probability 0.184 (HF: the sum over
the first token of its probability times the target's probability of the three drafted
tokens), the highest among the length-8 prompts repeating a cycle of 1-4 tokens. After
:data:`PROMPT` that probability is 1.3e-4: no draft of 3 was accepted in full in an earlier
audit of 1500 llama.cpp runs at T = 1."""
PENALTY_PROMPT = (4, 5, 4, 5, 4, 5, 4, 5)
"""A repeated 2-cycle of tokens the target favours, for the repetition-penalty runs: the
penalty over the whole prompt moves the first token's law by TV 0.17 from the law with only
the prompt's last token penalised (HF on these weights; after :data:`PROMPT` the shift is
0.03, under the audit's delta of 0.1), so a run that leaves prompt tokens out of the
penalty's context shows at the audit's delta."""
NAME = "tiny Llama (V = 8)"
TOKEN_TEXT = ("<s>", "a", "b", "c", "d", "e", "ab", "</s>")
MERGES = [("a", "b")]
"""One merge: llama.cpp refuses a BPE vocabulary without merges."""


def llama_config(scale: float = SCALE) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        num_key_value_heads=1,
        max_position_embeddings=MAX_POSITIONS,
        initializer_range=scale,
        bos_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=EOS,
        tie_word_embeddings=False,
    )


def tiny_pair(seed: int = SEED, noise: float = DRAFT_NOISE) -> tuple[Any, Any]:
    """(target, draft) Llamas in eval mode, float32, the same for the same seed."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    target = LlamaForCausalLM(llama_config()).eval()
    draft = LlamaForCausalLM(llama_config()).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    draft.load_state_dict(
        {
            key: value + noise * SCALE * torch.randn(value.shape, generator=generator)
            if value.dim() > 1
            else value
            for key, value in target.state_dict().items()
        }
    )
    return target, draft


def tokenizer_json() -> dict[str, Any]:
    """A byte-level BPE over five letters and one merge ("ab"), BOS and EOS as special tokens.
    Byte-level BPE is what llama.cpp's converter reads as a "gpt2" vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {text: index for index, text in enumerate(TOKEN_TEXT)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=MERGES))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([TOKEN_TEXT[BOS], TOKEN_TEXT[EOS]])
    out: dict[str, Any] = json.loads(tokenizer.to_str())
    return out


def save_tokenizer(folder: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json()))
    fast = PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "tokenizer.json"),
        bos_token=TOKEN_TEXT[BOS],
        eos_token=TOKEN_TEXT[EOS],
        pad_token=TOKEN_TEXT[EOS],
    )
    fast.save_pretrained(folder)


def save_model(model: Any, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    # No sampling fields: an engine that reads generation_config.json must get none from it.
    model.generation_config.do_sample = False
    model.save_pretrained(folder, safe_serialization=True)
    save_tokenizer(folder)


def build_models(folder: Path, seed: int = SEED) -> ModelPaths:
    """Save the target and the draft under ``folder`` (rebuilt every call: it takes seconds)."""
    target, draft = tiny_pair(seed)
    paths = ModelPaths(folder / "target", folder / "draft")
    save_model(target, paths.target)
    save_model(draft, paths.draft)
    return paths


def tiny_model(folder: Path) -> AuditModel:
    """The models :func:`build_models` saved under ``folder``, as the value adapters take
    (its EAGLE heads are saved there by :func:`.real_eagle.save_eagle`, its DFlash head by
    :func:`.real_dflash.save_dflash`, for vLLM)."""
    return AuditModel(
        name=NAME,
        target=folder / "target",
        vocab=VOCAB,
        eos=(EOS,),
        prompt=PROMPT,
        draft=folder / "draft",
        lookup_prompt=LOOKUP_PROMPT,
        penalty_prompt=PENALTY_PROMPT,
        heads=("eagle", "eagle3", "dflash"),
    )


def load_target(path: Path) -> Any:
    """The saved target as HF transformers runs it: float32, eval mode."""
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()
