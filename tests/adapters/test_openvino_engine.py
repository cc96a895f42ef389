"""The pure parts of the OpenVINO GenAI audit (no OpenVINO needed): its configurations, the
request fields it hands the engine, the per-request seeds, and the law it tests against
(OpenVINO GenAI's sampling chain, worked by hand). The tests that build ``GenerationConfig``s
run only where openvino_genai is installed (the ``audit-openvino`` venv)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from real_engine_configs import assert_each_beside_its_control

from specproof.adapters import openvino_engine as oe
from specproof.adapters.registry import engine_named, engine_names
from specproof.subjects.real_models import tiny_model

TINY = tiny_model(Path("models"))

NO_OPENVINO = importlib.util.find_spec("openvino_genai") is None
NO_OPENVINO_REASON = "openvino_genai is installed only in the audit-openvino venv"


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    configs = oe.configurations(TINY)
    assert_each_beside_its_control(configs)
    drafted = {(c.sampling_label, c.drafter) for c in configs if c.drafter != "none"}
    # the draft model and prompt lookup in each of six settings, at T = 1 also the target
    assert len(drafted) == 13
    assert oe.by_name("greedy penalties draft model k=3", TINY).greedy
    assert oe.by_name("penalties prompt lookup k=3", TINY).prompt == TINY.lookup
    assert oe.by_name("greedy draft model k=3", TINY).greedy
    assert not oe.by_name("T=1 prompt lookup k=3", TINY).greedy
    assert oe.by_name("T=1 prompt lookup k=3", TINY).label == "prompt lookup k=3"
    assert oe.by_name("T=1 draft = target k=3", TINY).drafter == "target"
    with pytest.raises(KeyError, match="no OpenVINO GenAI configuration"):
        oe.by_name("nonsense", TINY)


def test_each_configuration_runs_in_its_own_process() -> None:
    assert "openvino" in engine_names() and engine_named("openvino").label == "OpenVINO GenAI"
    assert engine_named("openvino").groups(TINY) == [[c.name] for c in oe.configurations(TINY)]


def test_request_fields() -> None:
    lookup = oe.generation_kwargs(oe.by_name("truncated prompt lookup k=3", TINY), 5, 11)
    assert lookup == {
        "max_new_tokens": 5, "ignore_eos": True, "do_sample": True, "rng_seed": 11,
        "temperature": 1.0, "top_k": 5, "top_p": 0.9, "min_p": 0.05,
        "num_assistant_tokens": 3, "max_ngram_size": 2,
    }  # fmt: skip
    draft = oe.generation_kwargs(oe.by_name("T=1 draft model k=3", TINY), 5, 0)
    assert draft["num_assistant_tokens"] == 3 and "max_ngram_size" not in draft
    control = oe.generation_kwargs(oe.by_name("greedy no draft", TINY), 8, 0)
    assert control == {"max_new_tokens": 8, "ignore_eos": True, "do_sample": False,
                       "rng_seed": 0}  # fmt: skip


def test_penalties_and_logprobs_reach_the_request() -> None:
    penalised = oe.generation_kwargs(oe.by_name("penalties draft model k=3", TINY), 5, 0)
    assert penalised["repetition_penalty"] == 1.3
    assert penalised["presence_penalty"] == 0.5 and penalised["frequency_penalty"] == 0.5
    greedy = oe.generation_kwargs(oe.by_name("greedy penalties no draft", TINY), 8, 0)
    assert greedy["repetition_penalty"] == 1.3 and not greedy["do_sample"]
    logprobs = oe.generation_kwargs(oe.by_name("truncated logprobs draft model k=3", TINY), 5, 0)
    assert logprobs["logprobs"] == 1 and logprobs["top_k"] == 5
    plain = oe.generation_kwargs(oe.by_name("T=1 no draft", TINY), 5, 0)
    assert not {"repetition_penalty", "presence_penalty", "frequency_penalty", "logprobs"} & {
        *plain
    }


def test_penalties_in_openvinos_order_and_signs() -> None:
    # Token 0 in the prompt, token 1 generated twice, token 2 once, token 3 never.
    logits = torch.tensor([2.0, 3.0, -1.0, 1.0], dtype=torch.float64)
    sampling = {**oe.T1, "repetition_penalty": 2.0, "presence_penalty": 0.5,
                "frequency_penalty": 0.25}  # fmt: skip
    out = oe.penalised(logits, [0], [1, 2, 1], sampling)
    # 0: 2 / 2 = 1 (prompt: repetition only). 1: 3 / 2 = 1.5, - 0.5 = 1.0, - 0.25 * 2 = 0.5.
    # 2: -1 * 2 = -2, + 0.5 = -1.5, + 0.25 = -1.25 (negative logits move up, towards 0).
    assert out.tolist() == [1.0, 0.5, -1.25, 1.0]
    # The sign is read again before each penalty: 0.6 / 2 = 0.3 >= 0, so 0.3 - 0.5 = -0.2,
    # and then -0.2 + 0.25 = 0.05 (the frequency penalty adds to a negative logit).
    crossing = oe.penalised(torch.tensor([0.6], dtype=torch.float64), [], [0], sampling)
    assert crossing.tolist() == pytest.approx([0.05])
    assert torch.equal(oe.penalised(logits, [0], [1], oe.T1), logits)


def test_the_penalised_law_reads_prompt_and_generated_tokens_by_position() -> None:
    # A stand-in target whose logits are 0 everywhere: only the penalties shape the law.
    class Flat:
        def __call__(self, sequences: torch.Tensor) -> object:
            class Out:
                logits = torch.zeros(*sequences.shape, 4)

            return Out()

    sampling = {**oe.T1, "presence_penalty": 1.0}
    law = oe.openvino_target_probs(Flat(), sampling, prompt_length=2)
    # Two sequences that differ at once: one pass each, no shared prefix.
    rows = law(torch.tensor([[0, 1, 2, 3], [1, 1, 2, 3]]))
    # After the prompt (row 1) nothing is generated yet: uniform. Row 2 has generated token 2,
    # whose logit 0 (>= 0) drops to -1; row 3 also token 3.
    assert torch.allclose(rows[0, 1], torch.full((4,), 0.25))
    e = torch.e
    assert torch.allclose(rows[0, 2], torch.tensor([1, 1, 1 / e, 1]) / (3 + 1 / e))
    assert torch.allclose(rows[0, 3], torch.tensor([1, 1, 1 / e, 1 / e]) / (2 + 2 / e))


def test_the_shared_prefix_law_equals_the_law_of_one_pass_per_sequence() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=16, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1,
    )  # fmt: skip
    target = LlamaForCausalLM(config).eval()
    prompt = [3, 1, 4, 1, 5]
    sequences = torch.tensor([[*prompt, 9, 2, 6], [*prompt, 9, 7, 7], [*prompt, 0, 2, 6]])
    sampling = {**oe.PENALISED, "top_k": 4}
    law = oe.openvino_target_probs(target, sampling, prompt_length=len(prompt))(sequences)
    with torch.no_grad():
        logits = target(sequences).logits
    for b, sequence in enumerate(sequences.tolist()):
        for t in range(len(sequence)):
            row = oe.penalised(logits[b, t], prompt, sequence[len(prompt) : t + 1], sampling)
            expected = oe.chain_probs(row, sampling).to(torch.float32)
            assert torch.allclose(law[b, t], expected, atol=1e-5), (b, t)
    logits_shared, shared = oe.shared_prefix_logits(target, sequences)
    assert shared == len(prompt)  # the third sequence parts from the others after the prompt
    assert torch.allclose(logits_shared, logits, atol=1e-5)
    alike, shared = oe.shared_prefix_logits(target, sequences[:1].repeat(2, 1))
    assert shared == sequences.shape[1] - 1 and torch.allclose(alike[1], logits[0], atol=1e-5)


def test_request_seeds_are_distinct_within_and_across_calls() -> None:
    first = oe.request_seeds(0, 512)
    assert first == oe.request_seeds(0, 512)  # reproducible
    assert len(set(first)) == 512
    assert not set(first) & set(oe.request_seeds(1, 512))
    assert all(0 <= s < 2**32 for s in first)


def logits_of(*probs: float) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float64).log()


def test_top_k_acts_on_logits_before_the_temperature() -> None:
    # top-k 2 keeps 0.5 and 0.3; temperature 0.5 then squares them: [25, 9] / 34.
    sampling = {**oe.T1, "top_k": 2, "temperature": 0.5}
    probs = oe.chain_probs(logits_of(0.5, 0.3, 0.15, 0.05), sampling)
    assert torch.allclose(probs, torch.tensor([25 / 34, 9 / 34, 0, 0], dtype=torch.float64))


def test_top_p_keeps_the_token_that_crosses_it() -> None:
    # top-p 0.75 on [0.4, 0.3, 0.2, 0.1]: 0.4 + 0.3 = 0.7 is not above 0.75, so 0.2 stays too.
    probs = oe.chain_probs(logits_of(0.4, 0.3, 0.2, 0.1), {**oe.T1, "top_p": 0.75})
    assert torch.allclose(probs, torch.tensor([4 / 9, 3 / 9, 2 / 9, 0], dtype=torch.float64))
    # At exactly 0.7 the sum is not above it either: a third token is still needed.
    exact = oe.chain_probs(logits_of(0.4, 0.3, 0.2, 0.1), {**oe.T1, "top_p": 0.7})
    assert int((exact > 0).sum()) == 3


def test_min_p_acts_before_top_p_without_renormalising() -> None:
    # min-p 0.3 drops 0.1 and 0.05 (below 0.3 * 0.5); top-p 0.6 on the remaining, unrenormalised
    # [0.5, 0.35]: 0.5 is not above 0.6, 0.85 is, so both stay. Renormalised first, 0.5 / 0.85
    # = 0.59 would still not cross: top-p 0.55 tells them apart (kept 2 vs 1).
    sampling = {**oe.T1, "min_p": 0.3, "top_p": 0.55}
    probs = oe.chain_probs(logits_of(0.5, 0.35, 0.1, 0.05), sampling)
    assert torch.allclose(probs, torch.tensor([0.5 / 0.85, 0.35 / 0.85, 0, 0], dtype=torch.float64))


def test_greedy_law_has_the_argmax_on_top() -> None:
    probs = oe.chain_probs(logits_of(0.2, 0.7, 0.1), oe.GREEDY)
    assert int(probs.argmax()) == 1


@pytest.mark.skipif(NO_OPENVINO, reason=NO_OPENVINO_REASON)
def test_openvino_takes_every_request_as_built() -> None:
    import openvino_genai

    for config in oe.configurations(TINY):
        fields = oe.generation_kwargs(config, config.tokens, 3)
        request = openvino_genai.GenerationConfig(**fields)
        request.validate()
        for name, value in fields.items():
            assert getattr(request, name) == pytest.approx(value), (config.name, name)
        assert request.is_multinomial() == (not config.greedy)
        assert request.is_prompt_lookup() == (config.drafter == "lookup")
        assert request.is_assisting_generation() == (config.drafter != "none")
