"""The must-fail twin bites on the cases the call ran, a twin that cannot run is an error of
the check (never "FAIL as required"), and ``register()`` refuses what is no signature.

Checks run at level quick: false-fail rate <= rows x 1e-6 per call, power >= 0.9 against TV >=
0.2 per row. The verifier that ignores its target is exactly lossless on p-equals-q, so its
twin (target rows shifted) has the subject's own law there and passes with probability >=
1 - rows x 1e-6."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from plugin import subjects

from specproof.audit.signatures import VllmSignature, register, signature_names, unregister
from specproof.subjects import examples
from specproof.testing import TwinError, TwinPassedError, assert_lossless


def test_the_twin_runs_on_the_cases_the_call_ran() -> None:
    """Before: the twin always ran small-vocab, where this verifier's twin fails, so the call
    passed a verifier blind to its target. (The repeated-call rows, on by default, catch this
    verifier on their own: its calls always accept every draft; they are off here so that the
    twin alone is tested.)"""
    with pytest.raises(TwinPassedError, match="must-fail twin of ignores_target"):
        assert_lossless(
            subjects.ignores_target,
            signature="vllm",
            cases=("p-equals-q",),
            level="quick",
            calls=False,
        )


def test_the_repeated_call_rows_catch_the_same_verifier_by_default() -> None:
    with pytest.raises(AssertionError, match=r"calls +unseeded .* FAIL"):
        assert_lossless(
            subjects.ignores_target, signature="vllm", cases=("p-equals-q",), level="quick"
        )


def test_a_correct_verifier_still_passes_on_p_equals_q() -> None:
    outcome = assert_lossless(
        examples.rejection_sample, signature="vllm", cases=("p-equals-q",), level="quick"
    )
    assert outcome.twin is not None and {r.case for r in outcome.twin.results} == {"p-equals-q"}


def test_a_twin_that_raises_is_an_error_of_the_check() -> None:
    """Before: the twin's IndexError failed a "runs" row, counted as "FAIL as required"."""
    with pytest.raises(TwinError, match=r"could not run.*argument 9 as the target rows"):
        assert_lossless(
            examples.rejection_sample,
            signature=subjects.TargetPastTheCall(),
            cases=("small-vocab",),
            level="quick",
            calls=False,
        )


def test_a_twin_handed_no_float_rows_is_refused() -> None:
    class TargetIsTheTokens(VllmSignature):
        name: ClassVar[str] = "vllm-target-is-the-tokens"
        target_argument: ClassVar[int] = 0

    with pytest.raises(TwinError, match=r"argument 0 as the target rows, but it is a torch\.int"):
        assert_lossless(
            examples.rejection_sample,
            signature=TargetIsTheTokens(),
            cases=("small-vocab",),
            level="quick",
            calls=False,
        )


class Named:
    name = "looks-like-one"


def _signature(**fields: Any) -> VllmSignature:
    kind = type("Malformed", (VllmSignature,), {"name": "vllm-malformed", **fields})
    return kind()


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (Named(), TypeError, "a signature must be a VerifierSignature, got Named"),
        (_signature(name="Has Space"), ValueError, "name must be lower-case"),
        (_signature(name=""), ValueError, "name must be lower-case"),
        (_signature(target_argument=-1), ValueError, "target_argument must be a position >= 0"),
        (_signature(target_argument="5"), ValueError, "target_argument must be a position >= 0"),
        (_signature(default_filter_order="nope"), ValueError, "default_filter_order must be one"),
        (_signature(carries_requests=1), ValueError, "carries_requests must be True or False"),
        (_signature(hunt_batch=0), ValueError, "hunt_batch must be None or >= 1"),
        (_signature(output_arguments=frozenset({5})), ValueError, "also an output argument"),
    ],
)
def test_register_refuses_what_is_no_signature(given: object, error: type, message: str) -> None:
    """Before: register() took any object with a .name."""
    before = signature_names()
    with pytest.raises(error, match=message) as raised:
        register(given)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)
    assert signature_names() == before


def test_register_still_takes_a_well_formed_signature() -> None:
    registered = register(subjects.TargetPastTheCall())
    try:
        assert "vllm-target-past-the-call" in signature_names()
    finally:
        unregister(registered.name)


def _signature_and_case() -> list[object]:
    from specproof.testing.lossless import signature_cases

    verifiers = {
        "flashinfer": examples.chain_speculative_sampling,
        "vllm": examples.rejection_sample,
        "vllm-logits": examples.rejection_sample_logits,
        "hf": examples.speculative_sampling,
    }
    return [
        pytest.param(verifiers[signature], signature, case, marks=pytest.mark.slow)
        for signature in verifiers
        for case in signature_cases(signature)
    ]


@pytest.mark.parametrize(("verifier", "signature", "case"), _signature_and_case())
def test_the_twin_of_a_correct_verifier_fails_on_each_default_case_alone(
    verifier: Any, signature: str, case: str
) -> None:
    """A call with any one default case keeps its teeth: the twin of a correct verifier fails
    that case (measured: on its exact support row in every case but one-hot-draft, where the
    round row fails; each with probability >= 0.9 at level quick)."""
    outcome = assert_lossless(
        verifier, signature=signature, cases=(case,), level="quick", calls=False
    )
    assert outcome.twin is not None and {r.case for r in outcome.twin.results} == {case}
