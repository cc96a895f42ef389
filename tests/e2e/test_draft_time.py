"""The side-by-side drafting-time measure: one median per drafter, bad counts refused."""

from __future__ import annotations

import math

import pytest
import torch

from specproof.e2e.models.loading import SHIPPED_DIR, load_dspark, load_target
from specproof.runners.e2e.experiments.draft_time import main, median_draft_ms


def test_one_finite_median_per_drafter() -> None:
    torch.set_num_threads(1)
    target = load_target(SHIPPED_DIR)
    drafters = {"a": load_dspark(SHIPPED_DIR, target), "b": load_dspark(SHIPPED_DIR, target)}
    prompt = [ord(c) for c in "for item in items:\n    print(item)\n"]
    result = median_draft_ms(target, drafters, [prompt], repeats=1, new_tokens=8)
    assert set(result) == {"a", "b"}
    assert all(math.isfinite(v) and v > 0 for v in result.values())


def test_counts_below_one_are_refused() -> None:
    with pytest.raises(SystemExit):
        main([str(SHIPPED_DIR), "--prompts", "0"])
