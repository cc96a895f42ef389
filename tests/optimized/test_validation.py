"""Bad input gives a clear InvalidInputError on both backends; no layout or value gives a silently
wrong answer (the Triton kernel reads nothing at an invalid drafted token before refusing)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from optimized_support import DEVICE, as_fractions, backends, emitted, reference_chain
from specproof.optimized import InvalidInputError, chain_verify, sample_draft_tokens, tree_verify
from specproof.optimized.compat import chain_speculative_sampling, rejection_sample
from specproof.optimized.decoder import BatchedDecoder
from specproof.optimized.schedulers import FixedGamma


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
        # The draft is always accepted, so the bad bonus row is the one read in full
        # (rows read at one entry are checked at that entry: tests/optimized/test_row_checks.py).
        ({"target": torch.tensor([[[0.25, 0.25, 0.5], [float("nan"), 0.5, 0.5]]])}, "NaN"),
        ({"target": torch.tensor([[[0.25, 0.25, 0.5], [float("inf"), 0.5, 0.5]]])}, "inf"),
        ({"target": torch.tensor([[[0.25, 0.25, 0.5], [-0.25, 0.75, 0.5]]])}, "negative"),
        ({"target": torch.tensor([[[0.25, 0.25, 0.5], [0.25, 0.25, 0.4]]])}, "summing"),
        (  # p(x) = 0: always rejected, so the draft row is read in full for the residual
            {
                "target": torch.tensor([[[0.25, 0.0, 0.75], [0.5, 0.5, 0.0]]]),
                "draft": torch.tensor([[[0.5, 0.25, 0.3]]]),
            },
            "summing",
        ),
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
        broken[0, 0, 0] = bad  # row 0 is reached: its token has p = 0, so it is rejected
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


# Regression tests of issue 12: each input below once gave a wrong answer, or an unclear error.

TARGET_ROWS = [[64, 64, 128, 0], [32, 96, 64, 64], [0, 0, 256, 0], [128, 0, 0, 128]]
DRAFT_ROWS = [[128, 64, 64, 0], [64, 64, 64, 64], [0, 128, 64, 64]]
DRAFTED = [[0, 1, 1], [2, 3, 3], [1, 0, 2], [0, 2, 1]]  # each with positive draft mass


def dyadic_batch(batch: int) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    """[B, 4, 4] target and [B, 3, 4] draft rows (multiples of 1/256), B requests of drafts."""
    target = torch.tensor([TARGET_ROWS] * batch, dtype=torch.float32, device=DEVICE) / 256
    draft = torch.tensor([DRAFT_ROWS] * batch, dtype=torch.float32, device=DEVICE) / 256
    drafted = DRAFTED[:batch]
    return target, draft, drafted


def reference_tokens(drafted: list[list[int]], seed: int, lengths: list[int]) -> list[tuple]:
    return [
        reference_chain(
            [as_fractions(p) for p in TARGET_ROWS],
            [as_fractions(q) for q in DRAFT_ROWS[: lengths[r]]],
            drafted[r][: lengths[r]],
            seed=seed,
            round=0,
            request=r,
        )
        for r in range(len(drafted))
    ]


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded-row"])
def test_noncontiguous_draft_tokens(backend: str, layout: str) -> None:
    target, draft, drafted = dyadic_batch(4)
    contiguous = torch.tensor(drafted, device=DEVICE)
    if layout == "transposed":
        tokens = contiguous.t().contiguous().t()
    elif layout == "strided":
        wide = torch.zeros(4, 6, dtype=torch.int64, device=DEVICE)
        wide[:, ::2] = contiguous
        tokens = wide[:, ::2]
    else:  # every request drafts the same row: stride 0 along the batch
        drafted = [drafted[0]] * 4
        tokens = contiguous[:1].expand(4, 3)
    assert not tokens.is_contiguous()
    for seed in range(6):
        result = chain_verify(target, draft, tokens, seed=seed, backend=backend)
        assert emitted(result.tokens) == reference_tokens(drafted, seed, [3] * 4)


@pytest.mark.parametrize("backend", backends())
def test_noncontiguous_rows_and_metadata(backend: str) -> None:
    target, draft, drafted = dyadic_batch(3)
    target_t = target.transpose(1, 2).contiguous().transpose(1, 2)  # vocabulary stride != 1
    draft_wide = torch.zeros(3, 3, 8, device=DEVICE)
    draft_wide[..., ::2] = draft
    lengths = torch.tensor([3, 0, 2, 1, 3, 2], device=DEVICE)[::2]  # [3, 2, 3]
    requests = torch.tensor([5, 0, 1, 0, 2, 0], device=DEVICE)[::2]  # [5, 1, 2]
    for seed in range(4):
        result = chain_verify(
            target_t,
            draft_wide[..., ::2],
            torch.tensor(drafted, device=DEVICE),
            seed=seed,
            num_draft_tokens=lengths,
            request_ids=requests,
            backend=backend,
        )
        want = [
            reference_chain(
                [as_fractions(p) for p in TARGET_ROWS],
                [as_fractions(q) for q in DRAFT_ROWS[:length]],
                drafted[r][:length],
                seed=seed,
                round=0,
                request=request,
            )
            for r, (length, request) in enumerate(zip([3, 2, 3], [5, 1, 2], strict=True))
        ]
        assert emitted(result.tokens) == want


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(("peak", "temperature"), [(3e38, 0.5), (3e38, 1e-39), (2.0, 1e-39)])
def test_logits_overflowing_after_temperature(
    backend: str, peak: float, temperature: float
) -> None:
    """(x - max) / T never overflows into a row with no token: the limit is one-hot at the
    largest logit (here token 2 of every row), so every one-hot draft is accepted."""
    logits = torch.tensor([[[-1e30, 0.0, peak, 1.0]] * 3], device=DEVICE)
    draft = torch.tensor([[[0.0, 0.0, peak, -5.0]] * 2], device=DEVICE)
    tokens = torch.tensor([[2, 2]], device=DEVICE)
    for draft_rows in (None, draft):
        result = chain_verify(
            logits,
            draft_rows,
            tokens,
            seed=3,
            target_is_logits=True,
            draft_is_logits=draft_rows is not None,
            temperature=temperature,
            backend=backend,
        )
        assert result.tokens.tolist() == [[2, 2, 2]]
        assert result.num_accepted.tolist() == [2]


@pytest.mark.parametrize("backend", backends())
def test_tiny_temperature_splits_exact_ties_evenly(backend: str) -> None:
    """At T = 1e-39 a row with two equal largest logits is (1/2, 1/2) on them, exactly."""
    logits = torch.tensor([[[5.0, -3.0, 5.0, 4.0]]], device=DEVICE).expand(8, 1, 4)
    half = as_fractions([128, 0, 128, 0])
    for seed in range(3):
        result = chain_verify(
            logits,
            None,
            torch.zeros(8, 0, dtype=torch.int64, device=DEVICE),
            seed=seed,
            target_is_logits=True,
            temperature=1e-39,
            backend=backend,
        )
        want = [reference_chain([half], [], [], seed=seed, round=0, request=r) for r in range(8)]
        assert emitted(result.tokens) == want


@pytest.mark.parametrize("backend", backends())
def test_mixed_dtypes_are_read_as_float32(backend: str) -> None:
    """A float32 target with a bfloat16 draft is allowed (rows are read as float32): on dyadic
    rows, which bfloat16 holds exactly, the tokens are the reference's."""
    target, draft, drafted = dyadic_batch(3)
    for seed in range(4):
        result = chain_verify(
            target,
            draft.to(torch.bfloat16),
            torch.tensor(drafted, device=DEVICE),
            seed=seed,
            backend=backend,
        )
        assert emitted(result.tokens) == reference_tokens(drafted, seed, [3] * 3)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_draft_tokens": 1.7}, "num_draft_tokens must be integer"),
        ({"num_draft_tokens": torch.tensor([1.0])}, "num_draft_tokens must be an int32"),
        ({"num_draft_tokens": [1, 2]}, r"num_draft_tokens must have shape \(1,\)"),
        ({"seed": 1.0}, "seed must be an integer"),
        ({"seed": True}, "seed must be an integer"),
        ({"seed": 2**64}, r"seed must be an integer in \[0, 2\^64\)"),
        ({"offset": -1}, "offset"),
        ({"round": 0.5}, "round must be an integer"),
        ({"request_ids": torch.tensor([2**32], device=DEVICE)}, "request_ids must lie"),
        ({"request_ids": torch.tensor([1, 2])}, r"request_ids must have shape \(1,\)"),
        ({"temperature": torch.ones(2)}, r"temperature must have shape \(1,\)"),
        ({"temperature": float("nan")}, "temperature must be finite"),
    ],
)
def test_chain_arguments_refused(backend: str, changes: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        run(backend=backend, **changes)


def test_chain_arguments_accept_numpy_integers_and_lists() -> None:
    import numpy as np

    plain = run(seed=7, round=2, num_draft_tokens=torch.tensor([1], device=DEVICE))
    numpy = run(seed=np.uint64(7), round=np.int32(2), num_draft_tokens=[np.int64(1)])
    assert torch.equal(plain.tokens, numpy.tokens)


def test_duplicate_request_ids_are_refused() -> None:
    """Two requests with one id would draw the same uniforms: refused, never silently shared."""
    target, draft, drafted = dyadic_batch(2)
    with pytest.raises(InvalidInputError, match="distinct"):
        chain_verify(
            target,
            draft,
            torch.tensor(drafted, device=DEVICE),
            seed=0,
            request_ids=torch.tensor([4, 4], device=DEVICE),
        )


def tree_args(**changes: object) -> dict:
    """A root with children (tokens 0, 1) and a grandchild under node 1: B = 2 requests."""
    links = {
        "target": torch.full((2, 4, 3), 1 / 4, device=DEVICE).index_fill_(
            2, torch.tensor([2], device=DEVICE), 0.5
        ),
        "candidates": torch.tensor([[0, 0, 1, 2]] * 2, device=DEVICE),
        "first_child": torch.tensor([[1, -1, 3, -1]] * 2, device=DEVICE),
        "next_sibling": torch.tensor([[-1, 2, -1, -1]] * 2, device=DEVICE),
        "seed": 0,
    }
    return {**links, **changes}


@pytest.mark.parametrize("backend", backends())
def test_tree_duplicate_sibling_tokens(backend: str) -> None:
    candidates = torch.tensor([[0, 1, 1, 2]] * 2, device=DEVICE)  # nodes 1, 2 both token 1
    with pytest.raises(InvalidInputError, match="distinct tokens"):
        tree_verify(**tree_args(candidates=candidates), backend=backend)


@pytest.mark.parametrize("backend", backends())
def test_tree_node_both_sibling_and_child(backend: str) -> None:
    first_child = torch.tensor([[1, 2, -1, -1]] * 2, device=DEVICE)  # node 2: child of 1 too
    with pytest.raises(InvalidInputError, match="each node reached once"):
        tree_verify(**tree_args(first_child=first_child), backend=backend)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"seed": 0.5}, "seed must be an integer"),
        ({"round": 2**32}, "round"),
        ({"offset": -1}, "offset"),
        ({"request_ids": torch.tensor([0, -1])}, "request_ids must lie"),
        ({"request_ids": torch.tensor([0, 2**32])}, "request_ids must lie"),
        ({"request_ids": torch.tensor([3, 3])}, "distinct"),
        ({"request_ids": torch.tensor([0])}, r"request_ids must have shape \(2,\)"),
        ({"temperature": torch.ones(1)}, r"temperature must have shape \(2,\)"),
        ({"temperature": True}, "temperature must be real"),
    ],
)
def test_tree_arguments_refused(backend: str, changes: dict, message: str) -> None:
    changes = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in changes.items()}
    with pytest.raises(InvalidInputError, match=message):
        tree_verify(**tree_args(**changes), backend=backend)


