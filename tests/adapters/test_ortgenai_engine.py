"""The pure parts of the ONNX Runtime GenAI audit (no onnxruntime-genai needed): its
configurations, the search and speculative options it hands the engine, the composite config
of draft-model speculation, and the law it tests against (the engine's CPU sampling chain,
worked by hand). The test that runs the engine needs onnxruntime_genai and the model builder
(the ``audit-ortgenai`` venv)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from real_engine_configs import assert_each_beside_its_control

from specproof.adapters import ortgenai_engine as oe
from specproof.adapters.registry import engine_named, engine_names
from specproof.subjects.real_models import tiny_model

TINY = tiny_model(Path("models"))
REAL_VOCAB = replace(TINY, vocab=49_152)
"""The tiny model's names at a real vocabulary, where the guided settings exist."""

NO_ORTGENAI = importlib.util.find_spec("onnxruntime_genai") is None
NO_ORTGENAI_REASON = "onnxruntime_genai is installed only in the audit-ortgenai venv"


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    configs = oe.configurations(REAL_VOCAB)
    assert_each_beside_its_control(configs)
    drafted = {(c.sampling_label, c.drafter, c.batch) for c in configs if c.drafter != "none"}
    # the draft model and n-gram drafting in each of eight settings, at T = 1 also the target,
    # and the draft model with 4 requests per call
    assert len(drafted) == 18
    # a vocabulary of 8 spells no word of the grammar: no guided setting
    assert not [c for c in oe.configurations(TINY) if "guidance" in c.sampling]
    assert len([c for c in oe.configurations(TINY) if c.drafter != "none"]) == 14
    assert oe.by_name("greedy draft model k=3", TINY).greedy
    assert oe.by_name("T=1 n-gram k=3", TINY).label == "n-gram k=3"
    many = oe.by_name("T=1 draft model k=3, 4 requests per call", TINY)
    assert many.batch == 4 and many.control == "T=1 no draft, 4 requests per call"
    assert oe.by_name(many.control, TINY).batch == 4
    assert oe.by_name("penalties draft model k=3", TINY).control == "penalties no draft"
    with pytest.raises(KeyError, match="no ONNX Runtime GenAI configuration"):
        oe.by_name("nonsense", TINY)


def test_penalties_run_after_the_prompt_cut_before_its_last_eos() -> None:
    model = replace(TINY, penalty_prompt=(4, 1, 7, 3, 7, 5), eos=(7,))
    assert oe.turn_end_prompt(model) == (4, 1, 7, 3)
    assert oe.turn_end_prompt(replace(TINY, penalty_prompt=(4, 1, 3))) == (4, 1, 3)
    config = oe.by_name("penalties n-gram k=3", model)
    assert config.prompt == (4, 1, 7, 3)
    options = oe.search_options(config, 9, 2)
    assert options["repetition_penalty"] == 1.3 and options["min_length"] == 4 + 2
    greedy = oe.search_options(oe.by_name("greedy-penalties draft model k=3", model), 12, 0)
    assert greedy["min_length"] == 6 and greedy["do_sample"] is False


def test_each_configuration_runs_in_its_own_process() -> None:
    assert "ortgenai" in engine_names() and engine_named("ortgenai").label == "ONNX Runtime GenAI"
    assert engine_named("ortgenai").module == "specproof.adapters.ortgenai_engine"
    assert engine_named("ortgenai").groups(TINY) == [[c.name] for c in oe.configurations(TINY)]


def test_search_and_speculative_options() -> None:
    truncated = oe.by_name("truncated n-gram k=3", TINY)
    assert oe.search_options(truncated, 13, 11) == {
        "max_length": 13, "do_sample": True, "random_seed": 11,
        "temperature": 0.8, "top_k": 5, "top_p": 0.9,
    }  # fmt: skip
    assert oe.speculative_options(truncated) == {
        "max_draft_tokens": 3, "min_adaptive_k": 0, "ngram_size": 2,
    }  # fmt: skip
    draft = oe.speculative_options(oe.by_name("T=1 draft model k=3", TINY))
    assert draft == {"max_draft_tokens": 3, "min_adaptive_k": 0}
    assert oe.speculative_options(oe.by_name("T=1 no draft", TINY)) == {}
    # sampled speculation needs a positive top_k: T = 1 asks for every token instead of 0
    assert oe.search_options(oe.by_name("T=1 no draft", TINY), 9, 0)["top_k"] == 8
    greedy = oe.search_options(oe.by_name("greedy no draft", TINY), 16, 3)
    assert greedy == {"max_length": 16, "do_sample": False, "random_seed": 3}
    assert oe.call_seed(2**31 + 5) == 5 and oe.call_seed(7) == 7


