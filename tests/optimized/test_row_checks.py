"""The content-check contract of chain verification (optimized/checks/row_contents.py): rows
read in full are checked in full, rows read at one entry are checked at that entry, rows never
read are neither read nor checked and cannot change the output. Plus the torch backend's own helpers
(one Philox call per round, the tiled inverse CDF) against their definitions."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import DEVICE, examples
from specproof.optimized import InvalidInputError, chain_verify
from specproof.optimized.checks.streams import Streams
from specproof.optimized.philox import ACCEPT, BONUS, RESIDUAL, address_uniforms
from specproof.optimized.torch_backend.chain_verify import round_uniforms, round_uniforms_torch
from specproof.optimized.torch_backend.rows import TILE, sample_tiled
from specproof.optimized.torch_backend.rows import inverse_cdf as inverse_cdf_rows
from specproof.reference import Address, inverse_cdf
from specproof.reference.philox import PhiloxSource

NAN, INF = float("nan"), float("inf")


def probabilities_case() -> dict:
    """Request 0 rejects at position 1 (p(x) = 0); request 1 accepts both drafts (p = q)."""
    target = torch.tensor(
        [
            [[0.5, 0.0, 0.5], [0.25, 0.25, 0.5], [0.5, 0.5, 0.0]],
            [[0.25, 0.5, 0.25], [0.5, 0.25, 0.25], [0.0, 0.5, 0.5]],
        ]
    )
    draft = torch.tensor(
        [[[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]], [[0.25, 0.5, 0.25], [0.5, 0.25, 0.25]]]
    )
    tokens = torch.tensor([[1, 0], [1, 0]])
    return {"target": target, "draft": draft, "draft_tokens": tokens}


def run(backend: str = "torch", **case: object) -> object:
    moved = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in case.items()}
    return chain_verify(**moved, seed=3, backend=backend)


def test_the_case_reads_what_the_contract_says() -> None:
    result = run(**probabilities_case())
    assert result.num_accepted.tolist() == [0, 2]


@pytest.mark.parametrize(
    ("tensor", "index"),
    [
        ("target", (0, 1, 1)),  # after request 0's rejection: never read (token is 0)
        ("draft", (0, 1, 2)),  # after request 0's rejection: never read
        ("target", (1, 0, 0)),  # accepted row of request 1: read at its token only
        ("draft", (1, 1, 2)),  # accepted row of request 1: read at its token only
    ],
)
@pytest.mark.parametrize("bad", [NAN, INF, -1.0, 7.0])
def test_entries_never_read_are_not_checked_and_change_nothing(tensor, index, bad) -> None:
    case = probabilities_case()
    clean = run(**case)
    case[tensor][index] = bad
    dirty = run(**case)
    assert torch.equal(dirty.tokens, clean.tokens)


@pytest.mark.parametrize(
    ("tensor", "index", "bad", "message"),
    [
        ("target", (1, 0, 1), NAN, "target contains NaN"),  # the drafted token's entry
        ("target", (1, 1, 0), INF, "target contains inf"),
        ("target", (1, 0, 1), 1.5, "above 1"),
        ("draft", (1, 0, 1), -0.5, "negative"),
        ("draft", (1, 1, 0), 0.0, "draft probability 0"),
        ("target", (0, 0, 2), NAN, "NaN"),  # request 0's residual row is read in full
        ("draft", (0, 0, 0), -0.25, "negative"),  # and so is its draft row
        ("draft", (0, 0, 0), 0.5, "summing"),
        ("target", (1, 2, 0), 0.25, "summing"),  # request 1's bonus row
        ("target", (1, 2, 0), -0.25, "negative"),
    ],
)
def test_entries_read_are_checked(tensor, index, bad, message) -> None:
    case = probabilities_case()
    case[tensor][index] = bad
    with pytest.raises(InvalidInputError, match=message):
        run(**case)


def logits_case() -> dict:
    """Request 0 rejects at position 1 (its token has logit -inf in the target)."""
    target = torch.tensor(
        [
            [[0.0, float("-inf"), 1.0], [0.5, 0.0, 0.0], [0.0, 0.0, 2.0]],
            [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]],
        ]
    )
    draft = target[:, :2].clone()
    draft[0, 0] = torch.tensor([0.0, 1.0, 0.0])
    return {
        "target": target,
        "draft": draft,
        "draft_tokens": torch.tensor([[1, 0], [1, 0]]),
        "target_is_logits": True,
        "draft_is_logits": True,
    }


@pytest.mark.parametrize(
    ("where", "bad", "message"),
    [
        ((0, 0, 0), NAN, "NaN"),
        ((0, 0, 2), INF, r"\+inf"),
        ((1, 2, 0), NAN, "NaN"),  # request 1's bonus row is reached
        ((1, 1, 2), INF, r"\+inf"),
    ],
)
def test_reached_logits_rows_are_checked(where, bad, message) -> None:
    case = logits_case()
    assert run(**case).num_accepted.tolist() == [0, 2]
    case["target"][where] = bad
    with pytest.raises(InvalidInputError, match=message):
        run(**case)


def test_a_reached_logits_row_without_finite_entry_is_refused() -> None:
    case = logits_case()
    case["draft"][1, 1] = float("-inf")
    with pytest.raises(InvalidInputError, match="draft"):
        run(**case)


@pytest.mark.parametrize("bad", [NAN, INF, float("-inf")])
def test_logits_rows_after_the_first_rejection_are_not_read(bad) -> None:
    case = logits_case()
    clean = run(**case)
    # Every entry but the drafted token's (checked at every verified position, one gather).
    case["target"][0, 1, 1:] = bad
    case["target"][0, 2] = bad
    case["draft"][0, 1, 1:] = bad
    assert torch.equal(run(**case).tokens, clean.tokens)


def test_greedy_rows_reached_are_checked() -> None:
    case = probabilities_case()
    case["target"][0, 0, 0] = NAN
    with pytest.raises(InvalidInputError, match="NaN"):
        run(**case, temperature=0.0)


def test_triton_backend_checks_the_same_rows_after_the_kernel() -> None:
    case = probabilities_case()
    case["target"][1, 2, 0] = 0.25  # bonus row of request 1, read in full
    with pytest.raises(InvalidInputError, match="summing"):
        run("triton", **case)
    clean = probabilities_case()
    clean["target"][0, 1, 1] = NAN  # never read
    assert run("triton", **clean).num_accepted.tolist() == [0, 2]


def test_round_uniforms_are_the_address_uniforms() -> None:
    requests = torch.tensor([0, 5, 2**32 - 1])
    n = 3
    accept, residual, bonus = round_uniforms(Streams(11, 4, 9, requests, True), n)
    steps = torch.arange(1, n + 2)[None, :]
    for got, phase, width in ((accept, ACCEPT, n), (residual, RESIDUAL, n), (bonus, BONUS, n + 1)):
        want = address_uniforms(11, phase, steps[:, :width], requests[:, None], 4, 9)
        assert torch.equal(got, want)


words64 = st.integers(0, 2**64 - 1)


@examples(40)
@given(
    batch=st.integers(1, 12),
    n=st.integers(0, 8),
    per_request=st.booleans(),
    round=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_round_uniforms_are_the_references_at_every_size(batch, n, per_request, round, data):
    """The CPU's Python-integer draw (at most PYTHON_WORDS words), its numpy draw (more) and
    the torch draw of other devices (run here on the CPU) all give the reference's uniform at
    every address, with one shared key and offset or one per request (any 64-bit values)."""
    words = data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=batch, max_size=batch))
    count = batch if per_request else 1
    keys = data.draw(st.lists(words64, min_size=count, max_size=count))
    offsets = data.draw(st.lists(words64, min_size=count, max_size=count))
    if per_request:
        bits = [[v - 2**64 if v >= 2**63 else v for v in values] for values in (keys, offsets)]
        streams = Streams(
            torch.tensor(bits[0]), round, torch.tensor(bits[1]), torch.tensor(words), True
        )
    else:
        streams = Streams(keys[0], round, offsets[0], torch.tensor(words), True)
    want = {}
    for r, word in enumerate(words):
        source = PhiloxSource(keys[r % count], offsets[r % count])
        for phase, width in (("accept", n), ("residual", n), ("bonus", n + 1)):
            want[r, phase] = [
                source.uniform(Address(round, word, phase, i + 1)) for i in range(width)
            ]
    for draw in (round_uniforms, round_uniforms_torch):
        accept, residual, bonus = draw(streams, n)
        for r in range(batch):
            got = {"accept": accept[r], "residual": residual[r], "bonus": bonus[r]}
            for phase, values in got.items():
                assert values.tolist() == want[r, phase], (draw.__name__, r, phase)


@pytest.mark.parametrize("vocab", [5, TILE, 2 * TILE + 3])
def test_tiled_inverse_cdf_is_the_exact_inverse_cdf_on_dyadic_rows(vocab) -> None:
    """Masses are multiples of 2^-20 (sums exact in float32), zeros included; uniforms are
    multiples of 2^-24 as Philox gives them. The expected token comes from the reference's
    exact Fraction inverse CDF."""
    rng = random.Random(vocab)
    rows, uniforms = [], []
    for _ in range(12):
        support = rng.sample(range(vocab), k=min(vocab, rng.choice([1, 2, 7, 40])))
        counts = [0] * vocab
        for v in support:
            counts[v] = rng.randint(1, 2**12)
        rows.append(counts)
        uniforms.append(rng.randrange(2**24))
    mass = torch.tensor(rows, dtype=torch.float64).div(2**20).float()
    u = torch.tensor(uniforms, dtype=torch.float64).div(2**24).float()
    token, total = sample_tiled(mass.clone(), u)
    for r, counts in enumerate(rows):
        dist = [Fraction(c, sum(counts)) for c in counts]
        assert int(token[r]) == inverse_cdf(dist, Fraction(uniforms[r], 2**24))
        assert float(total[r]) == sum(counts) / 2**20


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (NAN, "target contains NaN at request 1, position 0"),
        (INF, "target contains inf at request 1, position 0"),
        (-INF, "target contains inf at request 1, position 0"),
        (-0.25, "target has negative probabilities at request 1, position 0"),
        (1.5, "target has a probability above 1 at request 1, position 0"),
    ],
)
def test_one_mask_per_gathered_read_still_names_the_violation(value: float, message: str) -> None:
    """Every way a gathered entry can be wrong shares one mask; the message is chosen on the
    error path from the first bad entry's value."""
    from specproof.optimized.checks.recorded import DeferredChecks
    from specproof.optimized.checks.row_contents import check_gathered

    values = torch.tensor([[0.5, 0.25], [value, 0.5]])
    checks = DeferredChecks()
    check_gathered(checks, "target", values, torch.ones(2, 2, dtype=torch.bool),
                   is_logits=False, dtype=torch.float32)  # fmt: skip
    with pytest.raises(InvalidInputError, match=message):
        checks.raise_if_any()


