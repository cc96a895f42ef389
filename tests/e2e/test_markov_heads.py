"""The DSpark drafter's gated and recurrent heads (specproof.e2e.models.markov_heads) on the toy
target: shapes, drafting against the teacher-forced pass, saving and loading, and the vanilla
head (the shipped weights) unchanged."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from e2e.toy_models import TOY_TARGET

from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.loading import SHIPPED_DIR, load_dspark, load_target
from specproof.e2e.models.markov_heads import HEADS
from specproof.e2e.models.target import Target
from specproof.e2e.models.weight_files import WeightsError, load_weights, save_weights

CONFIG = DSparkConfig(gamma=4, n_layers=1, n_heads=2, d_ff=64, rank=8)
PROMPT = [ord(c) for c in "def f(x): return"]
NEW_HEADS = [h for h in HEADS if h != "vanilla"]


@pytest.fixture(scope="module")
def target() -> Target:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    toy = Target(TOY_TARGET).eval()
    with torch.no_grad():
        toy.head.weight.mul_(10.0)
    return toy


def drafter_with(target: Target, head: str, seed: int = 1) -> DSparkDrafter:
    """A drafter whose every parameter is perturbed: the zero-initialised Markov factor, gate
    and recurrence then all act, so no check below passes because a term is zero."""
    torch.manual_seed(seed)
    drafter = DSparkDrafter(target, replace(CONFIG, head=head))
    with torch.no_grad():
        for parameter in drafter.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return drafter.eval()


def propose_after(
    drafter: DSparkDrafter, target: Target, prompt: list[int], temperature: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens, probs, confidence logits) of one round after ``prompt``."""
    tokens = torch.tensor([prompt])
    count = torch.tensor([len(prompt) - 1])
    with torch.no_grad():
        state = drafter.start(1, 40)
        out = target.extend(tokens[:, :-1], count, target.new_cache(1, 40))
        drafter.observe(state, out, tokens[:, 1:], count)
        proposal = drafter.propose(
            state, tokens[:, -1], temperature, torch.Generator().manual_seed(seed)
        )
    assert proposal.confidence_logits is not None
    return proposal.tokens, proposal.probs, proposal.confidence_logits


@pytest.mark.parametrize("head", HEADS)
def test_shapes(target: Target, head: str) -> None:
    drafter = drafter_with(target, head)
    windows = torch.randint(0, 256, (2, 24), generator=torch.Generator().manual_seed(3))
    anchors = torch.tensor([[1, 5, 9], [2, 11, 20]])
    with torch.no_grad():
        logits, confidence = drafter.training_outputs(windows, target(windows).features, anchors)
    assert logits.shape == (2, 3, CONFIG.gamma, 256)
    assert confidence.shape == (2, 3, CONFIG.gamma)
    tokens, probs, conf = propose_after(drafter, target, PROMPT, 1.0, 0)
    assert tokens.shape == (1, CONFIG.gamma) and conf.shape == (1, CONFIG.gamma)
    assert probs.shape == (1, CONFIG.gamma, 256)
    torch.testing.assert_close(probs.sum(-1), torch.ones(1, CONFIG.gamma))


@pytest.mark.parametrize("temperature", [1.0, 0.0])
@pytest.mark.parametrize("head", NEW_HEADS)
def test_drafting_equals_the_teacher_forced_pass(
    target: Target, head: str, temperature: float
) -> None:
    """Drafting slot by slot over the drawn tokens gives the q_k and confidence logits the
    training pass gives over the window prompt + those tokens."""
    drafter = drafter_with(target, head)
    tokens, probs, conf = propose_after(drafter, target, PROMPT, temperature, 2)
    window = torch.cat((torch.tensor([PROMPT]), tokens), dim=1)
    anchor = torch.tensor([[len(PROMPT) - 1]])
    with torch.no_grad():
        logits, confidence = drafter.training_outputs(window, target(window).features, anchor)
    torch.testing.assert_close(probs[0], torch.softmax(logits[0, 0], -1), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(conf[0], confidence[0, 0], atol=1e-5, rtol=1e-4)


def test_the_recurrent_head_reads_the_whole_drafted_prefix(target: Target) -> None:
    """Slot 3's law changes with x_0 (two tokens back) under the rnn head, and does not under
    the vanilla head once the backbone's input x_0 is held fixed: only x_{k-1} reaches a
    vanilla slot k through the head."""
    windows = torch.randint(0, 256, (1, 24), generator=torch.Generator().manual_seed(4))
    anchor = torch.tensor([[10]])
    for head, moves in (("rnn", True), ("vanilla", False)):
        drafter = drafter_with(target, head)
        with torch.no_grad():
            features = target(windows).features
            hidden = drafter.backbone(windows, features, anchor)
            previous = windows[:, 10:14].clone()
            first = head_bias(drafter, hidden, previous)
            previous[0, 0] = (previous[0, 0] + 1) % 256
            second = head_bias(drafter, hidden, previous)
        change = float((first[0, 2] - second[0, 2]).abs().max())
        assert (change > 1e-3) if moves else (change == 0.0), (head, change)


def head_bias(drafter: DSparkDrafter, hidden: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
    """The head's bias [1, gamma, V] for slots with hidden states ``hidden`` [1, gamma, d]."""
    head = drafter.sequential_head
    if head is None:
        return drafter.markov_bias(previous)
    bias, _ = head.teacher_forced(hidden, previous, drafter.markov_in, drafter.markov_out)
    return bias


@pytest.mark.parametrize("head", NEW_HEADS)
def test_save_and_load_round_trip(target: Target, head: str, tmp_path: Path) -> None:
    drafter = drafter_with(target, head)
    save_weights(drafter, drafter.config.as_dict(), tmp_path, "dspark")
    _, config = load_weights(tmp_path, "dspark")
    assert config["head"] == head
    loaded = load_dspark(tmp_path, target)
    assert loaded.config == drafter.config
    for name, value in drafter.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], value, atol=0, rtol=0)
    first = propose_after(drafter, target, PROMPT, 1.0, 5)
    second = propose_after(loaded, target, PROMPT, 1.0, 5)
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_a_vanilla_drafter_adds_no_parameters(target: Target) -> None:
    """The vanilla drafter's tensors are exactly the Markov drafter's (nothing a head adds), and
    it draws the same initial weights as before the heads existed: the config default."""
    vanilla = DSparkDrafter(target, CONFIG)
    assert CONFIG.head == "vanilla" and vanilla.sequential_head is None
    gated = DSparkDrafter(target, replace(CONFIG, head="gated"))
    rnn = DSparkDrafter(target, replace(CONFIG, head="rnn"))
    assert set(gated.state_dict()) - set(vanilla.state_dict()) == {
        "sequential_head.gate.weight",
        "sequential_head.gate.bias",
    }
    assert set(rnn.state_dict()) - set(vanilla.state_dict()) == {
        "sequential_head.recurrence.weight"
    }
    torch.manual_seed(9)
    first = DSparkDrafter(target, CONFIG).state_dict()
    torch.manual_seed(9)
    second = DSparkDrafter(target, replace(CONFIG, head="rnn")).state_dict()
    for name, value in first.items():
        torch.testing.assert_close(second[name], value, atol=0, rtol=0)