def test_folders_and_composite_config() -> None:
    exports = oe.Exports(Path("/x"))
    assert exports.folder("none") == exports.folder("ngram") == Path("/x/target")
    assert exports.folder("draft") == Path("/x/spec-draft")
    target = {"model": {"decoder": {"filename": "model.onnx", "head_size": 32}}, "search": {}}
    draft = {"model": {"decoder": {"filename": "model.onnx", "head_size": 16}}}
    config = oe.composite_config(target, draft)
    assert config["model"]["decoder"] == {"filename": "target/model.onnx", "head_size": 32}
    assert config["model"]["draft"] == {"filename": "draft/model.onnx", "head_size": 16}
    assert config["speculative"] == {"max_draft_tokens": 3}
    assert target["model"]["decoder"]["filename"] == "model.onnx"  # the input is not changed


def test_chain_top_k_then_softmax_at_the_temperature_then_top_p() -> None:
    logits = torch.log(torch.tensor([0.05, 0.4, 0.3, 0.15, 0.1]))
    # top-k 3 keeps 0.4, 0.3, 0.15 (renormalised: 0.47, 0.35, 0.18); top-p 0.8 keeps the
    # first two (0.47 < 0.8, 0.47 + 0.35 >= 0.8: the token reaching it is kept)
    sampling = {"do_sample": True, "temperature": 1.0, "top_k": 3, "top_p": 0.8}
    probs = oe.chain_probs(logits, sampling)
    assert torch.allclose(probs, torch.tensor([0, 4 / 7, 3 / 7, 0, 0], dtype=torch.float64))
    # the cumulative mass reaching top_p exactly keeps the token that reaches it, and no more
    exact = oe.chain_probs(torch.log(torch.tensor([0.5, 0.25, 0.25])),
                           {**sampling, "top_k": 3, "top_p": 0.5})  # fmt: skip
    assert torch.allclose(exact, torch.tensor([1.0, 0, 0], dtype=torch.float64))
    # the temperature divides the kept logits: T = 0.5 squares the kept probabilities
    hot = oe.chain_probs(logits, {**sampling, "temperature": 0.5, "top_k": 2, "top_p": 1.0})
    assert torch.allclose(hot, torch.tensor([0, 16 / 25, 9 / 25, 0, 0], dtype=torch.float64))
    # top_k = V truncates nothing
    full = oe.chain_probs(logits, {**sampling, "top_k": 5, "top_p": 1.0})
    assert torch.allclose(full, torch.softmax(logits.double(), -1))


def test_penalties_mask_eos_then_scale_each_token_seen_once() -> None:
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0])
    sampling = {"repetition_penalty": 2.0, "min_length": 4}
    # a sequence of 3 (< 4): EOS (id 3) masked; tokens 0 and 1 seen (1 twice, scaled once):
    # the positive logit halved, the negative one doubled
    out = oe.penalised(logits, [1, 0, 1], sampling, (3,))
    assert out.tolist() == [1.0, -2.0, 0.5, -float("inf")]
    # at the length min_length EOS is free again
    assert oe.penalised(logits, [1, 0, 1, 2], sampling, (3,)).tolist() == [1.0, -2.0, 0.25, 3.0]
    assert torch.equal(oe.penalised(logits, [0], {}, (3,)), logits.double())


def test_rounds_are_read_from_the_statistics_around_each_step() -> None:
    stats = {"rounds": 1, "draft_tokens_proposed": 3, "draft_tokens_accepted": 2,
             "standard_fallback_steps": 0}  # fmt: skip
    assert oe.round_of(stats, stats) is None  # a buffered token handed out
    after = {**stats, "rounds": 2, "draft_tokens_proposed": 6, "draft_tokens_accepted": 3}
    assert oe.round_of(stats, after) == (3, 1)
    assert oe.round_of(stats, {**stats, "standard_fallback_steps": 1}) == (0, 0)
    # (drafted, accepted, tokens seen): whole rounds kept as they are
    assert oe.visible_rounds(((3, 1, 2), (0, 0, 1), (3, 3, 4)), False) == ((3, 1), (0, 0), (3, 3))
    # an accepted EOS draft (the second token seen) ends the run: one accepted draft
    assert oe.visible_rounds(((3, 3, 2),), True) == ((3, 1),)
    # the length limit cut a round that accepted all its drafts: its bonus token is lost
    assert oe.visible_rounds(((1, 1, 1),), False) == ((1, 1),)
    with pytest.raises(RuntimeError, match="handed out 1 tokens"):
        oe.visible_rounds(((3, 2, 1), (3, 0, 1)), False)


