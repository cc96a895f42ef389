"""Loading a set of weights whose report lacks a stage says which stage to run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specproof.e2e.models.loading import SHIPPED_DIR, load_models


def test_a_report_without_the_pool_stage_names_the_missing_stage(tmp_path: Path) -> None:
    shutil.copytree(SHIPPED_DIR, tmp_path, dirs_exist_ok=True)
    report_path = tmp_path / "training.json"
    report = json.loads(report_path.read_text())
    del report["training"]["pool_windows"]
    report_path.write_text(json.dumps(report))
    with pytest.raises(ValueError, match="pool"):
        load_models(tmp_path)


def test_the_shipped_report_loads() -> None:
    models = load_models(SHIPPED_DIR)
    assert models.training["pool"]["windows"] > 0
    assert {"target", "dspark", "eagle"} <= set(models.training)


def test_weights_from_another_folder_are_not_labelled_shipped(tmp_path: Path) -> None:
    shutil.copytree(SHIPPED_DIR, tmp_path, dirs_exist_ok=True)
    assert load_models(tmp_path).source == str(tmp_path)
    assert load_models(SHIPPED_DIR).source == "shipped"
