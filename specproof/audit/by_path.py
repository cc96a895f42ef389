"""Audit a callable named by its import path (``module:function`` or ``file.py:function``):
the Python form of ``specproof audit``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specproof.callables import load_callable

from .report import AuditReport
from .run import audit_scheduler, audit_verifier
from .signatures import Signature

__all__ = ["audit", "load_callable"]


def audit(
    path: str,
    *,
    signature: Signature | None = None,
    scheduler: bool = False,
    drafter: str | None = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> AuditReport:
    """Audit the callable at ``path`` as a verifier (``signature``) or as a scheduler; with
    ``drafter`` (an import path), audit that drafting function, verified by ``path``."""
    if (signature is None) == (not scheduler):
        raise ValueError("give exactly one of signature= (a verifier) or scheduler=True")
    fn = load_callable(path)
    if scheduler:
        return audit_scheduler(fn, subject=path, progress=progress, **options)
    assert signature is not None
    draft_fn = load_callable(drafter) if drafter else None
    subject = drafter or path
    return audit_verifier(
        fn, signature, subject=subject, progress=progress, drafter=draft_fn, **options
    )