def test_the_guided_mask_follows_the_answers_then_allows_eos() -> None:
    pieces = {"P": (1,), "Par": (2,), "aris": (3,), "is": (4,), ".": (5,), "L": (6,),
              "ondon.": (7,), "Paris": (8, 9), "x": (10,)}  # fmt: skip
    answers = oe.Answers(("Paris.", "London."), pieces, (0,))
    assert answers.allowed("") == [1, 2, 6, 8, 9]
    assert answers.allowed("Par") == [4]
    assert answers.allowed("P") == [3]  # "aris" (then "."), never "ar" alone: no such piece
    assert answers.allowed("Paris") == [5]
    assert answers.allowed("Paris.") == [0]  # a whole answer: only EOS
    assert answers.allowed("L") == [7]
    # fast-forward: after a sampled token the text every open answer continues with is forced
    assert answers.forced("") == "" and answers.forced("L") == "ondon."
    assert answers.forced("Paris.") == ""
    assert oe.Answers(("ab.", "ac."), {}, (0,)).forced("") == "a"
    decode = {1: "P", 6: "L", 7: "ondon.", 11: "ondon", 5: "."}.__getitem__
    encode = {"ondon.": [11, 5], "aris.": [3, 5]}.__getitem__
    assert answers.next_tokens([6], lambda ids: decode(ids[0]), encode) == 11
    assert answers.next_tokens([6, 11], lambda ids: decode(ids[0]), encode) == 5
    assert answers.next_tokens([6, 11, 5], lambda ids: decode(ids[0]), encode) == [0]
    assert answers.next_tokens([6], lambda ids: decode(ids[0]), None) == [7]
    assert oe.GUIDANCE == "(Paris|London|Berlin|Rome|Madrid)\\."
    config = oe.by_name("guided n-gram k=3", REAL_VOCAB)
    assert config.sampling["guidance"] == oe.GUIDANCE and config.control == "guided no draft"


def test_guided_rows_past_the_grammar_keep_the_plain_law() -> None:
    """After EOS the audit pads a run; its text leaves the grammar and the row, never read,
    stays the plain chain rather than a row without mass."""

    class Logits:
        def __call__(self, sequences: torch.Tensor) -> SimpleNamespace:
            return SimpleNamespace(logits=torch.zeros(*sequences.shape, 4))

    answers = oe.Answers(("a.",), {"a": (1,), ".": (2,)}, (3,))
    pieces = {1: "a", 2: ".", 3: "<eos>", 0: "z"}
    guide = oe.Guide(answers, lambda ids: "".join(pieces[i] for i in ids), None, 1)
    sampling = {"do_sample": True, "temperature": 1.0, "top_k": 4, "top_p": 1.0}
    probs = oe.ortgenai_probs(Logits(), sampling, (3,), guide)(torch.tensor([[0, 1, 2, 3, 0]]))
    assert torch.isfinite(probs).all()
    assert probs[0, 0].tolist() == [0, 1, 0, 0]  # after the prompt: only "a"
    assert probs[0, 2].tolist() == [0, 0, 0, 1]  # a whole answer: only EOS
    assert probs[0, 3].tolist() == [0.25] * 4  # past EOS: the plain law


def test_trace_sums_statistics() -> None:
    trace = oe.SpeculativeTrace()
    trace.add({"rounds": 2, "draft_tokens_accepted": 1, "other": 9})
    trace.add({"rounds": 3})
    assert trace.calls == 2 and trace.totals["rounds"] == 5
    assert "rounds 5" in trace.note(3) and "draft_tokens_accepted 1" in trace.note(3)
    trace.add({"draft_tokens_evaluated": 4, "full_accept_rounds": 1, "zero_accept_rounds": 2})
    assert trace.coverage().startswith("1 of 4 drafts accepted; rounds keeping all / some / ")
    assert "1 / 0 / 2" in trace.coverage()


@pytest.mark.skipif(NO_ORTGENAI, reason=NO_ORTGENAI_REASON)
@pytest.mark.slow
def test_the_engine_runs_each_drafter_and_reports_eos(tmp_path: Path) -> None:
    """Each drafter runs and returns tokens of the vocabulary; a run ending early ends in EOS
    (the engine ends a run at a sampled EOS without appending it to its sequence)."""
    from specproof.subjects.real_models import EOS, VOCAB, build_models, load_target

    build_models(tmp_path)
    exports = oe.exports_of(tiny_model(tmp_path))
    target = load_target(tmp_path / "target")
    for name in ("T=1 no draft", "T=1 draft model k=3", "T=1 n-gram k=3"):
        config = oe.by_name(name, TINY)
        laws = (oe.ortgenai_probs(target, config.sampling, (EOS,)), None)
        engine = oe.ortgenai_engine(config, exports, laws, oe.SpeculativeTrace(), (EOS,))
        for seed in range(40):
            tokens = engine.generate(config.prompt, 5, seed).tokens
            assert all(0 <= t < VOCAB for t in tokens)
            assert len(tokens) == 5 or tokens[-1] == EOS, (name, seed, tokens)
