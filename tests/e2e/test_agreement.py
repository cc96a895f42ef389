"""The teacher-forced agreement table: its greedy text and its scores."""

from __future__ import annotations

import torch
from e2e.toy_models import toy_models

from specproof.e2e.decoding.rounds import autoregressive_generate
from specproof.e2e.evaluation.agreement import agreement_table, greedy_continuation

PROMPTS = [[ord(c) for c in text] for text in ("def f(x):", "The quick")]


def test_greedy_continuation_is_the_targets_cached_greedy_decode() -> None:
    """Whole-window passes here, the KV-cached path in decode: two routes to one chain."""
    torch.set_num_threads(1)
    models = toy_models()
    starts = torch.tensor(PROMPTS)
    continued = greedy_continuation(models.target, starts, starts.shape[1] + 12)
    cached = autoregressive_generate(models.target, PROMPTS, 12, temperature=0.0)
    assert continued[:, : starts.shape[1]].tolist() == PROMPTS
    assert continued[:, starts.shape[1] :].tolist() == cached.tokens


def test_scores_are_rates_per_drafted_position() -> None:
    torch.set_num_threads(1)
    models = toy_models()
    windows = torch.tensor([list(b"def f(x):\n    return x + 1\n  # done"[:32])] * 2)
    table = agreement_table(models.target, models.dspark, models.eagle, windows, 8)
    gamma = models.dspark.gamma
    for text in ("real", "greedy"):
        dspark, eagle = table[text]["dspark"], table[text]["eagle"]
        assert len(dspark["argmax_agreement"]) == len(dspark["overlap"]) == gamma
        assert len(eagle["argmax_agreement"]) == len(eagle["overlap"]) == 1
        for value in [*dspark["argmax_agreement"], *dspark["overlap"], *eagle["overlap"]]:
            assert 0.0 <= value <= 1.0 + 1e-6