@pytest.mark.parametrize("backend", backends())
def test_tree_accepts_its_valid_layout_and_numpy_seeds(backend: str) -> None:
    import numpy as np

    plain = tree_verify(**tree_args(seed=5, round=1), backend=backend)
    numpy = tree_verify(**tree_args(seed=np.int64(5), round=np.uint32(1)), backend=backend)
    assert torch.equal(plain.tokens, numpy.tokens)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"round": 2**32}, "round"),
        ({"offset": 2**64}, "offset"),
        ({"offset": -1}, "offset"),
        ({"index": 1.5}, "index must be an integer"),
        ({"request_ids": torch.tensor([-1, 0])}, "request_ids must lie"),
        ({"request_ids": torch.tensor([1, 1])}, "distinct"),
        ({"request_ids": torch.tensor([1])}, r"request_ids must have shape \(2,\)"),
    ],
)
def test_sample_draft_tokens_arguments_refused(backend: str, changes: dict, message: str) -> None:
    changes = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in changes.items()}
    args = {"seed": 0, "index": 1, **changes}
    with pytest.raises(InvalidInputError, match=message):
        sample_draft_tokens(torch.full((2, 4), 0.25, device=DEVICE), backend=backend, **args)


@pytest.mark.parametrize("backend", backends())
def test_sample_draft_tokens_with_overflowing_logits(backend: str) -> None:
    scores = torch.tensor([[3e38, 0.0, -3e38], [1.0, 2.0, 0.0]], device=DEVICE)
    for temperature in (0.5, 1e-39):
        tokens = sample_draft_tokens(
            scores, seed=1, index=1, is_logits=True, temperature=temperature, backend=backend
        )
        assert tokens.tolist() == [0, 1]


