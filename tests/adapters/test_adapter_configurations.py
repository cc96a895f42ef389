"""The real-engine adapters' shared configuration pieces (no engine needed)."""

from __future__ import annotations

import torch

from specproof.adapters.configurations import SpeculativeConfig, batched_engine
from specproof.audit.engine.subject import Emission


def test_a_batched_engine_runs_single_requests_through_its_batch_path() -> None:
    calls: list[tuple[list[tuple[int, ...]], int, int]] = []

    def generate_many(prompts: list[tuple[int, ...]], tokens: int, seed: int) -> list[Emission]:
        calls.append((prompts, tokens, seed))
        return [Emission(tuple(range(tokens))) for _ in prompts]

    config = SpeculativeConfig("T=1 draft model k=3", "draft", 3, {"do_sample": True}, "T = 1")
    engine = batched_engine(config, lambda s: torch.ones(*s.shape, 8) / 8, generate_many, 64)
    assert engine.generate([1, 2, 3], 4, 7).tokens == (0, 1, 2, 3)
    assert calls == [([(1, 2, 3)], 4, 7)]
    assert (engine.name, engine.prompt, engine.max_draft, engine.batch) == (
        config.name, config.prompt, 3, 64,
    )  # fmt: skip
    assert engine.greedy is config.greedy and not engine.eos_ids
