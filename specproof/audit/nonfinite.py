"""Robustness rows for non-finite input: NaN and inf in target and draft rows (never a
losslessness verdict; reported apart from the law rows).

No law is defined for such rows, so nothing here is statistical: a verifier passes a row when it
refuses the call with an error, or when every output row is well formed (ids in 0..V-1, padding
only at the end, kept drafts equal to the drafts) and never emits, at the position of a rejected
draft, that same draft. It fails when it emits an id outside 0..V-1 (vLLM issue 53029: id ==
vocab_size on an all-NaN target row) or the draft it just rejected (a comment on vLLM PR 41834:
an all-NaN draft row makes the recovered token the rejected one). Exact rows (alpha = 0): a
verifier meeting the rule cannot fail one.

Each case is one mixed batch (one call, or one per ``limits.max_batch`` requests): even rows finite,
odd rows carrying the non-finite row at a position that cycles over the verified positions (and
the bonus row, where the signature has one). Before it the target row equals the draft row, so a
correct verifier accepts every earlier draft (u * q < p for u < 1) and reaches the corrupted
position in every odd row; the two mutants above therefore fail on every odd row, not by chance.
Probabilities are corrupted where the signature takes probabilities, logits where it takes
logits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .audit_settings import AuditSettings
from .drafting import Drafts
from .errors import VerifierError, out_of_memory
from .guard import SubjectExit
from .problems import PLACEHOLDER
from .report import CaseResult, exact_row, limit_row
from .settings import CallLimits
from .signatures import Verifier, VerifierSignature, seed_torch
from .structure import check_structure, emitted_lengths

CASE = "nonfinite"
VOCAB = 8
GAMMA = 3
KINDS = ("all-nan", "nan-at-draft", "inf-at-draft")
"""The whole row NaN; NaN at the drafted token; +inf at the drafted token (the entry every
verifier reads)."""
WHERE = ("target", "draft")


@dataclass(frozen=True)
class NonFiniteCase:
    where: str  # "target" or "draft"
    kind: str  # one of KINDS

    @property
    def check(self) -> str:
        return f"{self.where}-{self.kind}"


def nonfinite_cases() -> list[NonFiniteCase]:
    return [NonFiniteCase(where, kind) for where in WHERE for kind in KINDS]


@dataclass(frozen=True)
class Batch:
    """One mixed batch: finite rows, the corrupted rows and where each one is corrupted."""

    draft: torch.Tensor  # [B, gamma, V] float32 probabilities
    tokens: torch.Tensor  # [B, gamma] int64
    target: torch.Tensor  # [B, gamma + 1, V] float32 probabilities
    corrupted: torch.Tensor  # [B] bool
    position: torch.Tensor  # [B] the corrupted position (-1 for finite rows)


def _positions(case: NonFiniteCase, signature: VerifierSignature) -> int:
    """Positions a corrupted row cycles over: the target's bonus row too where it is passed."""
    bonus_row = case.where == "target" and case.kind == "all-nan" and signature.sends_bonus_row
    return GAMMA + 1 if bonus_row else GAMMA


