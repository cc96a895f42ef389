"""Tensors with the values of a contiguous one in another memory layout, and the strategies
that draw layouts, dtypes and the Philox arguments for the fuzz suite."""

from __future__ import annotations

import torch
from hypothesis import strategies as st

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "expanded")
"""``transposed``: the last two dimensions stored swapped (last stride != 1); ``strided``:
every other element of a buffer twice as wide; ``offset``: a view that starts 3 elements into
its storage; ``expanded``: one request's values broadcast over the batch (stride 0), so the
case generator must give every request the same values."""

ROW_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""Multiples of 1/256 in [0, 1] are exact in all three (at most 9 significant bits)."""

WORD = 2**32


def laid_out(values: torch.Tensor, layout: str) -> torch.Tensor:
    """A view equal to ``values`` in ``layout`` (``expanded`` needs equal requests)."""
    if layout == "contiguous" or values.dim() == 0:
        return values.contiguous()
    if layout == "transposed":
        if values.dim() == 1:
            return laid_out(values, "strided")
        return values.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "strided":
        wide = torch.zeros(
            (*values.shape[:-1], 2 * values.shape[-1]), dtype=values.dtype, device=values.device
        )
        wide[..., ::2] = values
        return wide[..., ::2]
    if layout == "offset":
        storage = torch.zeros(values.numel() + 3, dtype=values.dtype, device=values.device)
        view = storage[3:].view(values.shape)
        view.copy_(values)
        return view
    if layout == "expanded":
        if values.shape[0] == 0:
            return values
        assert bool((values == values[:1]).all()), "expanded layouts need equal requests"
        return values[:1].expand(values.shape)
    raise ValueError(layout)


layouts = st.sampled_from(LAYOUTS)
row_dtypes = st.sampled_from(ROW_DTYPES)
seeds = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**63, 2**64 - 1]))
words = st.one_of(st.integers(0, WORD - 1), st.sampled_from([0, WORD - 1]))


@st.composite
def request_ids(draw: st.DrawFn, batch: int) -> list[int]:
    """Distinct ids in [0, 2^32), the extremes included often."""
    pool = st.one_of(st.integers(0, WORD - 1), st.sampled_from([0, 1, WORD - 2, WORD - 1]))
    return draw(st.lists(pool, min_size=batch, max_size=batch, unique=True))


BAD_WORDS = (-1, WORD, 1.0, True, 2.5)
BAD_SEEDS = (-1, 2**64, 1.0, False, "7")