def test_an_untrained_recurrent_head_is_the_vanilla_one(target: Target) -> None:
    """The recurrence starts at 0, so an untrained rnn head is exactly the vanilla head."""
    vanilla = drafter_with(target, "vanilla", seed=3)
    rnn = DSparkDrafter(target, replace(CONFIG, head="rnn"))
    rnn.load_state_dict(
        {
            **vanilla.state_dict(),
            **{"sequential_head.recurrence.weight": torch.zeros(CONFIG.rank, CONFIG.rank)},
        }
    )
    first = propose_after(vanilla, target, PROMPT, 1.0, 6)
    second = propose_after(rnn.eval(), target, PROMPT, 1.0, 6)
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_the_shipped_weights_load_as_the_vanilla_head() -> None:
    """The shipped file's config has no head; it loads as "vanilla" with exactly its tensors."""
    tensors, config = load_weights(SHIPPED_DIR, "dspark")
    assert "head" not in config
    drafter = load_dspark(SHIPPED_DIR, load_target(SHIPPED_DIR))
    assert drafter.config.head == "vanilla" and drafter.sequential_head is None
    assert set(drafter.state_dict()) == set(tensors)


def test_an_unknown_head_is_refused(target: Target, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown Markov head 'lstm'"):
        DSparkConfig(head="lstm")
    drafter = drafter_with(target, "vanilla")
    save_weights(drafter, {**drafter.config.as_dict(), "head": "lstm"}, tmp_path, "dspark")
    with pytest.raises(WeightsError, match="config does not fit"):
        load_dspark(tmp_path, target)


@pytest.mark.slow
@pytest.mark.parametrize("head", NEW_HEADS)
def test_decoding_with_a_new_head_stays_lossless(head: str) -> None:
    """The first two tokens of DSpark (head trained 60 toy steps) + Algorithm 1 follow the
    target's own law. Error rates as tests/e2e/test_lossless.py: false-fail rate 5e-7 under
    "within TV 1e-4 of the float64 law"; power >= 1 - 1e-3 against TV >= 0.05 over 9 rank
    cells."""
    from e2e.toy_models import toy_models
    from specproof.reference.schedulers import Algorithm1

    from specproof.e2e.data.corpora import WindowSampler, prose_documents, split_documents
    from specproof.e2e.evaluation.losslessness import (
        first_tokens_law,
        losslessness_test,
        sample_first_tokens,
    )
    from specproof.e2e.training.loops import TrainSettings, train_dspark
    from specproof.stats import required_samples

    torch.set_num_threads(1)
    target = toy_models(seed=2, drafter_steps=2).target
    torch.manual_seed(2)
    drafter = DSparkDrafter(
        target, DSparkConfig(gamma=3, n_layers=1, n_heads=2, d_ff=64, rank=8, head=head)
    )
    corpus = split_documents("prose", prose_documents())
    sampler = WindowSampler({"prose": corpus.stream("train")}, {"prose": 1.0}, 2)
    settings = TrainSettings(0.0, 4, 32, 3e-3, warmup_steps=5, min_steps=60)
    train_dspark(drafter, sampler, settings, anchors_per_window=6, log=lambda _: None, seed=2)
    prompt = [ord(c) for c in "for x in"]
    requests = 2000
    counts = sample_first_tokens(
        target,
        drafter.eval(),
        prompt,
        2,
        required_samples(0.05, 5e-7, 1e-3, 10, 1e-4),
        schedule=Algorithm1(),
        sps=lambda batch: 1.0 / (1.0 + 0.5 * batch / requests),
        batch=requests,
        seed=11,
    )
    fit = losslessness_test(
        counts,
        first_tokens_law(target, prompt, 2),
        alpha=5e-7,
        beta=1e-3,
        delta=0.05,
        tolerance=1e-4,
        bins=9,
        name=f"dspark[{head}]+algorithm1",
    )
    assert fit.powered, fit.describe()
    assert not fit.rejected, fit.describe()
