"""Deterministic corpus splits, and the weights round trip through the real loading code."""

from __future__ import annotations

from pathlib import Path

import torch
from e2e.toy_models import toy_models

from specproof.e2e.data.corpora import (
    SEPARATOR,
    Document,
    prompts_from,
    prose_documents,
    split_documents,
)
from specproof.e2e.models.loading import load_dspark, load_eagle, load_target
from specproof.e2e.models.weight_files import save_weights


def test_splits_are_deterministic_and_disjoint() -> None:
    docs = prose_documents()
    first, second = split_documents("prose", docs), split_documents("prose", docs[::-1])
    assert first == second
    train = {d.name for d in first.train}
    held = {d.name for d in first.held_out}
    assert held and train and not train & held and train | held == {d.name for d in docs}
    stream = first.stream("held_out")
    assert stream.dtype.name == "uint8"
    for prompt in prompts_from(stream, 5, 16, seed=0):
        assert len(prompt) == 16 and SEPARATOR not in prompt


def test_documents_never_hold_the_separator() -> None:
    corpus = split_documents("x", [Document("a", b"ab"), Document("b", b"cd")])
    assert bytes(corpus.stream("train")).count(bytes([SEPARATOR])) <= 1


def test_weights_round_trip(tmp_path: Path) -> None:
    models = toy_models(drafter_steps=2)
    save_weights(models.target, models.target.config.as_dict(), tmp_path, "target")
    save_weights(models.dspark, models.dspark.config.as_dict(), tmp_path, "dspark")
    save_weights(models.eagle, models.eagle.config.as_dict(), tmp_path, "eagle")
    target = load_target(tmp_path)
    tokens = torch.randint(0, 256, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(target(tokens).logits, models.target(tokens).logits)
    for loaded, original in (
        (load_dspark(tmp_path, target), models.dspark),
        (load_eagle(tmp_path, target), models.eagle),
    ):
        for (name, a), (_, b) in zip(
            loaded.state_dict().items(), original.state_dict().items(), strict=True
        ):
            assert torch.equal(a, b), name


def test_shipped_weights_are_the_plan_of_nox_train_target() -> None:
    """The committed files: bf16, under 40 MB with the drafters' pool, the configs and step
    counts of specproof.e2e.plans.SHIPPED, and loadable into float32 models of the stated
    sizes."""
    import json

    from safetensors import safe_open

    from specproof.e2e.models.loading import SHIPPED_DIR, load_models
    from specproof.e2e.models.target import parameter_count
    from specproof.e2e.plans import SHIPPED as SHIP

    files = sorted(SHIPPED_DIR.glob("*.safetensors"))
    assert [f.stem for f in files] == ["dspark", "eagle", "target"]
    pool = SHIPPED_DIR / "pool.pt"
    assert sum(f.stat().st_size for f in [*files, pool]) < 40 * 2**20
    windows = torch.load(pool, weights_only=True)
    assert windows.dtype == torch.uint8 and windows.shape == (SHIP.pool_size, SHIP.window)
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            assert {handle.get_tensor(k).dtype for k in handle.keys()} == {torch.bfloat16}  # noqa: SIM118
    report = json.loads((SHIPPED_DIR / "training.json").read_text())
    assert report["training"]["target"]["steps"] == SHIP.target_steps
    assert report["training"]["dspark"]["steps"] == SHIP.drafter_steps
    assert report["training"]["eagle"]["steps"] == SHIP.drafter_steps
    models = load_models(SHIPPED_DIR)
    assert models.target.config == SHIP.target
    assert 5_000_000 <= parameter_count(models.target) <= 10_000_000
    dspark, eagle = parameter_count(models.dspark), parameter_count(models.eagle)
    assert abs(dspark - eagle) <= 0.001 * dspark
    assert models.target.embed.weight.dtype == torch.float32
