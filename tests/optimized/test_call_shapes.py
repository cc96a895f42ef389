"""The engines' call shapes are written once (``optimized/call_shapes.py``) and every function
that claims one takes its arguments: the drop-ins, the audit's example verifiers, the mutants
and the wrappers of vLLM's sampler (mypy checks the types where each module declares it; this
checks the arguments at run time, and that the check refuses a function that lacks one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from specproof.optimized import compat
from specproof.optimized.call_shapes import (
    FlashInferChainSpeculativeSampling,
    VllmRejectionSample,
    accepts_call_shape,
)

from specproof.adapters import vllm_sampler, vllm_verifier
from specproof.subjects import examples
from specproof.subjects.mutants.verifier import make_verifier

VLLM: list[Callable[..., Any]] = [
    compat.rejection_sample,
    examples.rejection_sample,
    examples.rejection_sample_logits,
    examples.biased_rejection_sample,
    make_verifier(),
    make_verifier("padding-zero"),
    vllm_sampler.rejection_sample,
    vllm_sampler.forward_logits,
    vllm_sampler.forward_logits_expand_fixed,
    vllm_verifier.step_logits,
    vllm_verifier.forward_installed,
]
FLASHINFER: list[Callable[..., Any]] = [
    compat.chain_speculative_sampling,
    examples.chain_speculative_sampling,
    examples.biased_chain_speculative_sampling,
]


@pytest.mark.parametrize("fn", VLLM, ids=lambda fn: f"{fn.__module__}.{fn.__name__}")
def test_each_vllm_function_takes_the_vllm_call(fn: Callable[..., Any]) -> None:
    assert accepts_call_shape(fn, VllmRejectionSample)


@pytest.mark.parametrize("fn", FLASHINFER, ids=lambda fn: f"{fn.__module__}.{fn.__name__}")
def test_each_flashinfer_function_takes_the_flashinfer_call(fn: Callable[..., Any]) -> None:
    assert accepts_call_shape(fn, FlashInferChainSpeculativeSampling)


def test_the_check_refuses_a_missing_or_renamed_argument() -> None:
    def seven_arguments(a: Any, b: Any, c: Any, d: Any, e: Any, f: Any, g: Any) -> Any: ...

    def no_generator(
        a: Any, b: Any, c: Any, d: Any = None, e: Any = None, deterministic: bool = True
    ) -> Any: ...

    assert not accepts_call_shape(seven_arguments, VllmRejectionSample)
    assert not accepts_call_shape(no_generator, FlashInferChainSpeculativeSampling)
    assert not accepts_call_shape(compat.rejection_sample, FlashInferChainSpeculativeSampling)
    assert not accepts_call_shape(examples.speculative_sampling, VllmRejectionSample)


def test_the_drop_ins_run_through_the_shapes() -> None:
    """One call of each drop-in through the Protocol-typed name, outputs of the stated sizes."""
    vllm: VllmRejectionSample = compat.rejection_sample
    probs = torch.full((2, 4), 0.25)
    out = vllm(
        torch.tensor([1, 2], dtype=torch.int32),
        [1, 1],
        1,
        torch.tensor([1, 2], dtype=torch.int32),
        probs,
        probs,
        torch.tensor([[0], [3]], dtype=torch.int32),
        None,
    )
    assert out.shape == (2, 2)
    flashinfer: FlashInferChainSpeculativeSampling = compat.chain_speculative_sampling
    tokens, accepted, emitted = flashinfer(
        torch.full((2, 1, 4), 0.25),
        torch.tensor([[1], [2]], dtype=torch.int32),
        torch.full((2, 2, 4), 0.25),
        deterministic=True,
        generator=torch.Generator().manual_seed(0),
    )
    assert tokens.shape == (2, 2) and accepted.shape == emitted.shape == (2,)
