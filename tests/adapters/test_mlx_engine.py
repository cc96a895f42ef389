"""The pure parts of the mlx-lm audit (no mlx needed): its configurations, the arguments it
hands mlx-lm, the law it tests against (mlx-lm's sampler chain, worked by hand), and the rounds
read from ``speculative_generate_step``'s flags. One test compares the law with mlx-lm's own
sampler functions and runs only where mlx-lm is installed (the ``audit-mlx`` venv)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from real_engine_configs import assert_each_beside_its_control

from specproof.adapters import mlx_engine as me
from specproof.adapters.registry import engine_named, engine_names
from specproof.subjects.real_models import tiny_model

TINY = tiny_model(Path("models"))


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    configs = me.configurations(TINY)
    assert_each_beside_its_control(configs)
    drafted = {(c.sampling_label, c.drafter, c.k) for c in configs if c.drafter != "none"}
    assert len(drafted) == 7  # every setting with the draft model, T = 1 also with itself
    assert me.by_name("greedy draft model k=3", TINY).greedy
    assert me.by_name("T=1 draft = target k=3", TINY).label == "draft = target k=3"
    with pytest.raises(KeyError, match="no mlx-lm configuration"):
        me.by_name("nonsense", TINY)
    # The localising twins localise (and are not must-fail controls).
    twins = {c.localise: c for c in configs if c.localise}
    assert set(twins) == {me.LAST_TOKEN_LAW, me.WHOLE_PROMPT}
    assert not any(c.lossy_by_design for c in configs)


def test_each_configuration_runs_in_its_own_process() -> None:
    assert "mlx-lm" in engine_names()
    groups = engine_named("mlx-lm").groups(TINY)
    assert groups == [[c.name] for c in me.configurations(TINY)]


def test_sampler_and_processor_arguments() -> None:
    assert me.sampler_kwargs(me.TRUNCATED) == {"temp": 1.0, "top_p": 0.9, "min_p": 0.05,
                                               "top_k": 5}  # fmt: skip
    assert me.sampler_kwargs(me.GREEDY)["temp"] == 0.0
    assert me.processor_kwargs(me.T1) == {}  # no processor at all
    assert me.processor_kwargs(me.PENALISED) == {
        "repetition_penalty": 1.3,
        "repetition_context_size": 20,
    }
    assert me.processor_kwargs(me.PRESENCE) == {"presence_penalty": 5.0,
                                                "presence_context_size": 20}  # fmt: skip
    assert me.processor_kwargs(me.FREQUENCY) == {"frequency_penalty": 5.0,
                                                 "frequency_context_size": 20}  # fmt: skip


def log_probs(*probs: float) -> torch.Tensor:
    return torch.tensor([math.log(p) for p in probs], dtype=torch.float64)


def test_top_p_acts_before_top_k_on_the_full_distribution() -> None:
    # top-p 0.75 on [0.4, 0.3, 0.2, 0.1] keeps three tokens (0.7 of mass before the third);
    # top-k 3 first would renormalise to [4, 3, 2] / 9 and then keep only two.
    sampling = {**me.T1, "top_p": 0.75, "top_k": 3}
    probs = me.chain_probs(log_probs(0.4, 0.3, 0.2, 0.1), sampling)
    assert torch.allclose(probs, torch.tensor([4 / 9, 3 / 9, 2 / 9, 0], dtype=torch.float64))


def test_min_p_and_temperature() -> None:
    # min-p 0.4 keeps p >= 0.4 * 0.5; temperature 0.5 squares the kept probabilities.
    sampling = {**me.T1, "min_p": 0.4, "temp": 0.5}
    probs = me.chain_probs(log_probs(0.5, 0.3, 0.15, 0.05), sampling)
    assert torch.allclose(probs, torch.tensor([25 / 34, 9 / 34, 0, 0], dtype=torch.float64))
    greedy = me.chain_probs(log_probs(0.2, 0.7, 0.1), me.GREEDY)
    assert int(greedy.argmax()) == 1


def test_penalty_divides_positive_and_multiplies_negative_logits_of_recent_tokens() -> None:
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0])
    out = me.penalised(logits, [0, 1, 1], 2.0)
    assert out.tolist() == [1.0, -2.0, 0.5, 3.0]
    # Only the last 20 tokens of the context count: token 3, 21 back, is not penalised.
    assert me.penalised(logits, [3] + [0] * 20, 2.0).tolist() == [1.0, -1.0, 0.5, 3.0]
    assert me.penalised(logits, [0, 1], 0.0) is logits  # 0: no processor


def test_presence_subtracts_once_and_frequency_once_per_occurrence() -> None:
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0])
    assert me.presence_penalised(logits, [0, 1, 1], 0.5).tolist() == [1.5, -1.5, 0.5, 3.0]
    assert me.frequency_penalised(logits, [0, 1, 1], 0.5).tolist() == [1.5, -2.0, 0.5, 3.0]
    # The same window of the last 20 tokens: token 3, 21 back, is not penalised.
    assert me.frequency_penalised(logits, [3] + [0] * 20, 0.1)[3] == 3.0
    assert me.presence_penalised(logits, [3] + [0] * 20, 0.1)[3] == 3.0
    sampling = {**me.T1, "presence_penalty": 0.5}
    assert me.processed(logits, [0, 1, 1], sampling).tolist() == [1.5, -1.5, 0.5, 3.0]


def test_law_penalises_the_whole_prefix() -> None:
    class Logits:
        def __call__(self, sequences: torch.Tensor) -> object:
            logits = torch.zeros(*sequences.shape, 3)
            logits[..., 0] = 1.0
            return type("Out", (), {"logits": logits})()

    sampling = {**me.T1, "repetition_penalty": 2.0}
    probs = me.mlx_target_probs(Logits(), sampling)(torch.tensor([[0, 2, 1]]))
    # Position 2 sees [0, 2, 1]: token 0 is penalised (1 -> 0.5) though the last token is 1.
    e = math.e
    assert torch.allclose(probs[0, 0], torch.tensor([e**0.5, 1, 1]) / (e**0.5 + 2))
    assert torch.allclose(probs[0, 2], torch.tensor([e**0.5, 1, 1]) / (e**0.5 + 2))


@pytest.mark.parametrize(
    ("flags", "k", "total", "rounds"),
    [
        ([False] * 5, 3, 5, ((3, 0), (3, 0), (3, 0), (2, 0), (1, 0))),
        ([True, True, True, False, True], 3, 5, ((3, 3), (1, 1))),
        ([True, False, True, True, False], 3, 5, ((3, 1), (3, 2))),
        ([True, True, True, False], 3, 4, ((3, 3),)),
        ([True, False, True], 1, 3, ((1, 1), (1, 1))),
        ([], 3, 5, ()),
    ],
)
def test_rounds_are_read_from_the_draft_flags(
    flags: list[bool], k: int, total: int, rounds: tuple[tuple[int, int], ...]
) -> None:
    assert me.rounds_from_flags(flags, k, total) == rounds


def test_law_matches_mlx_lms_own_sampler_functions() -> None:
    """Where mlx-lm is installed: the kept set and renormalised law of mlx-lm's top-p, min-p
    and top-k on random rows equal :func:`chain_probs`' (exact up to float32 rounding)."""
    mx = pytest.importorskip("mlx.core", reason="mlx is installed only in the audit-mlx venv")
    sample_utils = pytest.importorskip(
        "mlx_lm.sample_utils", reason="mlx-lm is installed only in the audit-mlx venv"
    )
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        logits = 3 * torch.randn(8, generator=generator)
        sampling = {**me.T1, "top_p": 0.8, "min_p": 0.1, "top_k": 4, "temp": 0.7}
        scores = mx.array((logits - torch.logsumexp(logits, -1)).numpy()[None])
        scores = sample_utils.apply_top_p(scores, 0.8)
        scores = sample_utils.apply_min_p(scores, 0.1)
        scores = sample_utils.apply_top_k(scores, 4)
        theirs = torch.softmax(torch.tensor(mx.array(scores).tolist()[0]) / 0.7, -1)
        ours = me.chain_probs(logits, sampling)
        assert torch.allclose(ours, theirs.to(torch.float64), atol=1e-5)


