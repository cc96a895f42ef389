"""specproof.audit: run a battery against a user's chain verifier, drafter or scheduler.

Verifiers (FlashInfer's ``chain_speculative_sampling``, vLLM's ``rejection_sample``, or the
batch-1 logits signature ``hf``) are sampled on table problems; the joint law of each round's
whole output is tested against the exact law from the reference decoder with
:func:`specproof.stats.goodness_of_fit` (false-fail rate alpha, power 1 - beta against TV >=
delta per row), and impossible outcomes and layout violations fail exactly (alpha = 0).
``--hunt N`` runs rare-event cases where any bug shows as an impossible output. Schedulers (the
reference's ``schedule(confidences, sps) -> list[int]``) are checked exactly: TV = 0.

Command: ``specproof audit module:function --signature flashinfer|vllm|hf`` (``--drafter
MODULE:FN`` to audit a drafting function), or ``specproof audit module:function --scheduler``;
exit status 0 only if every row passes, 1 if one fails, 2 for a usage error.

Modules, in reading order; each imports only modules before it (``tests/audit/test_layering.py``):
``settings`` (error rates, call limits and hunt settings, made once by a command and passed
to the rows),
``requests`` (engine sampling parameters), ``errors``, ``ids`` (outputs read as integer token ids),
``guard`` (calls into the subject, held to a time limit), ``problems`` (table problems, exact laws
in float64), ``drafting``, ``structure`` (exact layout checks), ``signatures`` (a package: one
object per engine's call signature, and their registry), ``audit_settings`` (everything a
verifier audit's command resolved, the signature object included, as one value every row
reads), ``rounds`` (sampling rounds); ``laws``
(exact round laws from the reference), ``filters`` (request filters that bind, in a declared order),
``adversarial``, ``cases`` (the battery), ``report``; the rows built on them (``nonfinite``:
robustness on NaN and inf rows; ``calls``, ``drafters``, ``run``, ``hunt``); ``by_path`` (the audit
of a callable named by its import path). The engine audit, which samples a whole engine's
``generate`` against the target's exact law, is the subpackage ``engine``. The command is
:mod:`specproof.commands.audit`. The subjects the audit is shown on live in
:mod:`specproof.subjects`, the engines it runs in :mod:`specproof.adapters`, the runners of its
result tables in :mod:`specproof.runners`; this package imports none of them
(``tests/test_layering.py``). ``specproof.stats`` never imports this package."""

from __future__ import annotations

from .by_path import audit, load_callable
from .report import AuditReport, CaseResult
from .run import audit_scheduler, audit_verifier

__all__ = [
    "AuditReport",
    "CaseResult",
    "audit",
    "audit_scheduler",
    "audit_verifier",
    "load_callable",
]