def vllm_args(**changes: object) -> dict:
    """Two requests drafting 2 and 1 tokens over V = 4, probabilities in multiples of 1/4."""
    target = torch.tensor([[0.25, 0.25, 0.5, 0.0]] * 3, device=DEVICE)
    return {
        "draft_token_ids": torch.tensor([0, 1, 2], device=DEVICE),
        "num_draft_tokens": [2, 1],
        "max_spec_len": 2,
        "cu_num_draft_tokens": torch.tensor([2, 3], device=DEVICE),
        "draft_probs": torch.full((3, 4), 0.25, device=DEVICE),
        "target_probs": target,
        "bonus_token_ids": torch.tensor([[3], [1]], device=DEVICE),
        "sampling_metadata": None,
        "seed": 0,
        **changes,
    }


def test_vllm_cu_num_draft_tokens_beyond_the_rows() -> None:
    with pytest.raises(InvalidInputError, match="cu_num_draft_tokens"):
        rejection_sample(
            **vllm_args(num_draft_tokens=[2, 2], cu_num_draft_tokens=torch.tensor([2, 4]))
        )


def test_vllm_bonus_token_ids_outside_the_vocabulary() -> None:
    for bad in (4, -2):
        with pytest.raises(InvalidInputError, match="bonus_token_ids"):
            rejection_sample(**vllm_args(bonus_token_ids=torch.tensor([[bad], [1]])))


