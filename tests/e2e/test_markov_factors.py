"""DSpark's Markov factors through the target's frozen embedding (``markov_factors =
"embedding"``: W1 = E A, W2 = B E^T) on the toy target: the bias is that product, it adds
2 r d parameters and none of the target's, drafting equals the teacher-forced pass, and the
weights round-trip."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from e2e.toy_models import TOY_TARGET

from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.loading import load_dspark
from specproof.e2e.models.target import Target
from specproof.e2e.models.weight_files import save_weights

CONFIG = DSparkConfig(gamma=4, n_layers=1, n_heads=2, d_ff=64, rank=8, markov_factors="embedding")
PROMPT = [ord(c) for c in "def f(x): return"]


@pytest.fixture(scope="module")
def target() -> Target:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    toy = Target(TOY_TARGET).eval()
    with torch.no_grad():
        toy.head.weight.mul_(10.0)
    return toy


def perturbed(target: Target, head: str = "vanilla", seed: int = 1) -> DSparkDrafter:
    """Every parameter moved, so the zero-initialised B acts."""
    torch.manual_seed(seed)
    drafter = DSparkDrafter(target, replace(CONFIG, head=head))
    with torch.no_grad():
        for parameter in drafter.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return drafter.eval()


def test_the_bias_is_the_product_through_the_embedding(target: Target) -> None:
    drafter = perturbed(target)
    a = drafter.markov_in.project.weight.T  # type: ignore[union-attr]  # [d, r]
    b = drafter.markov_out.expand.weight.T  # type: ignore[union-attr]  # [r, d]
    e = target.embed.weight
    previous = torch.tensor([3, 77, 200])
    expected = (e[previous] @ a) @ b @ e.T
    with torch.no_grad():
        torch.testing.assert_close(drafter.markov_bias(previous), expected)


def test_it_adds_two_r_by_d_factors_and_none_of_the_targets_weights(target: Target) -> None:
    free = DSparkDrafter(target, replace(CONFIG, markov_factors="free"))
    tied = DSparkDrafter(target, CONFIG)
    names = {n: p.shape for n, p in tied.named_parameters()}
    d, r, v = TOY_TARGET.d_model, CONFIG.rank, TOY_TARGET.vocab
    assert names["markov_in.project.weight"] == (r, d)
    assert names["markov_out.expand.weight"] == (d, r)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(free) - count(tied) == 2 * r * v - 2 * r * d
    target_ids = {id(p) for p in target.parameters()}
    assert not target_ids & {id(p) for p in tied.parameters()}


def test_an_untrained_drafter_has_no_markov_bias(target: Target) -> None:
    drafter = DSparkDrafter(target, CONFIG)
    with torch.no_grad():
        assert torch.count_nonzero(drafter.markov_bias(torch.arange(10))) == 0


@pytest.mark.parametrize("temperature", [1.0, 0.0])
@pytest.mark.parametrize("head", ["vanilla", "rnn"])
def test_drafting_equals_the_teacher_forced_pass(
    target: Target, head: str, temperature: float
) -> None:
    drafter = perturbed(target, head)
    tokens = torch.tensor([PROMPT])
    count = torch.tensor([len(PROMPT) - 1])
    with torch.no_grad():
        state = drafter.start(1, 40)
        out = target.extend(tokens[:, :-1], count, target.new_cache(1, 40))
        drafter.observe(state, out, tokens[:, 1:], count)
        proposal = drafter.propose(
            state, tokens[:, -1], temperature, torch.Generator().manual_seed(2)
        )
        window = torch.cat((tokens, proposal.tokens), dim=1)
        anchor = torch.tensor([[len(PROMPT) - 1]])
        logits, confidence = drafter.training_outputs(window, target(window).features, anchor)
    assert confidence is not None and proposal.confidence_logits is not None
    torch.testing.assert_close(
        proposal.probs[0], torch.softmax(logits[0, 0], -1), atol=1e-5, rtol=1e-4
    )
    torch.testing.assert_close(
        proposal.confidence_logits[0], confidence[0, 0], atol=1e-5, rtol=1e-4
    )


def test_the_weights_round_trip(target: Target, tmp_path: Path) -> None:
    drafter = perturbed(target)
    save_weights(drafter, drafter.config.as_dict(), tmp_path, "dspark")
    loaded = load_dspark(tmp_path, target)
    assert loaded.config.markov_factors == "embedding"
    previous = torch.tensor([5, 9])
    with torch.no_grad():
        torch.testing.assert_close(loaded.markov_bias(previous), drafter.markov_bias(previous))


def test_an_unknown_factoring_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Markov factors 'shared'"):
        DSparkConfig(markov_factors="shared")
