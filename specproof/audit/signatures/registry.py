"""The known verifier signatures by the name typed after ``--signature``."""

from __future__ import annotations

import re

from specproof.reference.filters import FILTER_ORDERS

from .base import VerifierSignature
from .flashinfer import FlashInferSignature
from .hf import HfSignature
from .vllm import VllmSignature
from .vllm_logits import VllmLogitsSignature

_REGISTRY: dict[str, VerifierSignature] = {}


NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
"""A name as typed after ``--signature``: lower case, digits, dots, dashes, underscores."""
FLAGS = (
    "sends_bonus_row",
    "draft_logits",
    "target_logits",
    "carries_requests",
    "takes_request_filters",
    "filters_sent_raw",
    "calls_per_row",
)


def _whole(value: object, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def signature_problem(signature: object) -> str | None:
    """Why ``signature`` cannot be registered (one line naming the field), or None."""
    if not isinstance(signature, VerifierSignature):
        return f"a signature must be a VerifierSignature, got {type(signature).__name__}"
    kind = type(signature).__name__
    missing = [
        field
        for field in ("name", "default_filter_order", "target_argument", *FLAGS)
        if not hasattr(signature, field)
    ]
    if missing:
        return f"signature {kind} does not set {', '.join(missing)}"
    name = signature.name
    if not (isinstance(name, str) and NAME.fullmatch(name)):
        return (
            f"signature {kind}: name must be lower-case letters, digits, '.', '-' or '_', "
            f"got {name!r}"
        )
    if signature.default_filter_order not in FILTER_ORDERS:
        return (
            f"signature {name!r}: default_filter_order must be one of {', '.join(FILTER_ORDERS)}, "
            f"got {signature.default_filter_order!r}"
        )
    wrong = [field for field in FLAGS if not isinstance(getattr(signature, field), bool)]
    if wrong:
        value = getattr(signature, wrong[0])
        return f"signature {name!r}: {wrong[0]} must be True or False, got {value!r}"
    if not (signature.hunt_batch is None or _whole(signature.hunt_batch, 1)):
        return f"signature {name!r}: hunt_batch must be None or >= 1, got {signature.hunt_batch!r}"
    outputs = signature.output_arguments
    if not (isinstance(outputs, frozenset) and all(_whole(i, 0) for i in outputs)):
        return (
            f"signature {name!r}: output_arguments must be a frozenset of positions, "
            f"got {outputs!r}"
        )
    target = signature.target_argument
    if not _whole(target, 0):
        return f"signature {name!r}: target_argument must be a position >= 0, got {target!r}"
    if target in outputs:
        return f"signature {name!r}: target_argument {target} is also an output argument"
    return None


def register(signature: VerifierSignature) -> VerifierSignature:
    """Make ``signature`` known by its name (a name is registered once); a signature that is no
    :class:`VerifierSignature` is refused with a TypeError, one with a malformed field with a
    ValueError (one line naming the field)."""
    problem = signature_problem(signature)
    if problem:
        raise (TypeError if not isinstance(signature, VerifierSignature) else ValueError)(problem)
    if signature.name in _REGISTRY:
        raise ValueError(f"signature {signature.name!r} is already registered")
    _REGISTRY[signature.name] = signature
    return signature


def unregister(name: str) -> None:
    """Forget the signature called ``name`` (tests that register a signature of their own)."""
    _REGISTRY.pop(name, None)


def signature_names() -> tuple[str, ...]:
    """The registered names, in registration order (argparse's choices)."""
    return tuple(_REGISTRY)


def signature_named(name: str | VerifierSignature) -> VerifierSignature:
    """The signature called ``name`` (a signature object is returned as it is); ValueError
    naming the known ones for an unknown name."""
    if isinstance(name, VerifierSignature):
        return name
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY)
        raise ValueError(f"unknown signature {name!r}: one of {known}") from None


for _signature in (FlashInferSignature(), VllmSignature(), VllmLogitsSignature(), HfSignature()):
    register(_signature)
