"""The pure parts of the dflash audit (no dflash needed): its configurations, the sampling it
hands ``dflash_generate`` and the law's processors, the drafter configs, and how a run's rounds
are read from the target's inputs (worked by hand). The tests that build drafters and run the
loop need the ``dflash`` package (the ``audit-dflash`` venv)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from real_engine_configs import assert_each_beside_its_control

from specproof.adapters import dflash_engine as de
from specproof.adapters.hf import processors_for
from specproof.adapters.registry import engine_named, engine_names
from specproof.audit.engine.subject import Emission, Engine
from specproof.subjects.real_models import tiny_model

TINY = tiny_model(Path("models"))

NO_DFLASH = importlib.util.find_spec("dflash") is None
NO_DFLASH_REASON = "dflash is installed only in the audit-dflash venv"


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    configs = de.configurations(TINY)
    assert_each_beside_its_control(configs)
    drafted = [(c.sampling_label, c.drafter) for c in configs if c.drafter != "none"]
    # DFlash and DFlash2 in each of three settings, DFlash alone stopping at EOS
    assert len(drafted) == len(set(drafted)) == 7
    assert de.by_name("T=1 DFlash2 k=3", TINY).label == "DFlash2 k=3"
    assert de.by_name("greedy DFlash k=3", TINY).greedy
    assert de.stops_at_eos(de.by_name("T=1 EOS DFlash k=3", TINY))
    assert not de.stops_at_eos(de.by_name("T=1 DFlash k=3", TINY))
    with pytest.raises(KeyError, match="no dflash configuration"):
        de.by_name("nonsense", TINY)


def test_each_configuration_runs_in_its_own_process() -> None:
    assert "dflash" in engine_names()
    record = engine_named("dflash")
    assert record.module == "specproof.adapters.dflash_engine" and record.session == "audit-dflash"
    assert record.groups(TINY) == [[c.name] for c in de.configurations(TINY)]


def test_sampling_handed_to_the_loop() -> None:
    truncated = de.by_name("truncated DFlash k=3", TINY)
    assert de.call_sampling(truncated.sampling) == {"temperature": 0.8, "top_p": 0.9, "top_k": 5}
    # greedy is dflash's temperature 0; T = 1 truncates nothing (top_k 0, top_p 1)
    greedy = de.call_sampling(de.by_name("greedy no draft", TINY).sampling)
    assert greedy == {"temperature": 0.0, "top_p": 1.0, "top_k": 0}
    t1 = de.call_sampling(de.by_name("T=1 DFlash2 k=3", TINY).sampling)
    assert t1 == {"temperature": 1.0, "top_p": 1.0, "top_k": 0}


def test_the_law_applies_the_same_sampling_and_no_default_top_k() -> None:
    # left out, top_k would be transformers' default 50: given as 0, T = 1 is the plain softmax
    assert len(processors_for(de.law_kwargs(de.T1))) == 0
    kinds = [type(p).__name__ for p in processors_for(de.law_kwargs(de.TRUNCATED))]
    assert kinds == ["TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]
    assert de.law_kwargs(de.STOPPING) == de.law_kwargs(de.T1)  # stopping is not a law change


def test_drafter_options() -> None:
    target = SimpleNamespace(hidden_size=64)
    assert de.draft_options("dflash1", target, 8) == {"block_size": 4, "mask_token_id": 0}
    two = de.draft_options("dflash2", target, 8)
    assert two["conv_group_size"] == 16 and two["selector_top_k"] == 4
    # a width that 16 does not divide and a vocabulary smaller than the selector's top-k
    small = de.draft_options("dflash2", SimpleNamespace(hidden_size=24), 3)
    assert small["conv_group_size"] == 8 and small["selector_top_k"] == 2


def test_rounds_are_the_drafts_matching_the_committed_tokens() -> None:
    prompt = [1, 2, 3]
    # prefill at 0; a block at 3 drafting (5, 6, 7) of which 5, 6 were kept and 4 emitted;
    # a block at 6 (token 4) drafting (1, 1, 1), all kept, then its bonus 2
    sequence = [*prompt, 9, 5, 6, 4, 1, 1, 1, 2]
    blocks = [(0, (1, 2, 3)), (3, (9, 5, 6, 7)), (6, (4, 1, 1, 1))]
    assert de.rounds_of(blocks, sequence) == ((3, 2), (3, 3))
    # a first draft rejected, and a block of one token (nothing drafted) is no round
    assert de.rounds_of([(0, (1,)), (1, (3, 5)), (2, (4,))], [1, 3, 4]) == ((1, 0),)
    # the last block cut by the run's end: drafts past the end count as not kept
    assert de.rounds_of([(0, (1,)), (1, (3, 5, 6))], [1, 3, 5]) == ((2, 1),)


def emitted(engine: Engine, prompt: tuple[int, ...], seed: int) -> Emission:
    """One run of ``engine`` (the adapter's runs carry their rounds)."""
    run = engine.generate(prompt, 5, seed)
    assert isinstance(run, Emission)
    return run


def tiny_target(tmp_path: Path) -> Any:
    from specproof.adapters.hf import load_hf
    from specproof.subjects.real_models import build_models

    build_models(tmp_path)
    return load_hf(tmp_path / "target")


@pytest.mark.skipif(NO_DFLASH, reason=NO_DFLASH_REASON)
@pytest.mark.slow
def test_drafters_are_seeded_and_finite(tmp_path: Path) -> None:
    """Both kinds build for the tiny target with finite weights (DFlash2's convolution kernels,
    which the package leaves uninitialised, drawn), the same for the same seed."""
    target = tiny_target(tmp_path)
    for kind in de.DRAFTERS:
        one, two = (de.build_drafter(kind, target, 8) for _ in range(2))
        other = de.build_drafter(kind, target, 8, seed=de.DRAFT_SEED + 1)
        for (name, a), b in zip(one.state_dict().items(), two.state_dict().values(), strict=True):
            assert torch.equal(a, b), name
            assert torch.isfinite(a).all(), name
        pairs = zip(one.parameters(), other.parameters(), strict=True)
        assert any(not torch.equal(a, c) for a, c in pairs)
    assert type(de.build_drafter("dflash2", target, 8)).__name__ == "DFlash2DraftModel"


@pytest.mark.skipif(NO_DFLASH, reason=NO_DFLASH_REASON)
@pytest.mark.parametrize("name", ["T=1 DFlash k=3", "truncated DFlash2 k=3"])
def test_rounds_read_from_the_inputs_are_the_verifiers_own(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rounds read from the target's inputs equal what dflash's ``_rejection_sample``
    returned in the same runs (its (drafts, accepted), recorded by wrapping it)."""
    import dflash.model as dm

    verified: list[tuple[int, int]] = []
    original = dm._rejection_sample

    def recorded(draft_tokens: torch.Tensor, *args: Any) -> Any:
        accepted, bonus = original(draft_tokens, *args)
        verified.append((int(draft_tokens.shape[1]), int(accepted)))
        return accepted, bonus

    monkeypatch.setattr(dm, "_rejection_sample", recorded)
    target = tiny_target(tmp_path)
    model = tiny_model(tmp_path)
    engine = de.dflash_engine(de.by_name(name, model), target, target, model)
    for seed in range(30):
        verified.clear()
        run = emitted(engine, model.prompt, seed)
        assert len(run.tokens) == 5 and all(0 <= t < model.vocab for t in run.tokens)
        assert list(run.rounds) == verified, (seed, run)
    assert engine.max_draft == de.K


@pytest.mark.skipif(NO_DFLASH, reason=NO_DFLASH_REASON)
def test_the_control_drafts_nothing_and_eos_ends_a_run(tmp_path: Path) -> None:
    target = tiny_target(tmp_path)
    model = tiny_model(tmp_path)
    control = de.dflash_engine(de.by_name("T=1 no draft", model), target, target, model)
    assert all(not emitted(control, model.prompt, s).rounds for s in range(10))
    stopping = de.dflash_engine(de.by_name("T=1 EOS DFlash k=3", model), target, target, model)
    assert stopping.eos_ids == frozenset(model.eos)
    ended = 0
    for seed in range(60):
        tokens = emitted(stopping, model.prompt, seed).tokens
        assert all(t not in model.eos for t in tokens[:-1]), (seed, tokens)
        assert len(tokens) == 5 or tokens[-1] in model.eos, (seed, tokens)
        ended += len(tokens) < 5
    assert ended > 0  # some run stopped early, so the stop path ran


RUNS = 600


@pytest.mark.skipif(NO_DFLASH, reason=NO_DFLASH_REASON)
@pytest.mark.slow
def test_the_audit_catches_a_verifier_that_keeps_every_draft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With dflash's ``_rejection_sample`` replaced by one that keeps every draft, the runs
    follow the random drafter's law and the audit fails them (RUNS runs; each row's false-fail
    rate is at most its alpha, 1e-6); the same audit of the real verifier fails no row."""
    import dflash.model as dm

    from specproof.audit.engine.audit import audit_engine

    target = tiny_target(tmp_path)
    model = tiny_model(tmp_path)
    config = de.by_name("T=1 DFlash k=3", model)

    def failed() -> bool:
        engine = de.dflash_engine(config, target, target, model)
        return audit_engine(engine, num_new_tokens=config.tokens, runs=RUNS).failed

    assert not failed()

    def keep_all(draft_tokens: torch.Tensor, target_probs: torch.Tensor, *_: Any) -> Any:
        gamma = draft_tokens.shape[1]
        return gamma, torch.multinomial(target_probs[0, -1], 1)[0]

    monkeypatch.setattr(dm, "_rejection_sample", keep_all)
    assert failed()