def test_penalties_match_mlx_lms_own_processors() -> None:
    """Where mlx-lm is installed: ``make_logits_processors``' repetition, presence and frequency
    penalties on random rows and contexts (repeats and tokens outside the window included)
    equal :func:`processed` (up to float32 rounding)."""
    mx = pytest.importorskip("mlx.core", reason="mlx is installed only in the audit-mlx venv")
    sample_utils = pytest.importorskip(
        "mlx_lm.sample_utils", reason="mlx-lm is installed only in the audit-mlx venv"
    )
    generator = torch.Generator().manual_seed(0)
    for sampling in (me.PENALISED, me.PRESENCE, me.FREQUENCY):
        processors = sample_utils.make_logits_processors(**me.processor_kwargs(sampling))
        for _ in range(20):
            logits = 3 * torch.randn(8, generator=generator)
            context = torch.randint(0, 8, (25,), generator=generator).tolist()
            theirs = mx.array(logits.numpy()[None])
            for processor in processors:
                theirs = processor(mx.array(context), theirs)
            ours = me.processed(logits, context, sampling)
            assert torch.allclose(ours, torch.tensor(mx.array(theirs).tolist()[0]), atol=1e-5)


def test_rope_base_is_carried_from_rope_parameters(tmp_path: Path) -> None:
    """transformers 5 nests the RoPE base; mlx-lm's llama reads only a top-level rope_theta
    (docs/findings/mlx_lm_llama_rope_parameters.md), so the adapter hands it over."""
    import json

    def folder(name: str, config: dict[str, object]) -> Path:
        out = tmp_path / name
        out.mkdir()
        (out / "config.json").write_text(json.dumps(config))
        return out

    nested = {"rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"}}
    assert me.rope_override(folder("v5", nested)) == {"rope_theta": 100000.0}
    assert me.rope_override(folder("v4", {**nested, "rope_theta": 100000.0})) == {}
    assert me.rope_override(folder("none", {"vocab_size": 8})) == {}
    scaled = {"rope_parameters": {"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0}}
    with pytest.raises(ValueError, match="rope_type 'llama3' is not carried over"):
        me.rope_override(folder("scaled", scaled))