def finite_batch(case: NonFiniteCase, signature: VerifierSignature, seed: int) -> Batch:
    """Rows with full support; the target equals the draft at the verified positions."""
    positions = _positions(case, signature)
    batch = 4 * positions
    generator = torch.Generator().manual_seed(seed)
    rows = torch.rand((batch, GAMMA + 1, VOCAB), generator=generator, dtype=torch.float64) + 0.1
    rows = (rows / rows.sum(-1, keepdim=True)).to(torch.float32)
    draft = rows[:, :GAMMA].clone()
    tokens = torch.multinomial(draft.reshape(-1, VOCAB).double(), 1, generator=generator)
    corrupted = torch.arange(batch) % 2 == 1
    position = torch.where(corrupted, (torch.arange(batch) // 2) % positions, -1)
    return Batch(draft, tokens.reshape(batch, GAMMA), rows, corrupted, position)


def _corrupt(rows: torch.Tensor, batch: Batch, kind: str) -> torch.Tensor:
    """``rows`` [B, positions, V] (probabilities or logits) with the case's non-finite values."""
    out = rows.clone()
    for b in torch.nonzero(batch.corrupted).squeeze(1).tolist():
        k = int(batch.position[b])
        if kind == "all-nan":
            out[b, k] = float("nan")
        else:
            out[b, k, int(batch.tokens[b, k])] = (
                float("nan") if kind == "nan-at-draft" else float("inf")
            )
    return out


def _caller(
    fn: Verifier,
    signature: VerifierSignature,
    case: NonFiniteCase,
    batch: Batch,
    limits: CallLimits,
) -> Callable[[], torch.Tensor]:
    """The calls of ``fn`` on the corrupted batch, each of at most ``limits.max_batch``
    requests; returns [B, gamma + 1] outputs, -1 padded."""
    return signature.nonfinite_call(
        fn,
        batch.draft,
        batch.tokens,
        batch.target,
        case.where,
        lambda rows: _corrupt(rows, batch, case.kind),
        limits,
    )


def _repeated_rejection(out: torch.Tensor, tokens: torch.Tensor) -> int | None:
    """The first row that ends, before its bonus position, on the draft it rejected there."""
    lengths = emitted_lengths(out)
    for row, m in enumerate(lengths.tolist()):
        if 1 <= m <= tokens.shape[1] and int(out[row, m - 1]) == int(tokens[row, m - 1]):
            return row
    return None


def nonfinite_row(fn: Verifier, case: NonFiniteCase, settings: AuditSettings) -> CaseResult:
    """One exact robustness row (alpha = 0): refused, or well formed without the rejected
    draft; failed on an id outside 0..V-1, a layout violation or the rejected draft. Each call
    carries at most ``settings.limits.max_batch`` requests."""
    limits, seed = settings.limits, settings.seed
    batch = finite_batch(case, settings.signature, seed)
    size = batch.tokens.shape[0]
    call = _caller(fn, settings.signature, case, batch, limits)
    seed_torch(torch.Generator().manual_seed(seed))
    where = f"{case.where} row {case.kind.replace('-', ' ')}"
    try:
        out = call().to(torch.int64)
    except VerifierError as error:
        return _failed(case, size, error.message, error.row, batch, None)
    except SubjectExit as error:  # ending the process is no refusal: the engine would die
        return _failed(case, size, str(error), None, batch, None)
    except Exception as error:
        if out_of_memory(error):
            return limit_row(CASE, case.check, size, min(size, limits.max_batch), error)
        message = str(error).splitlines()[0] if str(error) else ""
        return exact_row(
            CASE, case.check, size, "pass", f"refused: {type(error).__name__}: {message}"[:120]
        )
    if out.dim() != 2 or out.shape[0] != size:
        message = f"output has shape {tuple(out.shape)}, expected [{size}, n + 1]"
        return _failed(case, size, message, None, batch, None)
    padded = torch.full((size, GAMMA + 1), PLACEHOLDER, dtype=torch.int64)
    width = min(out.shape[1], GAMMA + 1)
    padded[:, :width] = out[:, :width]
    if out.shape[1] > GAMMA + 1 and bool((out[:, GAMMA + 1 :] != PLACEHOLDER).any()):
        return _failed(case, size, "a row emitted more than its drafts plus one", None, batch, None)
    drafts = Drafts(
        batch.tokens,
        batch.draft,
        batch.target,
        torch.full((size,), GAMMA, dtype=torch.int64),
        torch.zeros(size, dtype=torch.bool),
    )
    try:
        check_structure(padded, drafts, VOCAB)
    except VerifierError as error:
        return _failed(case, size, error.message, error.row, batch, padded)
    row = _repeated_rejection(padded, batch.tokens)
    if row is not None:
        return _failed(case, size, "emitted the draft it had just rejected", row, batch, padded)
    return exact_row(
        CASE,
        case.check,
        size,
        "pass",
        f"ids in 0..{VOCAB - 1}, no rejected draft repeated ({int(batch.corrupted.sum())} rows "
        f"with the {where})",
    )


def _failed(
    case: NonFiniteCase,
    size: int,
    message: str,
    row: int | None,
    batch: Batch,
    out: torch.Tensor | None,
) -> CaseResult:
    where = ""
    if row is not None:
        k = int(batch.position[row])
        at = f"{case.where} row at position {k} {case.kind}" if k >= 0 else "finite row"
        seen = "" if out is None else f", emitted {[int(t) for t in out[row] if t != PLACEHOLDER]}"
        where = f" in row {row} ({at}, drafts {batch.tokens[row].tolist()}{seen})"
    summary = f"{message}{where}"
    return exact_row(CASE, case.check, size, "FAIL", summary, f"{CASE}/{case.check}: {summary}")


def nonfinite_rows(fn: Verifier, settings: AuditSettings) -> list[CaseResult]:
    """Every non-finite case (V = 8, gamma = 3, 12 or 16 requests) of ``settings.signature``,
    seeded ``settings.seed``, in calls of at most ``settings.limits.max_batch`` requests."""
    return [nonfinite_row(fn, case, settings) for case in nonfinite_cases()]