def test_vllm_num_draft_tokens_must_be_integers() -> None:
    with pytest.raises(InvalidInputError, match="num_draft_tokens"):
        rejection_sample(**vllm_args(num_draft_tokens=[2.0, 1]))


def test_flashinfer_counters_of_the_wrong_shape() -> None:
    target, draft, drafted = dyadic_batch(2)
    with pytest.raises(InvalidInputError, match="maybe_output_accepted_token_num"):
        chain_speculative_sampling(
            draft,
            torch.tensor(drafted, device=DEVICE),
            target,
            maybe_output_accepted_token_num=torch.zeros(3, dtype=torch.int32, device=DEVICE),
            seed=0,
        )


def test_decoder_target_returning_gamma_rows() -> None:
    """The target must return gamma + 1 rows; gamma rows are refused naming the target."""

    def short_target(tokens: torch.Tensor, lengths: torch.Tensor, positions: int) -> torch.Tensor:
        return torch.full((tokens.shape[0], positions - 1, 2), 0.5, device=tokens.device)

    def drafter(tokens: torch.Tensor, lengths: torch.Tensor, done: int):
        batch = tokens.shape[0]
        return torch.full((batch, 2), 0.5, device=tokens.device), torch.ones(batch)

    decoder = BatchedDecoder(short_target, drafter, FixedGamma(), gamma=2, backend="torch")
    with pytest.raises(InvalidInputError, match=r"target .*3 rows"):
        decoder.generate([[0]], 2, seed=0, device=DEVICE)
    with pytest.raises(InvalidInputError, match="seed"):
        decoder.generate([[0]], 2, seed=-1, device=DEVICE)


