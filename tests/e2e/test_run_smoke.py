"""The whole pipeline at toy size: train, save, reload, measure, write the tables."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from specproof.e2e import run


def test_smoke_run_writes_tables(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    results = run.main(
        ["--smoke", "--out", str(tmp_path / "tables"), "--artifacts", str(tmp_path / "w")]
    )
    markdown = (tmp_path / "tables" / "e2e.md").read_text()
    data = json.loads((tmp_path / "tables" / "e2e.json").read_text())
    assert "The paper's Table 1 figures" in markdown
    assert set(data["evaluation"]) == {"code/T=1", "code/T=0", "prose/T=1", "prose/T=0"}
    for row in results["evaluation"].values():
        for name in ("dspark", "eagle"):
            assert 1.0 <= row[name]["tau"] <= results["plan"]["dspark"]["gamma"] + 1
    assert all(not f["rejected"] for f in results["lossless"])
    assert any(p.name.startswith("target.") for p in (tmp_path / "w").iterdir())
