"""The small target's KV cache, the drafters' caches and the round loop, on toy models."""

from __future__ import annotations

import pytest
import torch
from e2e.toy_models import ToyModels, toy_models
from specproof.reference.schedulers import Algorithm1, FixedGamma, StaticThreshold

from specproof.e2e.decoding.rounds import autoregressive_generate, speculative_generate

PROMPTS = [[ord(c) for c in text] for text in ("def f(x):", "The quick", "import o")]


@pytest.fixture(scope="module")
def models() -> ToyModels:
    torch.set_num_threads(1)
    return toy_models()


def test_ragged_cache_matches_whole_window(models: ToyModels) -> None:
    target = models.target
    tokens = torch.randint(0, 256, (3, 30), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = target(tokens).logits
        cache = target.new_cache(3)
        first = torch.tensor([10, 7, 12])
        out = target.extend(tokens[:, :12], first, cache)
        cache.commit(first)
        for r in range(3):
            n = int(first[r])
            torch.testing.assert_close(out.logits[r, :n], full[r, :n], atol=1e-4, rtol=1e-4)
        more = torch.tensor([5, 3, 1])
        step = torch.stack([tokens[r, int(first[r]) : int(first[r]) + 5] for r in range(3)])
        out = target.extend(step, more, cache)
        for r in range(3):
            a, n = int(first[r]), int(more[r])
            torch.testing.assert_close(out.logits[r, :n], full[r, a : a + n], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["dspark", "eagle"])
def test_greedy_speculative_equals_greedy_target(models: ToyModels, name: str) -> None:
    """At temperature 0 the output is the target's argmax chain, whatever is accepted."""
    drafter = models.dspark if name == "dspark" else models.eagle
    expected = autoregressive_generate(models.target, PROMPTS, 20, temperature=0.0).tokens
    for schedule in (FixedGamma(), StaticThreshold(0.5), Algorithm1()):
        result = speculative_generate(
            models.target,
            drafter,
            PROMPTS,
            20,
            temperature=0.0,
            schedule=schedule,
            sps=lambda b: 1.0 / (1.0 + 0.3 * b),
        )
        assert result.tokens == expected
        assert result.mean_accepted_length >= 1.0


def test_confidence_is_known_before_the_token(models: ToyModels) -> None:
    """c_1 does not depend on the draw of x_1; c_k only on x_{k-1} and the context."""
    drafter = models.dspark
    target = models.target
    prompt = torch.tensor([PROMPTS[0]])
    proposals = []
    for seed in range(6):
        state = drafter.start(1)
        count = torch.tensor([len(PROMPTS[0]) - 1])
        with torch.no_grad():
            out = target.extend(prompt[:, :-1], count, target.new_cache(1))
        drafter.observe(state, out, prompt[:, 1:], count)
        proposals.append(
            drafter.propose(state, prompt[:, -1], 1.0, torch.Generator().manual_seed(seed))
        )
    first = [p.confidence_logits[0, 0] for p in proposals if p.confidence_logits is not None]
    assert torch.allclose(torch.stack(first), first[0].expand(len(first)))
    by_previous: dict[int, torch.Tensor] = {}
    for p in proposals:
        assert p.confidence_logits is not None
        previous = int(p.tokens[0, 0])
        value = p.confidence_logits[0, 1]
        if previous in by_previous:
            torch.testing.assert_close(value, by_previous[previous])
        by_previous[previous] = value


def test_round_logs_are_consistent(models: ToyModels) -> None:
    result = speculative_generate(
        models.target,
        models.dspark,
        PROMPTS,
        16,
        temperature=1.0,
        schedule=Algorithm1(),
        sps=lambda b: 1.0 / (1.0 + 0.3 * b),
        seed=3,
    )
    assert [len(t) for t in result.tokens] == [16, 16, 16]
    for log in result.rounds:
        assert all(0 <= a <= s for a, s in zip(log.accepted, log.scheduled, strict=True))
        assert log.confidence_logits is not None
        assert log.confidence_logits.shape == (len(log.accepted), models.dspark.gamma)
    round_seconds = [log.seconds for log in result.rounds]
    assert all(t > 0 for t in round_seconds)
    assert sum(round_seconds) <= result.seconds


def test_identical_prompts_share_one_prefill_and_decode_like_the_target(
    models: ToyModels,
) -> None:
    """A batch of one repeated prompt (prefilled once) decodes, greedily, the target's chain."""
    prompt = PROMPTS[1]
    expected = autoregressive_generate(models.target, [prompt], 12, temperature=0.0).tokens
    for drafter in (models.dspark, models.eagle):
        result = speculative_generate(
            models.target, drafter, [prompt] * 3, 12, temperature=0.0, schedule=FixedGamma()
        )
        assert result.tokens == expected * 3


def test_eagle_single_token_step_matches_the_ragged_step(models: ToyModels) -> None:
    """The drafting step (one token per request) equals the general ragged cached step."""
    eagle = models.eagle
    generator = torch.Generator().manual_seed(7)
    d = models.target.config.d_model
    with torch.no_grad():
        state = eagle.start(2, 32)
        embedded, hidden = torch.randn(2, 2, 5, d, generator=generator)
        counts = torch.tensor([5, 3])
        eagle._step(state.cache, embedded, hidden, counts, state.cache.lengths)
        state.cache.commit(counts)
        e, h = torch.randn(2, 2, d, generator=generator)
        one = torch.ones(2, dtype=torch.int64)
        ragged = eagle._step(state.cache, e[:, None], h[:, None], one, counts)
        single = eagle._single_step(state.cache, e, h, counts)
    torch.testing.assert_close(single, ragged[:, 0], atol=1e-5, rtol=1e-5)


def test_eagle_proposal_matches_its_training_time_test(models: ToyModels) -> None:
    """Drafting step j + 1 (cached context, its own earlier hidden states) computes the same
    q as step j of the training-time test over the window prompt + drafts."""
    drafter, target = models.eagle, models.target
    prompt = torch.tensor([PROMPTS[0]])
    column = prompt.shape[1] - 2  # reads x_L = the pending token, drafts x_{L+1}
    with torch.no_grad():
        state = drafter.start(1, 40)
        count = torch.tensor([prompt.shape[1] - 1])
        out = target.extend(prompt[:, :-1], count, target.new_cache(1, 40))
        drafter.observe(state, out, prompt[:, 1:], count)
        proposal = drafter.propose(state, prompt[:, -1], 1.0, torch.Generator().manual_seed(2))
        window = torch.cat((prompt, proposal.tokens), dim=1)
        logits = drafter.training_outputs(window, target(window).features)
    for step in range(drafter.gamma):
        torch.testing.assert_close(
            proposal.probs[0, step],
            torch.softmax(logits[step, 0, column], -1),
            atol=1e-5,
            rtol=1e-4,
        )


def test_dspark_proposal_matches_its_training_pass(models: ToyModels) -> None:
    """Drafting (cached context, Markov head and confidence head as lookup tables) computes
    the same q_k and confidence logits as the training pass over the window prompt + drafts."""
    drafter, target = models.dspark, models.target
    prompt = torch.tensor([PROMPTS[0]])
    anchor = prompt.shape[1] - 1
    with torch.no_grad():
        state = drafter.start(1, 40)
        count = torch.tensor([anchor])
        out = target.extend(prompt[:, :-1], count, target.new_cache(1, 40))
        drafter.observe(state, out, prompt[:, 1:], count)
        proposal = drafter.propose(state, prompt[:, -1], 1.0, torch.Generator().manual_seed(2))
        window = torch.cat((prompt, proposal.tokens), dim=1)
        logits, confidence = drafter.training_outputs(
            window, target(window).features, torch.tensor([[anchor]])
        )
    assert proposal.confidence_logits is not None
    torch.testing.assert_close(
        proposal.probs[0], torch.softmax(logits[0, 0], -1), atol=1e-5, rtol=1e-4
    )
    torch.testing.assert_close(
        proposal.confidence_logits[0], confidence[0, 0], atol=1e-5, rtol=1e-4
    )


def test_drafting_for_finished_requests_stays_inside_the_caches(models: ToyModels) -> None:
    """Regression: a request that finished first (with a round's overshoot) is still drafted
    for while the others decode; the EAGLE-style drafter's scratch writes past its lengths
    once ran off the end of a cache sized for the longest prompt plus the new tokens."""
    from specproof.e2e.evaluation.comparisons import with_gamma

    eagle = with_gamma(models.eagle, 6)  # scratch writes reach gamma - 2 past the lengths
    prompts = [PROMPTS[0], PROMPTS[0][:3]]
    for new_tokens, seed in ((10, 0), (11, 1), (12, 2), (13, 3)):
        result = speculative_generate(
            models.target,
            eagle,
            prompts,
            new_tokens,
            temperature=1.0,
            schedule=FixedGamma(),
            seed=seed,
        )
        assert [len(t) for t in result.tokens] == [new_tokens, new_tokens]