@pytest.mark.skipif(DEVICE != "cpu", reason="the tile is lowered through the interpreter's cap")
def test_masked_first_vocabulary_tile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logits whose whole first tile is -inf (masked tokens): the online log-sum-exp once
    computed -inf - -inf = NaN there. Rows of 40 tokens over tiles of 16."""
    import specproof.optimized.kernels.chain_verify as kernel

    monkeypatch.setattr(kernel, "INTERPRETER_TILE", 16)
    logits = torch.full((2, 2, 40), float("-inf"))
    logits[:, :, 20] = 0.0
    logits[:, :, 33] = 0.0  # two equal logits: (1/2, 1/2) on tokens 20 and 33
    tokens = torch.tensor([[20], [33]])
    half = as_fractions([128 if v in (20, 33) else 0 for v in range(40)])
    for seed in range(3):
        result = chain_verify(
            logits,
            logits[:, :1],
            tokens,
            seed=seed,
            target_is_logits=True,
            draft_is_logits=True,
            temperature=0.5,
            backend="triton",
        )
        want = [
            reference_chain(
                [half, half], [half], [int(tokens[r, 0])], seed=seed, round=0, request=r
            )
            for r in range(2)
        ]
        assert emitted(result.tokens) == want
        drawn = sample_draft_tokens(
            logits[:, 0], seed=seed, index=1, is_logits=True, temperature=0.5, backend="triton"
        )
        assert set(drawn.tolist()) <= {20, 33}


@pytest.mark.parametrize("backend", backends())
def test_tree_logits_overflowing_after_temperature(backend: str) -> None:
    """Root children tokens 2 then 0; a 3e38 logit on token 2 at T = 0.5, or T = 1e-39:
    the row is one-hot at token 2, so child 1 is always accepted, then its bonus row's peak."""
    logits = torch.tensor([[[0.0, -1e30, 3e38], [1.0, 3e38, 2.0], [0.0, 1.0, 2.0]]], device=DEVICE)
    for temperature in (0.5, 1e-39):
        result = tree_verify(
            logits,
            torch.tensor([[0, 2, 0]], device=DEVICE),
            torch.tensor([[1, -1, -1]], device=DEVICE),
            torch.tensor([[-1, 2, -1]], device=DEVICE),
            seed=1,
            target_is_logits=True,
            temperature=temperature,
            backend=backend,
        )
        assert result.tokens.tolist() == [[2, 1, -1]]
        assert result.path_nodes.tolist() == [[1, -1, -1]]


def test_decoder_refuses_a_nan_temperature_and_a_bool_gamma() -> None:
    def model(tokens: torch.Tensor, lengths: torch.Tensor, positions: int) -> torch.Tensor:
        return torch.full((tokens.shape[0], positions, 2), 0.5)

    def drafter(tokens: torch.Tensor, lengths: torch.Tensor, done: int):
        return torch.full((tokens.shape[0], 2), 0.5), torch.ones(tokens.shape[0])

    with pytest.raises(InvalidInputError, match="temperature"):
        BatchedDecoder(model, drafter, FixedGamma(), gamma=1, temperature=float("nan"))
    with pytest.raises(InvalidInputError, match="gamma"):
        BatchedDecoder(model, drafter, FixedGamma(), gamma=True)


def count_synchronisations(call: Callable[[], object]) -> int:
    """Host synchronisations made by ``call()`` on CUDA (torch's sync debug mode)."""
    import warnings

    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            call()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in seen)


@pytest.mark.skipif(DEVICE != "cuda", reason="host synchronisations exist on CUDA only")
@pytest.mark.parametrize("logits", [False, True])
def test_validated_default_call_synchronises_once(logits: bool) -> None:
    """chain_verify with its defaults (Triton on CUDA, validate=True) makes exactly one host
    synchronisation: the kernel checks what it reads and reports one flag per request."""
    generator = torch.Generator(device=DEVICE).manual_seed(3)
    target = torch.randn(8, 5, 3000, device=DEVICE, generator=generator)
    draft = target[:, :4] + 0.5 * torch.randn(8, 4, 3000, device=DEVICE, generator=generator)
    tokens = torch.multinomial(torch.softmax(draft, -1).reshape(-1, 3000), 1).reshape(8, 4)
    if not logits:
        target, draft = torch.softmax(target, -1), torch.softmax(draft, -1)
    flags = {"target_is_logits": logits, "draft_is_logits": logits}
    chain_verify(target, draft, tokens, seed=1, **flags)  # compile outside the count
    assert count_synchronisations(lambda: chain_verify(target, draft, tokens, seed=1, **flags)) == 1


@pytest.mark.skipif(DEVICE != "cuda", reason="host synchronisations exist on CUDA only")
def test_validated_tree_and_draft_sampling_synchronise_once() -> None:
    """tree_verify and sample_draft_tokens with their defaults (validate=True) record every
    check and read them back once."""
    generator = torch.Generator(device=DEVICE).manual_seed(5)
    logits = torch.randn(4, 3, 500, device=DEVICE, generator=generator)
    candidates = torch.tensor([[0, 7, 9]] * 4, device=DEVICE)
    first_child = torch.tensor([[1, -1, -1]] * 4, device=DEVICE)
    next_sibling = torch.tensor([[-1, 2, -1]] * 4, device=DEVICE)

    def tree() -> object:
        return tree_verify(
            logits, candidates, first_child, next_sibling, seed=1, target_is_logits=True
        )

    def draft() -> object:
        return sample_draft_tokens(logits[:, 0], seed=1, index=1, is_logits=True)

    for call in (tree, draft):
        call()  # compile outside the count
        assert count_synchronisations(call) == 1, call.__name__
