"""The block-drafter ceiling: the exact best pooled law, the estimates that bracket the ceiling,
the drafters' teacher-forced laws, and the command."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from e2e.toy_models import TOY_TARGET
from scipy.optimize import linprog

from specproof.e2e.evaluation.best_draft import (
    best_pooled_law,
    context_estimates,
    grouped_in_sample,
    survival_weights,
)
from specproof.e2e.evaluation.block_laws import dspark_block_laws, eagle_block_laws, sample_block
from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.eagle import EagleConfig, EagleDrafter
from specproof.e2e.models.loading import Models
from specproof.e2e.models.target import Target
from specproof.runners.e2e.experiments import ceiling

A = np.array([0.8, 0.2])
B = np.array([0.3, 0.7])
ONE = np.array([0.0, 1.0])


def test_best_pooled_law_by_hand() -> None:
    # Two laws of overlap 1/2: q = either gives (1 + 1/2) / 2, and nothing does better.
    assert best_pooled_law(np.stack([A, B])).acceptance == pytest.approx(0.75)
    assert best_pooled_law(np.stack([A])).acceptance == pytest.approx(1.0)
    assert best_pooled_law(np.stack([A, A, A])).acceptance == pytest.approx(1.0)
    # Three point masses: min(1, q_x) / 3 summed is 1/3 whatever q is.
    assert best_pooled_law(np.eye(3)).acceptance == pytest.approx(1 / 3)
    # a, b, and two copies of the point mass at 1: worked out by hand in the module below.
    assert best_pooled_law(np.stack([A, B, ONE, ONE])).acceptance == pytest.approx(0.725)


@pytest.mark.parametrize("seed", range(40))
def test_best_pooled_law_matches_a_linear_program(seed: int) -> None:
    """An independent solver: max (1/n) sum_{i,x} m_ix with m_ix <= p_i(x), m_ix <= q_x and q
    in the simplex, by scipy's HiGHS."""
    rng = np.random.default_rng(seed)
    count, vocab = int(rng.integers(1, 7)), int(rng.integers(2, 7))
    laws = rng.dirichlet(np.full(vocab, 0.4), count)
    best = best_pooled_law(laws)
    size = vocab + count * vocab
    upper = np.zeros((count * vocab, size))
    for i in range(count):
        for x in range(vocab):
            upper[i * vocab + x, vocab + i * vocab + x] = 1.0
            upper[i * vocab + x, x] = -1.0
    program = linprog(
        np.concatenate((np.zeros(vocab), -np.ones(count * vocab) / count)),
        A_ub=upper,
        b_ub=np.zeros(count * vocab),
        A_eq=np.concatenate((np.ones(vocab), np.zeros(count * vocab)))[None],
        b_eq=[1.0],
        bounds=[(0, None)] * vocab + [(0, p) for p in laws.ravel()],
    )
    assert program.success
    assert best.acceptance == pytest.approx(-program.fun, abs=1e-9)
    assert best.law.min() >= 0 and best.law.sum() == pytest.approx(1.0)
    assert np.minimum(laws, best.law).sum(axis=1).mean() == pytest.approx(best.acceptance)


@pytest.mark.parametrize("seed", range(20))
def test_ceilings_at_most_one_and_marginal_at_most_markov(seed: int) -> None:
    """In sample, the marginal ceiling is at most the Markov one exactly (the marginal law of a
    context is a candidate in each of its Markov groups); every estimate is at most 1."""
    rng = np.random.default_rng(seed)
    count, slots, vocab = int(rng.integers(2, 40)), 4, 8
    laws = rng.dirichlet(np.full(vocab, 0.3), (count, slots))
    previous = rng.integers(0, 3, (count, slots))
    marginal, markov = context_estimates(laws, previous)
    assert np.all(marginal.in_sample <= markov.in_sample + 1e-12)
    for estimate in (*marginal, *markov):
        assert np.all(estimate <= 1 + 1e-12) and np.all(estimate >= 0)


