"""Draft ids outside the vocabulary (vLLM's -1 placeholder, or any id < 0 or >= V).

Kernel contract, whatever ``validate``: such a draft is never read and never accepted; the
request is rejected at that position and its final token is drawn as at any rejection there,
from norm(max(0, p_k - q_k)) (q_k the draft row as given; with n-gram drafts nothing is
removed, so from p_k). With ``validate=True`` chain verification refuses such ids, except -1
where the caller passes ``placeholder_drafts=True`` (what the vLLM drop-in does).
"""

from __future__ import annotations

import random
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch
from optimized_support import (
    DENOMINATOR,
    DEVICE,
    as_fractions,
    as_tensor,
    backends,
    dyadic_dist,
    emitted,
    reference_chain,
)
from specproof.optimized import InvalidInputError, chain_verify, tree_verify
from specproof.optimized.compat import rejection_sample

VOCAB = 100


def one_hot(token: int, vocab: int = VOCAB) -> list[float]:
    return [1.0 if v == token else 0.0 for v in range(vocab)]


def placeholder_case(bad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Drafts [1, 99, bad_id]; the target is one-hot at 1, 99, 7 and (bonus row) 9; the draft
    rows are one-hot at the drafts, and uniform over tokens 0..3 at the third position."""
    target = torch.tensor([[one_hot(1), one_hot(99), one_hot(7), one_hot(9)]], device=DEVICE)
    spread = [0.25 if v < 4 else 0.0 for v in range(VOCAB)]
    draft = torch.tensor([[one_hot(1), one_hot(99), spread]], device=DEVICE)
    tokens = torch.tensor([[1, 99, bad_id]], device=DEVICE)
    return target, draft, tokens


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("bad_id", [-1, -7, VOCAB, 2**40])
@pytest.mark.parametrize("mode", ["draft-probs", "n-gram", "greedy", "logits"])
def test_out_of_range_draft_is_rejected_unvalidated(backend: str, bad_id: int, mode: str) -> None:
    """Regression: the Triton kernel read the entry at index -1, accepted the placeholder and
    emitted [[1, 99, -1, 9]]; the torch backend raised an index error."""
    target, draft, tokens = placeholder_case(bad_id)
    kwargs: dict = {}
    if mode == "greedy":
        kwargs["temperature"] = 0.0
    if mode == "logits":
        target = torch.where(target > 0, 0.0, -40.0)  # softmax: one-hot up to e^-40 per entry
        kwargs["target_is_logits"] = True
    result = chain_verify(
        target,
        None if mode == "n-gram" else draft,
        tokens,
        seed=3,
        backend=backend,  # type: ignore[arg-type]
        validate=False,
        **kwargs,
    )
    assert result.tokens.tolist() == [[1, 99, 7, -1]]
    assert result.num_accepted.tolist() == [2]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("bad_id", [-1, VOCAB])
def test_out_of_range_draft_is_refused_when_validated(backend: str, bad_id: int) -> None:
    target, draft, tokens = placeholder_case(bad_id)
    with pytest.raises(InvalidInputError, match="outside"):
        chain_verify(target, draft, tokens, seed=3, backend=backend)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("with_draft", [True, False])
def test_declared_placeholder_passes_validation(backend: str, with_draft: bool) -> None:
    target, draft, tokens = placeholder_case(-1)
    result = chain_verify(
        target,
        draft if with_draft else None,
        tokens,
        seed=3,
        backend=backend,  # type: ignore[arg-type]
        placeholder_drafts=True,
    )
    assert result.tokens.tolist() == [[1, 99, 7, -1]]
    with pytest.raises(InvalidInputError, match="outside"):  # only -1 is the placeholder
        chain_verify(
            target,
            draft,
            tokens - 1,
            seed=3,
            backend=backend,  # type: ignore[arg-type]
            placeholder_drafts=True,
        )


def never_accepted_position(rng: random.Random, vocab: int) -> tuple[list[int], list[int], int]:
    """(p, q, t) with p(t) = 0 < q(t): a draft of t at this position is rejected for every
    uniform, and its residual is norm(max(0, p - q)), what a placeholder there must give."""
    t = rng.randrange(vocab)
    p = dyadic_dist(rng, vocab)
    other = (t + 1) % vocab
    p[other] += p[t]
    p[t] = 0
    q = dyadic_dist(rng, vocab)
    if q[t] == 0:
        donor = max(range(vocab), key=lambda v: q[v])
        q[donor] -= 1
        q[t] += 1
    assert p[t] == 0 < q[t]  # the premise every test built on it relies on
    assert sum(as_fractions(p)) == sum(as_fractions(q)) == Fraction(1)
    return p, q, t


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("with_draft", [True, False])
@pytest.mark.parametrize("data_seed", range(3))
def test_placeholder_replays_the_reference_rejection(
    backend: str, with_draft: bool, data_seed: int
) -> None:
    """A placeholder at position k gives the reference chain rule's tokens for a draft that is
    certainly rejected at k (a token of target probability 0): same uniforms, same residual."""
    rng = random.Random(data_seed)
    vocab, n, batch, seed = 8, 3, 6, 500 + data_seed
    rows_p, rows_q, tokens, stand_ins = [], [], [], []
    for _ in range(batch):
        k = rng.randrange(n)
        p = [dyadic_dist(rng, vocab) for _ in range(n + 1)]
        q = [dyadic_dist(rng, vocab) for _ in range(n)]
        x = [rng.choices(range(vocab), weights=row)[0] for row in q]
        p[k], q[k], t = never_accepted_position(rng, vocab)
        if not with_draft:
            q = [[DENOMINATOR * (v == token) for v in range(vocab)] for token in x]
            q[k] = [DENOMINATOR * (v == t) for v in range(vocab)]
        stand_ins.append([*x[:k], t, *x[k + 1 :]])
        x[k] = -1
        rows_p.append(p)
        rows_q.append(q)
        tokens.append(x)
    result = chain_verify(
        as_tensor(rows_p, vocab),
        as_tensor(rows_q, vocab) if with_draft else None,
        torch.tensor(tokens, device=DEVICE),
        seed=seed,
        backend=backend,  # type: ignore[arg-type]
        placeholder_drafts=True,
    )
    for b in range(batch):
        want = reference_chain(
            [as_fractions(row) for row in rows_p[b]],
            [as_fractions(row) for row in rows_q[b]],
            stand_ins[b],
            seed=seed,
            round=0,
            request=b,
        )
        assert emitted(result.tokens)[b] == want


def vllm_call(
    draft_ids: list[int],
    lengths: list[int],
    target_rows: list[list[float]],
    bonus: list[int],
    *,
    draft_rows: list[list[float]] | None = None,
    greedy: bool = False,
    validate: bool = True,
) -> torch.Tensor:
    return rejection_sample(
        torch.tensor(draft_ids, dtype=torch.int32, device=DEVICE),
        lengths,
        max(lengths),
        torch.tensor(lengths, device=DEVICE).cumsum(0).to(torch.int32),
        None if draft_rows is None else torch.tensor(draft_rows, device=DEVICE),
        torch.tensor(target_rows, device=DEVICE),
        torch.tensor([[b] for b in bonus], device=DEVICE),
        SimpleNamespace(all_greedy=greedy, all_random=not greedy, temperature=None),
        seed=11,
        validate=validate,
    )


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("mode", ["n-gram", "draft-probs", "greedy"])
def test_vllm_placeholder_draft_is_rejected(validate: bool, mode: str) -> None:
    """vLLM's behaviour: drafts [1, V - 1, -1] against a target that agrees with the first two
    emit them, then the recovered token of the third position (7), never -1 nor the bonus."""
    target = [one_hot(1), one_hot(VOCAB - 1), one_hot(7)]
    spread = [0.25 if v < 4 else 0.0 for v in range(VOCAB)]
    draft = [one_hot(1), one_hot(VOCAB - 1), spread] if mode == "draft-probs" else None
    out = vllm_call(
        [1, VOCAB - 1, -1],
        [3],
        target,
        [9],
        draft_rows=draft,
        greedy=mode == "greedy",
        validate=validate,
    )
    assert out.tolist() == [[1, VOCAB - 1, 7, -1]]


def test_vllm_placeholder_leaves_other_requests_alone() -> None:
    """Request 0 pads its one real draft with a placeholder; request 1 is fully accepted and
    ends with its bonus token; request 2 has no drafts."""
    target = [one_hot(4), one_hot(5), one_hot(6), one_hot(2)]
    out = vllm_call([4, -1, 6, 2], [2, 2, 0], target, [8, 9, 3])
    assert out.tolist() == [[4, 5, -1], [6, 2, 9], [3, -1, -1]]


@pytest.mark.parametrize("bad_id", [-2, VOCAB])
def test_vllm_other_out_of_range_ids_are_refused(bad_id: int) -> None:
    with pytest.raises(InvalidInputError, match="outside"):
        vllm_call([1, bad_id], [2], [one_hot(1), one_hot(2)], [0])


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("bad_id", [-1, VOCAB])
def test_tree_candidate_outside_vocabulary_is_never_accepted(backend: str, bad_id: int) -> None:
    """Regression: a tree candidate outside 0..V-1 has no target mass and is never read. Both
    requests: root -> node 1 (the bad id in request 1) or node 2 (token 5) -> node 3 (token 9).
    The memory at index -1 of request 1's root row (request 0's last entry) and at index V (the
    next row's first entry) holds 1.0, so a read there would accept the bad candidate."""
    rows = [one_hot(5), one_hot(0), one_hot(9), one_hot(VOCAB - 1)]
    target = torch.tensor([rows, rows], device=DEVICE)
    candidates = torch.tensor([[0, 7, 5, 9], [0, bad_id, 5, 9]], device=DEVICE)
    first_child = torch.tensor([[1, -1, 3, -1]] * 2, device=DEVICE)
    next_sibling = torch.tensor([[-1, 2, -1, -1]] * 2, device=DEVICE)
    result = tree_verify(
        target,
        candidates,
        first_child,
        next_sibling,
        seed=1,
        backend=backend,  # type: ignore[arg-type]
        validate=False,
    )
    assert result.tokens.tolist() == [[5, 9, VOCAB - 1, -1]] * 2


def test_flashinfer_unvalidated_placeholder_is_rejected() -> None:
    """FlashInfer's layout, validate=False: the -1 draft is rejected unread and is not counted
    by the accepted_num alignment metric either (validate=True refuses it)."""
    from specproof.optimized.compat import chain_speculative_sampling

    target, draft, tokens = placeholder_case(-1)
    out, accepted, emitted_num = chain_speculative_sampling(
        draft, tokens.to(torch.int32), target, seed=2, validate=False
    )
    assert out.tolist() == [[1, 99, 7, -1]]
    assert accepted.tolist() == [2] and emitted_num.tolist() == [2]
    with pytest.raises(InvalidInputError, match="outside"):
        chain_speculative_sampling(draft, tokens.to(torch.int32), target, seed=2)
