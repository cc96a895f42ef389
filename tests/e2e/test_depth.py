"""DSpark's depth at EAGLE-3's drafting time: the choice rule and the side-by-side table."""

from __future__ import annotations

import math

import pytest
import torch

from specproof.e2e.models.loading import SHIPPED_DIR, load_eagle, load_target
from specproof.runners.e2e.experiments.depth_draft_time import (
    EAGLE,
    deepest_within,
    depth_table,
    dspark_of_depth,
    main,
)


def test_the_deepest_drafter_within_the_budget_is_chosen() -> None:
    times = {1: 2.0, 2: 2.5, 3: 3.1, 4: 2.9, 5: 4.0}
    assert deepest_within(times, 3.0) == 4  # by depth, not by the first that exceeds it
    assert deepest_within(times, 2.5) == 2  # at most: equal time fits
    assert deepest_within(times, 1.0) is None


def test_one_finite_time_per_drafter_and_parameters_grow_with_depth() -> None:
    torch.set_num_threads(1)
    target = load_target(SHIPPED_DIR)
    result = depth_table(
        target, load_eagle(SHIPPED_DIR, target), [1, 2], prompts=1, repeats=1, new_tokens=8
    )
    times = result["draft_ms_per_round"]
    assert set(times) == {"dspark_1_layers", "dspark_2_layers", EAGLE}
    assert all(math.isfinite(row["ms"]) and row["ms"] > 0 for row in times.values())
    assert times["dspark_1_layers"]["parameters"] < times["dspark_2_layers"]["parameters"]
    # the shipped depth at the shipped plan has the shipped drafter's parameter count
    assert times["dspark_2_layers"]["parameters"] == 1283649
    assert result["chosen_depth"] in (None, 1, 2)
    assert len(result["load_average_before"]) == 3


def test_depths_are_seeded() -> None:
    target = load_target(SHIPPED_DIR)
    first, second = dspark_of_depth(target, 3), dspark_of_depth(target, 3)
    for name, value in first.state_dict().items():
        torch.testing.assert_close(second.state_dict()[name], value, atol=0, rtol=0)


def test_bad_depths_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--depths", "0"])
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
