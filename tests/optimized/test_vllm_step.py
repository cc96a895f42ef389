"""vLLM's whole verification step (``optimized/vllm_step.py``): the truncation against the
reference's filters in vLLM's order, the step's law through the audit, greedy and seeded
requests, and its refusals."""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch
from specproof.optimized import InvalidInputError
from specproof.optimized.vllm_step import truncate_logits_, verify_step
from specproof.reference.filters import filtered

from specproof.adapters.vllm_verifier import step_logits

MARGIN = 1e-4
"""A case is skipped when a cut lies this close to its boundary (float rounding decides it)."""


def near_boundary(probs: list[Fraction], top_p: float | None, min_p: float | None) -> bool:
    ordered = sorted((float(p) for p in probs), reverse=True)
    total, masses = 0.0, []
    for mass in ordered:
        masses.append(total)
        total += mass
    if top_p is not None and any(abs(m - top_p) < MARGIN for m in masses):
        return True
    return min_p is not None and any(abs(m / ordered[0] - min_p) < MARGIN for m in ordered)


def test_truncation_keeps_the_reference_support_in_vllm_order() -> None:
    """Every cut combination on 300 random rows: the tokens left finite are the support of
    ``reference.filters.filtered(order="vllm")`` (exact; cases within MARGIN of a cut skipped;
    the cut after min-p and top-k sees the law they renormalised, which a wrong order misses)."""
    rng = torch.Generator().manual_seed(5)
    checked = 0
    for _ in range(300):
        vocab = 6
        # Distinct masses: ties at the top-k cut are tests/audit/test_top_k_ties.py's.
        weights = (torch.randperm(40, generator=rng)[:vocab] + 1).tolist()
        total = sum(weights)
        probs = [Fraction(w, total) for w in weights]
        temperature = [0.6, 1.0, 1.3][int(torch.randint(0, 3, (1,), generator=rng))]
        top_k = [None, 2, 4][int(torch.randint(0, 3, (1,), generator=rng))]
        top_p = [None, 0.5, 0.8][int(torch.randint(0, 3, (1,), generator=rng))]
        min_p = [None, 0.3, 0.6][int(torch.randint(0, 3, (1,), generator=rng))]
        after_min_p = filtered(probs, min_p=min_p, order="vllm")
        after_k = filtered(probs, top_k=top_k, min_p=min_p, order="vllm")
        if near_boundary(list(after_min_p), None, min_p) or near_boundary(
            list(after_k), top_p, None
        ):
            continue
        law = filtered(probs, top_k=top_k, top_p=top_p, min_p=min_p, order="vllm")
        logits = torch.tensor([[temperature * math.log(w / total) for w in weights]])
        truncate_logits_(
            logits,
            torch.tensor([temperature]),
            None if top_k is None else torch.tensor([top_k]),
            None if top_p is None else torch.tensor([top_p]),
            None if min_p is None else torch.tensor([min_p]),
        )
        kept = {t for t in range(vocab) if math.isfinite(float(logits[0, t]))}
        assert kept == {t for t, mass in enumerate(law) if mass > 0}, (weights, top_k, top_p)
        checked += 1
    assert checked > 200


def test_top_k_first_truncation_equals_the_full_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """Top-p after a small top-k sorts only the k largest logits: the masked rows are bitwise
    those of the full sort (ties at the k-th kept, bfloat16-rounded ties included), on random
    rows with per-row k and p, rows that repeat values and rows with fewer finite logits
    than k."""
    from specproof.optimized import vllm_step

    rng = torch.Generator().manual_seed(11)
    for case in range(60):
        rows, vocab = 1 + case % 7, [40, 300, 4100][case % 3]
        logits = torch.randn(rows, vocab, generator=rng) * 4
        if case % 2:
            logits = logits.to(torch.bfloat16).to(torch.float32)  # many exact ties
        if case % 5 == 0:  # rows cut before: fewer finite entries than k
            logits[:, 3:] = -math.inf
        temperature = torch.rand(rows, generator=rng) + 0.3
        top_k = torch.randint(1, 60, (rows,), generator=rng)
        top_p = torch.rand(rows, generator=rng) * 0.6 + 0.4
        fast = truncate_logits_(logits.clone(), temperature, top_k, top_p)
        monkeypatch.setattr(vllm_step, "TOP_K_FIRST_LIMIT", 0)
        sorted_whole = truncate_logits_(logits.clone(), temperature, top_k, top_p)
        monkeypatch.undo()
        assert torch.equal(fast, sorted_whole), case


def test_the_step_is_lossless_through_the_audit(specproof: object) -> None:
    """The audit's vllm-logits battery (per-request temperature, top-k, top-p, min-p, greedy
    and seeded rows, ragged drafts) on the step with the audit's bonus token (level quick:
    alpha 1e-6 per statistical row, power >= 0.9 against TV >= 0.2), and its must-fail twin."""
    specproof.assert_lossless(step_logits, signature="vllm-logits", level="quick")  # type: ignore[attr-defined]


def batch_of(seeds: list[int | None], vocab: int = 5, drafts: int = 2) -> dict[str, object]:
    batch = len(seeds)
    total = batch * drafts
    torch.manual_seed(0)
    logits = torch.randn(total + batch, vocab)
    return {
        "logits": logits,
        "target_indices": torch.arange(total),
        "bonus_indices": torch.arange(total, total + batch),
        "draft_token_ids": torch.randint(0, vocab, (total,), dtype=torch.int32),
        "num_draft_tokens": [drafts] * batch,
        "cu_num_draft_tokens": torch.arange(1, batch + 1, dtype=torch.int32) * drafts,
        "draft_probs": None,
        "temperature": torch.ones(batch),
    }


