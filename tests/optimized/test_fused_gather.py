"""The torch backend's row copy with sums and minima (optimized/torch_backend/fused_gather.py):
the copy is exact, the statistics are what torch's sum and amin give the checks, and chain
verification refuses the same rows with the same words with and without it."""

from __future__ import annotations

import math

import pytest
import torch
from specproof.optimized import InvalidInputError, chain_verify
from specproof.optimized.torch_backend import fused_gather

needs_native = pytest.mark.skipif(
    fused_gather.native() is None, reason="no C compiler: the torch fallback is the only path"
)


@pytest.fixture
def without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chain verification as on a machine without a C compiler (the torch fallback)."""
    monkeypatch.setattr(fused_gather, "native", lambda: None)


@needs_native
@pytest.mark.parametrize("vocab", [1, 3, 15, 16, 17, 33, 1000, 128_256])
def test_copy_sums_and_minima(vocab: int) -> None:
    generator = torch.Generator().manual_seed(vocab)
    storage = torch.randn(7 * vocab + 5, generator=generator)
    flat = storage[5:].view(7, vocab)  # a view with a storage offset
    index = torch.tensor([6, 0, 3, 3])
    out = torch.empty(4, vocab)
    stats = fused_gather.gather_with_stats(flat, index, out)
    assert stats is not None
    sums, minima, _ = stats
    assert torch.equal(out, flat[index])
    assert torch.equal(minima, flat[index].amin(dim=-1))
    exact = flat[index].double().sum(dim=-1)
    assert torch.allclose(sums.double(), exact, rtol=0, atol=1e-6 * vocab)


@needs_native
def test_strided_rows_and_special_values() -> None:
    """Rows spaced wider than V (a [B, P, V] view's rows), NaN, +-inf and -0.0 placed in the
    vector part and in the tail of a row."""
    vocab = 37
    base = torch.rand(5, 50)
    flat = base[:, :vocab]  # row stride 50
    flat[0, 3] = float("nan")
    flat[1, 36] = float("nan")  # in the tail (37 = 2 * 16 + 5)
    flat[2, 10] = float("inf")
    flat[2, 11] = float("-inf")
    flat[3, 0] = -0.0
    flat[3, 1:] = 0.0
    flat[4, 35] = -1e-30
    index = torch.arange(5)
    out = torch.empty(5, vocab)
    stats = fused_gather.gather_with_stats(flat, index, out)
    assert stats is not None
    sums, minima, _ = stats
    assert torch.equal(out.view(torch.int32), flat[index].view(torch.int32))  # NaN bits too
    assert math.isnan(sums[0]) and math.isnan(sums[1]) and math.isnan(sums[2])
    assert float(minima[2]) == float("-inf")
    assert float(sums[3]) == 0.0 and float(minima[3]) == 0.0 and not float(minima[3]) < 0
    assert float(minima[4]) == pytest.approx(-1e-30)
    assert minima[4] < 0


def test_other_inputs_fall_back() -> None:
    """float16 rows, rows off the CPU or an index outside the rows: None, nothing copied (the
    caller's torch gather then copies, or raises its index error)."""
    rows = torch.rand(3, 8)
    out = torch.full((1, 8), 7.0)
    assert fused_gather.gather_with_stats(rows.half(), torch.tensor([0]), out) is None
    assert fused_gather.gather_with_stats(rows, torch.tensor([3]), out) is None
    assert fused_gather.gather_with_stats(rows, torch.tensor([-1]), out) is None
    assert torch.equal(out, torch.full((1, 8), 7.0))


def bad_rows(kind: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One request whose final rows (target row 0, draft row 0: the draft is rejected there)
    break the contract in the way ``kind`` names, the drafted entries left valid."""
    vocab = 40
    target = torch.full((1, 2, vocab), 1 / vocab)
    target[0, 0, 0] = 0.0  # the draft token 0 is always rejected: p(0) = 0
    target[0, 0, 1] += 1 / vocab
    draft = torch.full((1, 1, vocab), 1 / vocab)
    row = (0, 0, 37)  # in the tail of the 16-lane loop
    side = draft if kind.startswith("draft") else target
    if kind.endswith("nan"):
        side[row] = float("nan")
    elif kind.endswith("inf"):
        side[row] = float("inf")
    elif kind.endswith("negative"):
        side[row] = -1e-12
    elif kind.endswith("sum"):
        side[0, 0, 5:9] += 0.5
    tokens = torch.zeros(1, 1, dtype=torch.int64)
    return target, draft, tokens


KINDS = [
    f"{side} {fault}" for side in ("target", "draft") for fault in ("nan", "inf", "negative", "sum")
]


@pytest.mark.parametrize("kind", KINDS)
def test_same_refusal_with_and_without_the_native_copy(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, draft, tokens = bad_rows(kind)
    messages = []
    for native in (fused_gather.native, lambda: None):
        monkeypatch.setattr(fused_gather, "native", native)
        with pytest.raises(InvalidInputError) as refused:
            chain_verify(target, draft, tokens, seed=3, backend="torch")
        messages.append(str(refused.value))
    assert messages[0] == messages[1]
    side, fault = kind.split()
    word = {"nan": "NaN", "inf": "inf", "negative": "negative", "sum": "summing to"}[fault]
    assert messages[0].startswith(side) and word in messages[0]


@pytest.mark.usefixtures("without_native")
def test_fallback_accepts_proper_rows() -> None:
    target, draft, tokens = bad_rows("target none")
    result = chain_verify(target, draft, tokens, seed=3, backend="torch")
    assert int(result.num_accepted[0]) == 0 and 1 <= int(result.tokens[0, 0]) < 40
