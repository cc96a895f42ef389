"""Small logits are softmaxed in one call and decided in one pass
(``torch_backend.chain_verify.SOFTMAX_AT_ONCE``); larger ones go through the loop over
positions. Both must give the same tokens, acceptance counts and refusals: the one-pass path
is checked here against the loop, forced by setting the limit to 0."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import examples
from specproof.optimized import InvalidInputError, chain_verify
from specproof.optimized.torch_backend import chain_verify as torch_chain


def both_paths(**case: object) -> list[object]:
    """The torch backend's result (or its refusal's message) in one pass, then in the loop."""
    out: list[object] = []
    limit = torch_chain.SOFTMAX_AT_ONCE
    try:
        for at_once in (limit, 0):
            torch_chain.SOFTMAX_AT_ONCE = at_once
            try:
                result = chain_verify(**case, seed=11, backend="torch")
                out.append((result.tokens.tolist(), result.num_accepted.tolist()))
            except InvalidInputError as error:
                out.append(str(error))
    finally:
        torch_chain.SOFTMAX_AT_ONCE = limit
    return out


@examples(60)
@given(
    batch=st.integers(1, 6),
    n=st.integers(1, 5),
    vocab=st.integers(2, 40),
    scale=st.sampled_from([0.5, 4.0, 30.0]),
    with_draft=st.booleans(),
    draft_logits=st.booleans(),
    data=st.data(),
)
def test_one_pass_decides_as_the_loop(batch, n, vocab, scale, with_draft, draft_logits, data):
    """Random logits (sharp ones included, so drafts are accepted and rejected), ragged
    lengths, temperatures among 0.5, 1 and 2, drafts outside the vocabulary, with and without
    a draft law (as probabilities or logits)."""
    seed = data.draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    target = torch.randn(batch, n + 1, vocab, generator=generator) * scale
    tokens = torch.randint(0, vocab, (batch, n), generator=generator)
    tokens[torch.rand(batch, n, generator=generator) < 0.1] = -1
    lengths = torch.randint(0, n + 1, (batch,), generator=generator)
    temperature = torch.tensor([0.5, 1.0, 2.0])[torch.randint(0, 3, (batch,), generator=generator)]
    draft = None
    if with_draft:
        draft = torch.randn(batch, n, vocab, generator=generator) * scale
        if not draft_logits:
            draft = torch.softmax(draft, dim=-1)
    case = dict(
        target=target, draft=draft, draft_tokens=tokens, num_draft_tokens=lengths,
        target_is_logits=True, draft_is_logits=with_draft and draft_logits,
        temperature=temperature, placeholder_drafts=True,
    )  # fmt: skip
    one_pass, loop = both_paths(**case)
    assert one_pass == loop


@pytest.mark.parametrize("where", ["before", "at", "after"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_bad_logits_row_is_refused_exactly_where_the_loop_reads_it(where, bad):
    """Request 0 is rejected at position 1 (its drafted token has no mass there). A NaN or
    +inf row before or at the rejection is refused by both paths with the same message; one
    after it is never read by either."""
    target = torch.zeros(2, 4, 5)
    target[0, 0, 1] = 50.0  # position 0 accepted (p ~ 1)
    target[0, 1, 2] = -float("inf")  # position 1: no mass at its drafted token, rejected there
    tokens = torch.tensor([[1, 2, 3], [0, 1, 2]])
    position = {"before": 0, "at": 1, "after": 2}[where]
    target[0, position, 4] = bad
    case = dict(target=target, draft=None, draft_tokens=tokens, target_is_logits=True)
    one_pass, loop = both_paths(**case)
    assert one_pass == loop
    assert isinstance(one_pass, str) == (where != "after")
