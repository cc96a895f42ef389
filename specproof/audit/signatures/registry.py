"""The known verifier signatures by the name typed after ``--signature``."""

from __future__ import annotations

from .base import VerifierSignature
from .flashinfer import FlashInferSignature
from .hf import HfSignature
from .vllm import VllmSignature
from .vllm_logits import VllmLogitsSignature

_REGISTRY: dict[str, VerifierSignature] = {}


def register(signature: VerifierSignature) -> VerifierSignature:
    """Make ``signature`` known by its name (a name is registered once)."""
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