def hand_built_block(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Three slots after a context: y_1 and y_2 fair coins; slot 3's law is A or B by y_1 when
    y_2 = 0 and the point mass at 1 when y_2 = 1.

    By hand: slots 1 and 2 have one law each, so both ceilings are 1 there. At slot 3 the Markov
    drafter sees y_2: given y_2 = 0 it faces A or B at 1/2 each, best (1 + overlap 0.5) / 2 =
    0.75; given y_2 = 1, 1; so 0.875. The marginal drafter faces A, B (1/4 each) and the point
    mass (1/2): for q_0 in [0, 0.3] the mean acceptance is 0.25 q_0 + 0.05 + 0.25 q_0 + 0.175 +
    0.5 (1 - q_0) = 0.725, and for q_0 in [0.3, 0.8] it is 0.875 - 0.5 q_0 <= 0.725: so 0.725.
    """
    first, second = rng.integers(0, 2, count), rng.integers(0, 2, count)
    laws = np.empty((count, 3, 2))
    laws[:, 0] = laws[:, 1] = 0.5
    laws[:, 2] = np.where(second[:, None] == 1, ONE, np.where(first[:, None] == 0, A, B))
    previous = np.stack((np.full(count, 7), first, second), axis=1)
    return laws, previous


def test_estimates_bracket_the_hand_computed_ceiling() -> None:
    """Over 300 contexts of 16 samples, the split mean is at most and the in-sample mean at
    least the exact ceiling (0.725 marginal, 0.875 Markov at slot 3; 1 before), each checked
    with 4 standard errors of slack: a correct estimator fails with probability below 1e-4
    (normal approximation, 4 one-sided checks at slot 3; slots 1-2 are exact), while one off
    by 0.04 in the wrong direction fails with probability above 0.99 (the standard errors
    are 0.002-0.006). At this size the bias is 0.03-0.04 in sample and under 0.01 split."""
    rng = np.random.default_rng(5)
    rows = [context_estimates(*hand_built_block(rng, 16)) for _ in range(300)]
    exact = {"marginal": [1.0, 1.0, 0.725], "markov": [1.0, 1.0, 0.875]}
    for index, family in enumerate(("marginal", "markov")):
        upper = np.array([row[index].in_sample for row in rows])
        lower = np.array([row[index].split for row in rows])
        for values, sign in ((upper, 1), (lower, -1)):
            error = values.std(axis=0) / np.sqrt(len(values))
            assert np.all(sign * (values.mean(axis=0) - exact[family]) >= -4 * error - 1e-12)
        assert np.all(lower.mean(axis=0)[:2] == pytest.approx(1.0))
        # The estimates bracket closely at this size: within 0.05 of the exact value.
        assert upper.mean(axis=0)[2] - exact[family][2] < 0.05
        assert exact[family][2] - lower.mean(axis=0)[2] < 0.05


def test_population_of_the_hand_built_block() -> None:
    """Given one row per equally likely situation, in sample is the exact ceiling."""
    situations = np.stack((A, B, ONE, ONE))
    assert best_pooled_law(situations).acceptance == pytest.approx(0.725)
    assert grouped_in_sample(situations, np.array([0, 0, 1, 1])) == pytest.approx(0.875)


def test_survival_weights_by_hand() -> None:
    weights = survival_weights(np.array([[0.5, 0.4, 1.0, 0.3]]))
    assert weights[0].tolist() == pytest.approx([1.0, 0.5, 0.2, 0.2])


@pytest.fixture(scope="module")
def toy() -> Models:
    """Untrained small models (a sharpened target head, a random Markov head): the drafters'
    laws follow from their weights whatever those are."""
    torch.manual_seed(3)
    target = Target(TOY_TARGET).eval()
    with torch.no_grad():
        target.head.weight.mul_(10.0)
    dspark = DSparkDrafter(target, DSparkConfig(gamma=4, n_layers=1, n_heads=2, d_ff=64, rank=8))
    with torch.no_grad():
        dspark.markov_out.weight.normal_(0.0, 1.0)
    eagle = EagleDrafter(target, EagleConfig(gamma=4, n_heads=2, d_ff=64))
    return Models(target, dspark.eval(), eagle.eval(), {}, "toy")


CONTEXT = list(b"def f(x):\n    return x + 1\n# ")


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_teacher_forced_laws_are_what_propose_drafts(toy: Models, temperature: float) -> None:
    """Fed the drafts propose drew, each drafter's teacher-forced laws are propose's laws; the
    laws of several samples at once are those of each sample alone."""
    torch.set_num_threads(1)
    block = sample_block(toy.target, CONTEXT, 3, 4, temperature, torch.Generator().manual_seed(0))
    full = toy.target(torch.cat((torch.tensor([CONTEXT] * 3), block.tokens), dim=1)).logits
    laws = torch.softmax(full[:, len(CONTEXT) - 1 : len(CONTEXT) + 3], dim=-1)
    assert torch.allclose(block.laws, laws, atol=1e-5)
    for drafter, law_of in ((toy.dspark, dspark_block_laws), (toy.eagle, eagle_block_laws)):
        together = law_of(drafter, block, temperature)
        for i in range(3):
            alone = block._replace(
                tokens=block.tokens[i : i + 1], previous=block.previous[i : i + 1]
            )
            assert torch.allclose(
                law_of(drafter, alone, temperature), together[i : i + 1], atol=1e-5
            )
        state = drafter.start(1, 48)
        cache = toy.target.new_cache(1, 48)
        length = torch.tensor([len(CONTEXT) - 1])
        output = toy.target.extend(torch.tensor([CONTEXT[:-1]]), length, cache)
        drafter.observe(state, output, torch.tensor([CONTEXT[1:]]), length)
        proposal = drafter.propose(
            state, torch.tensor([CONTEXT[-1]]), temperature, torch.Generator().manual_seed(1)
        )
        drafted = proposal.tokens
        previous = torch.cat((torch.tensor([[CONTEXT[-1]]]), drafted[:, :-1]), dim=1)
        forced = block._replace(tokens=drafted, previous=previous)
        assert torch.allclose(law_of(drafter, forced, temperature), proposal.probs, atol=1e-5)


def test_dspark_is_a_vanilla_markov_drafter(toy: Models) -> None:
    """On the same samples DSpark's teacher-forced acceptance never exceeds the in-sample
    Markov ceiling (its law at slot k is one candidate of each (context, x_{k-1}) group), while
    it may exceed the marginal one."""
    for seed in range(4):
        block = sample_block(toy.target, CONTEXT, 24, 4, 1.0, torch.Generator().manual_seed(seed))
        laws = block.laws.double().numpy()
        draft = dspark_block_laws(toy.dspark, block, 1.0).double().numpy()
        accepted = np.minimum(laws, draft).sum(axis=-1).mean(axis=0)
        _, markov = context_estimates(laws, block.previous.numpy())
        assert np.all(accepted <= markov.in_sample + 1e-9)


def test_command_tables_on_toy_models(toy: Models, monkeypatch: pytest.MonkeyPatch) -> None:
    contexts = [CONTEXT[i:] + CONTEXT[:i] for i in range(8)]
    tables = {}
    for temperature in (1.0, 0.0):
        entry = ceiling.sampled_table(toy, contexts, 6, temperature, 0, "toy")
        entry["decoded"] = ceiling.decoded_table(toy, contexts, 6, temperature, 0)
        tables[f"toy/T={temperature:g}"] = entry
    hot = tables["toy/T=1"]
    for family in ("marginal", "markov"):
        for k, (low, high) in enumerate(hot[f"{family}_bracket"]):
            assert low <= hot[f"{family}_split"]["mean"][k] <= 1 + 1e-9
            assert hot[f"{family}_in_sample"]["mean"][k] <= high <= 1 + 1e-9
    assert hot["markov_in_sample"]["mean"][0] == pytest.approx(1.0)
    assert tables["toy/T=0"]["ceiling"].startswith("1 at every slot")
    result = {
        "command": "test",
        "contexts_per_domain": 8,
        "samples_per_context": 6,
        "slots": 4,
        "new_tokens": 6,
        "seconds": 1.0,
        "load_before": [0.0],
        "load_after": [0.0],
        "tables": tables,
    }
    text = ceiling.markdown(result)
    assert text.count("\n| 4 |") == 2


@pytest.mark.parametrize(
    "argv", [["--contexts", "3"], ["--samples", "1"], ["--threads", "0"], ["--new-tokens", "x"]]
)
def test_command_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        ceiling.main(argv)
    assert exit_info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
