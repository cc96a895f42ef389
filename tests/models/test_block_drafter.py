"""The seeded DFlash block drafter written beside a target (transformers' layout): its shape
follows the target's config, transformers' own DFlash generator drafts whole blocks with it on
the tiny Llama, and the HF adapter offers its configurations beside their controls only where
the model has one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from specproof.adapters import hf_assisted
from specproof.models import AuditModel, block_drafter
from specproof.subjects.real_models import build_models, tiny_model

pytestmark = pytest.mark.skipif(
    not block_drafter.available(), reason="transformers before 5.25 has no DFlash drafter class"
)


def test_feature_layers_spread_over_the_depth_and_skip_the_last() -> None:
    assert block_drafter.feature_layers(30) == [1, 15, 28]
    assert block_drafter.feature_layers(2) == [0, 1]
    assert block_drafter.feature_layers(5) == [1, 2, 3]


def test_a_block_of_drafts_and_its_anchor_fill_the_audits_tokens() -> None:
    assert block_drafter.BLOCK - 1 == hf_assisted.K


@pytest.fixture(scope="module")
def model_with_block_drafter(tmp_path_factory: pytest.TempPathFactory) -> AuditModel:
    folder = tmp_path_factory.mktemp("models")
    build_models(folder)
    model = tiny_model(folder)
    block_drafter.write_block_drafter(model.target, folder / block_drafter.HEAD)
    return dataclasses.replace(model, heads=(*model.heads, block_drafter.HEAD))


def test_the_drafter_takes_the_targets_widths(model_with_block_drafter: AuditModel) -> None:
    import json

    model = model_with_block_drafter
    target = json.loads((model.target / "config.json").read_text())
    drafter = block_drafter.load_block_drafter(model.head(block_drafter.HEAD))
    assert drafter.config.hidden_size == target["hidden_size"]
    assert drafter.config.target_layer_ids == [0, 1]
    assert drafter.config.block_size == block_drafter.BLOCK


def test_transformers_drafts_whole_blocks_with_it(model_with_block_drafter: AuditModel) -> None:
    model = model_with_block_drafter
    configs = hf_assisted.configurations(model)
    by_name = {c.name: c for c in configs}
    dflash = [c for c in configs if c.drafter == "dflash"]
    assert [c.name for c in dflash] == ["T=1 DFlash block k=3", "truncated DFlash block k=3",
                                        "greedy DFlash block k=3"]  # fmt: skip
    assert all(by_name[c.control].drafter == "none" for c in dflash)
    engine = hf_assisted.assisted_engine(dflash[0], model)
    emission = engine.generate(engine.prompt, 5, 3)
    assert 1 <= len(emission.tokens) <= 5  # the tiny target may end at its EOS
    assert emission.rounds[0] == (0, 0)  # the prefill round drafts nothing
    assert emission.rounds[1][0] == 3  # then a whole block


def test_no_block_drafter_no_dflash_configurations(tmp_path: Path) -> None:
    model = tiny_model(tmp_path)
    assert not [c for c in hf_assisted.configurations(model) if c.drafter == "dflash"]
