"""What validate=True adds to a torch-backend chain verification, counted without a clock: the
tensor operations and host reads of the default call, and the cheaper forms of its checks
(one clamp for a range, float32 bounds for a row sum, the row copy's verdict), each against the
comparisons it replaces. ``specproof/runners/validation_cost.py`` times the same calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from specproof.optimized import InvalidInputError, chain_verify
from specproof.optimized.checks.content import check_chain_inputs
from specproof.optimized.checks.contract import outside, sum_tolerance
from specproof.optimized.checks.row_contents import improper_rows, sum_bounds
from specproof.optimized.torch_backend import fused_gather

from specproof.runners.validation_operations import HOST_READ, operation_counts

NAN, INF = float("nan"), float("inf")
TINY = float(np.float32(1e-45))  # the smallest float32 subnormal


EXTRA_OPERATIONS = 30
"""At most this many more aten operations with validate=True than with validate=False, at the
default call above. The checks are O(B * n) masks and one read-back: about 20 with the row
copy's verdicts (the checks of rows read in full then cost none), 25 with logits. Before the
drafted-token check moved into the pass and the range tests became clamps, the same call made
50 more (probabilities) and 38 more (logits)."""


@pytest.mark.parametrize("logits", [False, True])
def test_validation_adds_few_operations_and_one_host_read(logits: bool) -> None:
    """The validated default call (nothing given but the tensors and the seed) reads the host
    once more than the unvalidated one (its one read-back of every check) and adds at most
    :data:`EXTRA_OPERATIONS` tensor operations."""
    if not logits and fused_gather.native() is None:
        pytest.skip("no C compiler: the torch copy reduces the final rows with torch operations")
    counts = operation_counts(chain_verify, logits)
    reads = [counts[v][HOST_READ] for v in (True, False)]
    assert reads[0] == reads[1] + 1, reads
    extra = sum(counts[True].values()) - sum(counts[False].values())
    assert 0 < extra <= EXTRA_OPERATIONS, extra


EDGES = [NAN, INF, -INF, 0.0, -0.0, TINY, -TINY, 0.5, 1.0, 1.001, 1.01, 1.0009999, -2.0, 3.4e38]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    ("low", "high"), [(0.0, 1.001), (0.0, 1.01), (None, 3.4028234663852886e38)]
)
def test_one_clamp_flags_what_the_two_comparisons_flag(
    dtype: torch.dtype, low: float | None, high: float
) -> None:
    values = torch.tensor(EDGES, dtype=dtype).to(torch.float32)
    near = torch.tensor([high], dtype=torch.float32)
    values = torch.cat(
        [values, near, torch.nextafter(near, near + 1), torch.nextafter(near, near - 1)]
    )
    inside = values <= high
    if low is not None:
        inside &= values >= low
    assert torch.equal(outside(values, low, high), ~inside)


def test_one_clamp_on_integers() -> None:
    ids = torch.tensor([-(2**62), -2, -1, 0, 1, 127, 128, 2**32 - 1, 2**32, 2**62])
    for low, high in ((0, 127), (-1, 127), (0, 2**32 - 1)):
        assert torch.equal(outside(ids, low, high), (ids < low) | (ids > high))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sum_bounds_pass_the_sums_the_tolerance_test_passes(dtype: torch.dtype) -> None:
    """Every float32 in [0.98, 1.02] (the tolerance edges and far beyond them), special
    values, and a million random bit patterns: the bounds refuse exactly the sums that
    ``(s - 1).abs() <= tolerance`` refuses, with any minimum."""
    tolerance = sum_tolerance(dtype)
    start, stop = np.float32(0.98).view(np.int32), np.float32(1.02).view(np.int32)
    near_one = torch.from_numpy(np.arange(start, stop, dtype=np.int32).view(np.float32))
    random_bits = torch.randint(-(2**31), 2**31 - 1, (1_000_000,), dtype=torch.int32)
    special = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 0.5, 2.0, 1e30])
    sums = torch.cat([near_one, random_bits.view(torch.float32), special])
    for minimum in (0.0, -0.0, -TINY, 1e-3, -INF, NAN):
        minima = torch.full_like(sums, minimum)
        expected = ~((minima >= 0) & ((sums - 1).abs() <= tolerance))
        assert torch.equal(improper_rows(sums, minima, tolerance), expected), minimum
    low, high = sum_bounds(tolerance)
    assert abs(low - 1) <= tolerance and abs(high - 1) <= tolerance


@pytest.mark.skipif(fused_gather.native() is None, reason="no C compiler")
def test_the_row_copy_verdict_is_improper_rows() -> None:
    """The C copy's per-row verdict is :func:`improper_rows` of the sum and minimum it keeps:
    rows summing to 1, off by more or less than the tolerance, with NaN, inf, -0.0 and tiny
    negatives in the vector part and in the tail."""
    vocab = 37  # two 16-lane steps and a tail of 5
    rows = torch.full((12, vocab), 1 / vocab)
    rows[1, 0] += 0.0009
    rows[2, 0] += 0.0011
    rows[3, 36] -= 0.0011
    rows[4, 3] = NAN
    rows[5, 36] = INF
    rows[6, 1] += rows[6, 0]
    rows[6, 0] = -0.0  # a proper row still
    rows[7, 35] = -TINY
    rows[8, 10] = -INF
    rows[9] = 0.0
    rows[10, :] = 2 / vocab
    rows[11, 20] += 0.00099
    tolerance = sum_tolerance(torch.float32)
    out = torch.empty_like(rows)
    stats = fused_gather.gather_with_stats(rows, torch.arange(12), out, sum_bounds(tolerance))
    assert stats is not None and stats.improper is not None
    expected = improper_rows(stats.sums, stats.minima, tolerance)
    assert torch.equal(stats.improper, expected)
    assert expected.tolist() == [
        False, False, True, True, True, True, False, True, True, True, True, False
    ]  # fmt: skip


def bad_token_case() -> dict:
    """Request 1 drafts id 5 at position 1 of V = 4, where its target row sums to 2 (the row
    its residual is drawn from: every draft at position 0 is accepted, p = q there)."""
    target = torch.full((2, 3, 4), 0.25)
    target[1, 1] = 0.5
    draft = torch.full((2, 2, 4), 0.25)
    tokens = torch.tensor([[0, 1], [2, 5]])
    return {"target": target, "draft": draft, "draft_tokens": tokens}


def test_drafted_tokens_checked_in_the_pass_are_worded_as_before() -> None:
    """The torch pass refuses a drafted id outside the vocabulary with the message of the
    argument checks (which the Triton backend still words refusals with), and before any row
    content it reads; lengths the caller gives are checked before the pass, and first."""
    case = bad_token_case()
    lengths = torch.tensor([2, 2])
    with pytest.raises(InvalidInputError) as from_arguments:
        check_chain_inputs(
            case["target"], case["draft"], case["draft_tokens"], lengths, torch.arange(2),
            torch.ones(2), target_logits=False, draft_logits=False,
        )  # fmt: skip
    with pytest.raises(InvalidInputError) as from_pass:
        chain_verify(**case, seed=1, backend="torch")
    assert str(from_pass.value) == str(from_arguments.value)
    assert str(from_pass.value) == "draft token 5 at request 1, position 1 is outside 0..3"
    with pytest.raises(InvalidInputError, match=r"num_draft_tokens must lie in 0\.\.2"):
        chain_verify(**case, seed=1, backend="torch", num_draft_tokens=torch.tensor([3, 2]))
    case["draft_tokens"] = torch.tensor([[0, 1], [2, -1]])
    with pytest.raises(InvalidInputError, match=r"outside 0\.\.3"):
        chain_verify(**case, seed=1, backend="torch")
    with pytest.raises(InvalidInputError, match="target has a row summing to 2"):
        chain_verify(**case, seed=1, backend="torch", placeholder_drafts=True)