@pytest.mark.parametrize(
    ("total", "least", "message"),
    [
        (NAN, 0.0, "contains NaN \\(request 7\\)"),
        (INF, 0.0, "contains inf \\(request 7\\)"),
        (1.0, -0.5, "has negative probabilities \\(request 7\\)"),
        (0.5, 0.0, "has a row summing to 0.5 \\(request 7\\)"),
    ],
)
def test_one_mask_per_full_row_still_names_the_violation(
    total: float, least: float, message: str
) -> None:
    from specproof.optimized.checks.recorded import DeferredChecks
    from specproof.optimized.checks.row_contents import check_full_rows

    checks = DeferredChecks()
    sums, minima = torch.tensor([1.0, total]), torch.tensor([0.1, least])
    check_full_rows(checks, "draft", sums, minima, torch.float32, torch.tensor([3, 7]))
    with pytest.raises(InvalidInputError, match=message):
        checks.raise_if_any()
    fine = DeferredChecks()
    check_full_rows(fine, "draft", sums[:1], minima[:1], torch.float32, torch.tensor([3]))
    fine.raise_if_any()


@pytest.mark.parametrize("vocab", [1, 10, 100, TILE])
def test_one_tile_search_is_the_full_row_inverse_cdf(vocab) -> None:
    """A vocabulary of at most one tile is searched at its own width (V columns, not TILE):
    on rows whose partial sums round (softmax of normal logits, zeros included), tokens and
    totals equal the full-row inverse CDF's bit for bit, as they did with the TILE-wide tile."""
    generator = torch.Generator().manual_seed(vocab)
    mass = torch.softmax(torch.randn(64, vocab, generator=generator) * 3, dim=-1)
    mass[::3, : vocab // 2] = 0
    u = torch.randint(0, 2**24, (64,), generator=generator).float().div(2**24)
    token, total = sample_tiled(mass.clone(), u)
    assert torch.equal(token, inverse_cdf_rows(mass, u))
    assert torch.equal(total, mass.sum(dim=-1))
