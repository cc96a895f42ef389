"""min-p in ``audit-engine``'s HF law: the teacher-forced law with transformers' MinPLogitsWarper
is the law transformers' own sampling loop draws from, and min-p binds there (it removes
tokens that carry mass without it)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip(
    "transformers", reason="the HF engine audit needs the hf extra (nox -s tests installs it)"
)

from specproof.adapters.hf import hf_engine
from specproof.subjects import tiny


def test_the_hf_law_applies_min_p_as_generate_does() -> None:
    target, _, _ = tiny.assisted()
    kwargs = {"do_sample": True, "temperature": 0.8, "top_k": 5, "min_p": 0.3}
    engine = hf_engine(target, None, kwargs)
    prompt = torch.tensor([[1, 2, 3]])
    torch.manual_seed(0)
    out = target.generate(
        prompt, max_new_tokens=4, output_scores=True, return_dict_in_generate=True, **kwargs
    )
    ours = engine.target_probs(out.sequences)[0, 2:6]
    theirs = torch.softmax(torch.stack(out.scores)[:, 0], dim=-1)
    torch.testing.assert_close(ours, theirs)
    without = hf_engine(target, None, {**kwargs, "min_p": None}).target_probs(out.sequences)
    removed = (ours == 0) & (without[0, 2:6] > 0)
    assert bool(removed.any()), (ours, without[0, 2:6])
