"""Truncated sampling in the end-to-end decoder (specproof.e2e.models.drafting.truncated): the
law equals transformers' top-k then top-p processors, and both decoders (speculative and plain)
emit only tokens of the target's truncated law, at a temperature other than 0 and 1."""

from __future__ import annotations

import pytest
import torch
from e2e.toy_models import TOY_TARGET

from specproof.e2e.decoding.rounds import autoregressive_generate, speculative_generate
from specproof.e2e.models.drafting import Truncation, tempered_probs, truncated
from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.target import Target

PROMPT = [ord(c) for c in "def f(x): return"]
CONFIG = DSparkConfig(gamma=4, n_layers=1, n_heads=2, d_ff=64, rank=8)
TEMPERATURE = 0.8


@pytest.mark.parametrize(("top_k", "top_p"), [(5, 1.0), (0, 0.9), (5, 0.9), (40, 0.5), (1, 0.9)])
def test_the_law_is_transformers_top_k_then_top_p(top_k: int, top_p: float) -> None:
    from transformers import LogitsProcessorList, TopKLogitsWarper, TopPLogitsWarper

    logits = 3 * torch.randn(6, 3, 64, generator=torch.Generator().manual_seed(top_k))
    processors = LogitsProcessorList()
    if top_k:
        processors.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1:
        processors.append(TopPLogitsWarper(top_p=top_p))
    rows = logits.reshape(-1, 64) / TEMPERATURE
    expected = torch.softmax(processors(torch.zeros(1, 1, dtype=torch.long), rows), -1)
    ours = truncated(tempered_probs(logits, TEMPERATURE), Truncation(top_k, top_p))
    torch.testing.assert_close(ours.reshape(-1, 64), expected, atol=1e-6, rtol=1e-5)
    assert bool(((ours > 0).sum(-1) <= (top_k or 64)).all())


def test_nothing_cut_is_the_law_itself() -> None:
    probs = torch.softmax(torch.randn(4, 32, generator=torch.Generator().manual_seed(1)), -1)
    assert truncated(probs, None) is probs
    torch.testing.assert_close(truncated(probs, Truncation(0, 1.0)), probs)


@pytest.fixture(scope="module")
def models() -> tuple[Target, DSparkDrafter]:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    target = Target(TOY_TARGET).eval()
    drafter = DSparkDrafter(target, CONFIG)
    with torch.no_grad():
        target.head.weight.mul_(10.0)
        for parameter in drafter.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return target, drafter.eval()


def outside_support(target: Target, prompt: list[int], tokens: list[int], cut: Truncation) -> int:
    """How many of ``tokens`` (emitted after ``prompt``) have no mass in the target's truncated
    law at their position (a teacher-forced pass)."""
    window = torch.tensor([prompt + tokens])
    with torch.no_grad():
        law = truncated(tempered_probs(target(window).logits[0], TEMPERATURE), cut)
    rows = law[len(prompt) - 1 : -1]
    return int((rows[torch.arange(len(tokens)), torch.tensor(tokens)] == 0).sum())


def test_both_decoders_emit_only_the_truncated_support(
    models: tuple[Target, DSparkDrafter],
) -> None:
    from specproof.reference.schedulers import FixedGamma

    target, drafter = models
    cut = Truncation(3, 0.9)
    prompts = [PROMPT] * 64
    spec = speculative_generate(target, drafter, prompts, 8, temperature=TEMPERATURE,
                                schedule=FixedGamma(), seed=4, truncation=cut)  # fmt: skip
    plain = autoregressive_generate(target, prompts, 8, temperature=TEMPERATURE, seed=4,
                                    truncation=cut)  # fmt: skip
    accepted = sum(sum(r.accepted) for r in spec.rounds)
    assert accepted > 0, "no draft was accepted: the check below sees only residual draws"
    for tokens in [*spec.tokens, *plain.tokens]:
        assert outside_support(target, PROMPT, tokens, cut) == 0
    # The same decoders without truncation do emit tokens outside it (the check can fail).
    free = speculative_generate(target, drafter, prompts, 8, temperature=TEMPERATURE,
                                schedule=FixedGamma(), seed=4)  # fmt: skip
    assert sum(outside_support(target, PROMPT, t, cut) for t in free.tokens) > 0


def test_the_draft_law_is_truncated_too(models: tuple[Target, DSparkDrafter]) -> None:
    target, drafter = models
    tokens = torch.tensor([PROMPT])
    count = torch.tensor([len(PROMPT) - 1])
    with torch.no_grad():
        state = drafter.start(1, 40)
        out = target.extend(tokens[:, :-1], count, target.new_cache(1, 40))
        drafter.observe(state, out, tokens[:, 1:], count)
        generator = torch.Generator().manual_seed(0)
        cut = Truncation(3, 1.0)
        proposal = drafter.propose(state, tokens[:, -1], TEMPERATURE, generator, truncation=cut)
    assert bool(((proposal.probs > 0).sum(-1) <= 3).all())
    torch.testing.assert_close(proposal.probs.sum(-1), torch.ones(1, CONFIG.gamma))
    drawn = proposal.probs[0].gather(1, proposal.tokens[0][:, None])
    assert bool((drawn > 0).all())