def test_a_seeded_request_draws_the_same_at_any_row() -> None:
    """A request seeded 7 emits the same tokens alone and at row 2 of a batch, bonus included
    (its generator's next draw is its key)."""
    alone = batch_of([7])
    alone_out = verify_step(**alone, generators={0: torch.Generator().manual_seed(7)})  # type: ignore[arg-type]
    many = batch_of([None, None, 7])
    many["logits"][4:6] = alone["logits"][0:2]  # type: ignore[index]
    many["logits"][-1] = alone["logits"][-1]  # type: ignore[index]
    many["draft_token_ids"][4:6] = alone["draft_token_ids"]  # type: ignore[index]
    out = verify_step(**many, generators={2: torch.Generator().manual_seed(7)})  # type: ignore[arg-type]
    assert out[2].tolist() == alone_out[0].tolist()


def test_greedy_rows_follow_the_argmax() -> None:
    """All-greedy batch: drafts equal to the argmax are accepted, then the argmax (exact)."""
    case = batch_of([None, None])
    logits = case["logits"]
    best = logits.argmax(dim=1)  # type: ignore[attr-defined]
    drafts = best[:4].clone().to(torch.int32)
    drafts[3] = (drafts[3] + 1) % 5  # request 1 rejected at its second draft
    case["draft_token_ids"] = drafts
    out = verify_step(**{**case, "temperature": None}, all_greedy=True)  # type: ignore[arg-type]
    assert out.tolist() == [
        [int(best[0]), int(best[1]), int(best[4])],
        [int(best[2]), int(best[3]), -1],
    ]


def test_refuses_indices_outside_the_logits() -> None:
    case = batch_of([None])
    case["bonus_indices"] = torch.tensor([99])
    with pytest.raises(InvalidInputError, match="outside"):
        verify_step(**case)  # type: ignore[arg-type]


def test_refuses_a_random_batch_without_temperatures() -> None:
    case = batch_of([None])
    with pytest.raises(InvalidInputError, match="temperature is None"):
        verify_step(**{**case, "temperature": None})  # type: ignore[arg-type]


def test_the_audit_metadata_reaches_the_step() -> None:
    """step_logits reads min-p from the audit's metadata: with min-p 1 only the argmax of the
    draft row survives, so a draft of another token is never accepted (exact)."""
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    metadata = SimpleNamespace(
        temperature=torch.ones(1), top_k=None, top_p=None, min_p=torch.ones(1),
        generators={}, all_greedy=False,
    )  # fmt: skip
    for _ in range(50):
        out = step_logits(
            torch.tensor([1], dtype=torch.int32), [1], 1, torch.tensor([1], dtype=torch.int32),
            None, logits, torch.tensor([[2]], dtype=torch.int32), metadata,
        )  # fmt: skip
        assert out.tolist() == [[0, -1]]


@pytest.mark.parametrize("vocab", [50, 6000])  # 6000: past SOFTMAX_AT_ONCE, the position loop
@pytest.mark.parametrize("truncated", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vllms_layout_is_read_in_place_with_the_same_tokens(
    dtype: torch.dtype, truncated: bool, vocab: int
) -> None:
    """Logits in vLLM's layout (each request's rows, then its bonus row) are read as they lie;
    the same rows in another order are gathered: with one seed both give the same tokens, with
    and without top-k/top-p (exact: one computation on the same values). bfloat16 rows with no
    cut are read without a float32 copy: the same tokens as their float32 values."""
    batch, drafts = 6, 3
    torch.manual_seed(1)
    in_layout = (torch.randn(batch * (drafts + 1), vocab) * 3).to(dtype)
    grid = torch.arange(batch * (drafts + 1)).view(batch, drafts + 1)
    # The same rows, all target rows first and the bonus rows after them.
    order = torch.cat([grid[:, :drafts].reshape(-1), grid[:, drafts]])
    shuffled = in_layout[order].clone()
    common = {
        "draft_token_ids": torch.randint(0, vocab, (batch * drafts,), dtype=torch.int32),
        "num_draft_tokens": [drafts] * batch,
        "cu_num_draft_tokens": torch.arange(1, batch + 1, dtype=torch.int32) * drafts,
        "draft_probs": None,
        "temperature": torch.full((batch,), 0.8),
        "top_k": torch.full((batch,), 10) if truncated else None,
        "top_p": torch.full((batch,), 0.9) if truncated else None,
        "seed": 11,
    }
    gathered = verify_step(
        shuffled, torch.arange(batch * drafts), torch.arange(batch * drafts, len(order)),
        **common,  # type: ignore[arg-type]
    )  # fmt: skip
    direct = verify_step(
        in_layout.clone(),
        grid[:, :drafts].reshape(-1),
        grid[:, drafts],
        **common,  # type: ignore[arg-type]
    )
    assert direct.tolist() == gathered.tolist()
    as_float32 = verify_step(
        in_layout.float(),
        grid[:, :drafts].reshape(-1),
        grid[:, drafts],
        **common,  # type: ignore[arg-type]
    )
    assert direct.tolist() == as_float32.tolist()
