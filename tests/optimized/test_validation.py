"""Bad input gives a clear InvalidInputError, on both backends, before any kernel runs."""

from __future__ import annotations

import pytest
import torch
from optimized_support import DEVICE
from specproof.optimized import InvalidInputError, chain_verify


def good() -> dict:
    return {
        "target": torch.tensor([[[0.25, 0.25, 0.5], [0.5, 0.5, 0.0]]], device=DEVICE),
        "draft": torch.tensor([[[0.5, 0.25, 0.25]]], device=DEVICE),
        "draft_tokens": torch.tensor([[1]], device=DEVICE),
    }


def run(**changes: object) -> object:
    args = {**good(), "seed": 0, "backend": "torch", **changes}
    return chain_verify(**args)


def test_good_input_passes() -> None:
    run()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"target": torch.tensor([[[float("nan"), 0.5, 0.5], [0.5, 0.5, 0.0]]])}, "NaN"),
        ({"target": torch.tensor([[[float("inf"), 0.5, 0.5], [0.5, 0.5, 0.0]]])}, "inf"),
        ({"target": torch.tensor([[[-0.25, 0.75, 0.5], [0.5, 0.5, 0.0]]])}, "negative"),
        ({"target": torch.tensor([[[0.25, 0.25, 0.4], [0.5, 0.5, 0.0]]])}, "summing"),
        ({"draft": torch.tensor([[[0.5, 0.25, 0.3]]])}, "summing"),
        ({"draft": torch.tensor([[[0.75, 0.0, 0.25]]])}, "draft probability 0"),
        ({"draft_tokens": torch.tensor([[3]])}, "outside"),
        ({"draft_tokens": torch.tensor([[-1]])}, "outside"),
        ({"draft_tokens": torch.tensor([[1.0]])}, "int32 or int64"),
        ({"draft_tokens": torch.tensor([[1, 1]])}, "shape"),
        ({"target": torch.zeros(1, 2, 3, dtype=torch.float64)}, "float32"),
        ({"draft": torch.full((1, 1, 4), 0.25)}, "shape"),
        ({"target": torch.ones(2, 3)}, "[B, n + 1, V]"),
        ({"num_draft_tokens": torch.tensor([2])}, "0..1"),
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": 0.5}, "only be 0"),
        ({"seed": -1}, "seed"),
        ({"round": 2**32}, "round"),
        ({"backend": "cuda-magic"}, "backend"),
    ],
)
def test_bad_input_is_rejected(changes: dict, message: str) -> None:
    changes = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in changes.items()}
    with pytest.raises(InvalidInputError, match=message):
        run(**changes)


def test_logits_reject_nan_and_plus_inf_but_allow_minus_inf() -> None:
    logits = torch.tensor([[[0.0, float("-inf"), 1.0], [0.0, 0.0, 0.0]]], device=DEVICE)
    draft = torch.tensor([[[0.0, 1.0, float("-inf")]]], device=DEVICE)
    run(target=logits, draft=draft, target_is_logits=True, draft_is_logits=True)
    for bad in (float("nan"), float("inf")):
        broken = logits.clone()
        broken[0, 1, 0] = bad
        with pytest.raises(InvalidInputError):
            run(target=broken, draft=draft, target_is_logits=True, draft_is_logits=True)
    all_masked = torch.full_like(logits, float("-inf"))
    with pytest.raises(InvalidInputError, match="no finite"):
        run(target=all_masked, draft=draft, target_is_logits=True, draft_is_logits=True)
    with pytest.raises(InvalidInputError, match="draft probability 0"):
        run(
            target=logits,
            draft=draft,
            draft_tokens=torch.tensor([[2]], device=DEVICE),
            target_is_logits=True,
            draft_is_logits=True,
        )


def test_device_mismatch_is_rejected() -> None:
    if DEVICE == "cpu":
        meta_tokens = torch.tensor([[1]], device="meta")
        with pytest.raises(InvalidInputError, match="device"):
            run(draft_tokens=meta_tokens)
    else:
        with pytest.raises(InvalidInputError, match="device"):
            run(draft_tokens=torch.tensor([[1]]))


def test_padding_rows_beyond_a_request_length_are_not_checked() -> None:
    target = torch.tensor([[[0.5, 0.5, 0.0], [float("nan"), 0.0, 0.0]]], device=DEVICE)
    draft = torch.tensor([[[float("nan"), 0.0, 0.0]]], device=DEVICE)
    tokens = torch.tensor([[-1]], device=DEVICE)
    result = run(
        target=target,
        draft=draft,
        draft_tokens=tokens,
        num_draft_tokens=torch.tensor([0], device=DEVICE),
    )
    assert result.num_accepted.tolist() == [0]


@pytest.mark.skipif(
    DEVICE != "cpu", reason="only CPU tensors need the interpreter; on CUDA Triton always runs"
)
def test_triton_backend_needs_cuda_or_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(InvalidInputError, match="TRITON_INTERPRET"):
        run(backend="triton")


def test_validation_can_be_switched_off() -> None:
    result = run(
        target=torch.tensor([[[0.25, 0.25, 0.4], [0.5, 0.5, 0.0]]], device=DEVICE), validate=False
    )
    assert result.tokens.shape == (1, 2)
