"""The end-to-end timing's pure parts (no vLLM): its ABBA order, its per-pair ratios and the
table it writes."""

from __future__ import annotations

from specproof.runners.generate_timing import StepClock, abba_order, markdown, row_of


def test_pairs_alternate_in_abba_order() -> None:
    assert abba_order(3) == [0, 1, 1, 0, 0, 1]
    order = abba_order(10)
    assert order.count(0) == order.count(1) == 10
    # each side runs first in half of the pairs
    assert sum(order[2 * i] == 0 for i in range(10)) == 5


def test_ratios_are_taken_per_pair_and_steps_are_counted() -> None:
    # (wall, cpu, step cpu, steps) per call; specproof's calls take 1.5x, 2x and 3x vLLM's
    theirs = [(1.0, 2.0, 0.1, 10), (2.0, 2.0, 0.1, 12), (3.0, 2.0, 0.1, 11)]
    ours = [(1.5, 4.0, 0.3, 10), (3.0, 4.0, 0.3, 12), (4.5, 4.0, 0.3, 11)]
    row = row_of("m", 64, 24, 3, {0: theirs, 1: ours}, 12.3)
    assert row["wall_ratio"]["median"] == 1.5
    assert row["cpu_ratio"] == {"q1": 2.0, "median": 2.0, "q3": 2.0}
    assert abs(row["step_ratio"]["median"] - 3.0) < 1e-12
    assert row["vllm"]["steps"]["median"] == 11
    assert row["vllm"]["wall_s"]["median"] == 2.0
    table = markdown({"rows": [row], "machine": {"date": "d", "machine": "x", "torch": "t",
                                                 "threads": 1, "vllm": "v", "load_before": [1],
                                                 "load_after": [2]}})  # fmt: skip
    (line,) = [text for text in table.splitlines() if text.startswith("| m |")]
    earlier = {"date": "e", "threads": 2, "load_before": [3], "load_after": [4]}
    merged = markdown({"rows": [row], "machine": {"date": "d", "machine": "x", "torch": "t",
                                                  "threads": 1, "vllm": "v", "load_before": [1],
                                                  "load_after": [2]},
                       "earlier_runs": [earlier]})  # fmt: skip
    assert "Rows of an earlier run ended e (2 threads; load average [3] before" in merged
    assert "| 1.500 (1.500-1.500) | 2.000 (2.000-2.000) |" in line
    assert "| 11 / 11 |" in line


def test_the_step_clock_counts_calls_and_keeps_the_signature() -> None:
    clock = StepClock()

    def forward(self: object, metadata: int, draft_probs: None, logits: int, sm: int) -> int:
        return metadata + logits

    timed = clock.wrap(forward)
    assert timed(None, 1, None, 2, 3) == 3 and clock.calls == 1 and clock.seconds >= 0
    assert timed.__wrapped__ is forward  # type: ignore[attr-defined]
    clock.reset()
    assert clock.calls == 0
