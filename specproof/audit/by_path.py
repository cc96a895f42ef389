"""Audit a callable named by its import path (``module:function`` or ``file.py:function``):
the Python form of ``specproof audit``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from specproof.callables import load_callable

from .audit_settings import AuditSettings
from .report import AuditReport
from .run import audit_scheduler, audit_verifier, run_audit
from .signatures import VerifierSignature

__all__ = ["audit", "load_callable"]


def audit(
    path: str,
    *,
    signature: VerifierSignature | str | None = None,
    settings: AuditSettings | None = None,
    scheduler: bool = False,
    drafter: str | None = None,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> AuditReport:
    """Audit the callable at ``path`` as a verifier (``signature`` with the keywords of
    :func:`audit_verifier`, or ``settings`` made whole, with :func:`run_audit`'s ``problems``
    and ``bars``) or as a scheduler (the keywords of :func:`audit_scheduler`); with
    ``drafter`` (an import path), audit that drafting function, verified by ``path``."""
    if (signature is not None) + (settings is not None) + scheduler != 1:
        raise ValueError(
            "give exactly one of signature= or settings= (a verifier) or scheduler=True"
        )
    fn = load_callable(path)
    if scheduler:
        return audit_scheduler(fn, subject=path, progress=progress, **options)
    draft_fn = load_callable(drafter) if drafter else None
    subject = drafter or path
    if settings is not None:
        return run_audit(
            fn, settings, subject=subject, progress=progress, drafter=draft_fn, **options
        )
    assert signature is not None
    return audit_verifier(
        fn, signature, subject=subject, progress=progress, drafter=draft_fn, **options
    )
