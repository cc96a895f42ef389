"""Sampling rounds: draft, verify with a signature, check the layout, complete each row from
the target alone; then the rounds' outcomes, counted by token class."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .audit_settings import AuditSettings
from .drafting import DraftFn, draft_rounds, draw_states
from .errors import CaseTimeout, VerifierError
from .guard import SubjectFailure
from .problems import PLACEHOLDER, Outcome, TableProblem, token_classes
from .signatures import Verifier
from .structure import check_structure, emitted_lengths

RoundFn = Callable[[TableProblem, int, torch.Generator], Any]
"""(problem, batch, generator) -> emitted tokens [batch, gamma + 1], -1 padded, or the pair
(tokens, the :class:`Drafts` they verified)."""


def complete(
    problem: TableProblem,
    out: torch.Tensor,
    generator: torch.Generator,
    greedy: torch.Tensor | None = None,
) -> torch.Tensor:
    """Continue each row from the target alone up to ``problem.tokens`` tokens (the argmax
    for ``greedy`` rows)."""
    batch = out.shape[0]
    lengths = emitted_lengths(out)
    result = torch.full((batch, problem.num_tokens), PLACEHOLDER, dtype=torch.int64)
    width = min(problem.num_tokens, out.shape[1])
    result[:, :width] = out[:, :width]
    for t in range(problem.num_tokens):
        todo = lengths <= t
        if not bool(todo.any()):
            continue
        previous = result[:, t - 1] if t > 0 else torch.full((batch,), problem.prompt_state)
        state = previous % problem.states if t > 0 else previous
        draws = draw_states(problem.target_cdf[t], state, generator)
        if greedy is not None and bool(greedy.any()):
            draws = torch.where(greedy, problem.target32[t].argmax(-1)[state], draws)
        result[:, t] = torch.where(todo, draws, result[:, t])
    return result


def verifier_round(
    fn: Verifier, settings: AuditSettings, drafter: DraftFn | None = None
) -> RoundFn:
    """A round: drafting (correct, or ``drafter``), then ``fn`` verifies with
    ``settings.signature``, structure checked (each call of ``fn`` carries at most
    ``settings.limits.max_batch`` requests: a batch of rounds takes several calls)."""

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> Any:
        drafts = draft_rounds(problem, batch, generator, drafter=drafter)
        out = settings.signature.call(fn, drafts, problem, generator, settings)
        check_structure(out, drafts, problem.vocab)
        return out, drafts

    return run


@dataclass(frozen=True)
class Sampled:
    outputs: np.ndarray  # [n, tokens] completed output tokens
    lengths: np.ndarray  # [n] tokens emitted by the round
    rounds: np.ndarray  # [n, 2 + gamma + 1]: draft length, greedy flag, emitted tokens (-1 pad)


Progress = Callable[[int, int], None]
"""(rounds done, rounds wanted)."""


def sample_rounds(
    problem: TableProblem,
    round_fn: RoundFn,
    n: int,
    seed: int,
    chunk: int | None = None,
    *,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> Sampled:
    """``n`` independent rounds in chunks (bounded memory for large vocabularies). A
    :class:`VerifierError` leaves with the offending round's index in ``.round``; past
    ``deadline`` (a ``time.monotonic()`` value) :class:`CaseTimeout` is raised."""
    if chunk is None:
        chunk = max(64, min(1 << 16, 2**26 // max(1, problem.vocab * (problem.gamma + 1) * 2)))
    generator = torch.Generator().manual_seed(seed)
    outputs, lengths, rounds = [], [], []
    done = 0
    while done < n:
        size = min(chunk, n - done)
        try:
            result = round_fn(problem, size, generator)
        except VerifierError as error:
            error.round = None if error.row is None else done + error.row
            raise
        except SubjectFailure as failure:  # a call still running at the time limit
            raise CaseTimeout(f"{failure}, after {done} of {n} rounds") from failure
        out, drafts = result if isinstance(result, tuple) else (result, None)
        emitted = emitted_lengths(out)
        lengths.append(emitted.numpy())
        greedy = None if drafts is None else drafts.greedy
        outputs.append(complete(problem, out, generator, greedy).numpy())
        tags = torch.full((size, 2), problem.gamma, dtype=torch.int64)
        tags[:, 1] = 0
        if drafts is not None:
            tags[:, 0] = drafts.lengths
            tags[:, 1] = drafts.greedy.to(torch.int64)
        rounds.append(torch.cat([tags, out], 1).numpy())
        done += size
        if progress is not None:
            progress(done, n)
        if deadline is not None and time.monotonic() > deadline and done < n:
            raise CaseTimeout(f"{problem.name}: stopped after {done} of {n} rounds")
    return Sampled(np.concatenate(outputs), np.concatenate(lengths), np.concatenate(rounds))


def observed_classes(problem: TableProblem, outputs: np.ndarray) -> list[tuple[int, ...]]:
    classes, _ = token_classes(problem)
    mapped = classes[outputs]
    return [tuple(int(v) for v in row) for row in mapped]


def class_rows(problem: TableProblem, rows: np.ndarray, start: int) -> np.ndarray:
    """Map the token columns of ``rows`` (from ``start`` on) to classes, keeping -1."""
    classes, _ = token_classes(problem)
    out = rows.copy()
    tokens = out[:, start:]
    mask = tokens >= 0
    tokens[mask] = classes[tokens[mask]]
    return out


def count_rows(rows: np.ndarray, start: int) -> tuple[dict[Outcome, int], np.ndarray]:
    """Counts of distinct rows as outcomes (padding dropped from column ``start`` on), and for
    each distinct row the index of its first occurrence."""
    unique, first, counts = np.unique(rows, axis=0, return_index=True, return_counts=True)
    out: dict[Outcome, int] = {}
    for row, count in zip(unique.tolist(), counts.tolist(), strict=True):
        key = tuple(row[:start]) + tuple(t for t in row[start:] if t != PLACEHOLDER)
        out[key] = out.get(key, 0) + int(count)
    return out, first


def round_counts(problem: TableProblem, sampled: Sampled) -> dict[Outcome, int]:
    """Observed round outcomes with tokens mapped to their classes."""
    return count_rows(class_rows(problem, sampled.rounds, 2), 2)[0]


def first_round_of(
    problem: TableProblem, sampled: Sampled, outcomes: Collection[Outcome]
) -> tuple[int, Outcome]:
    """The first sampled round whose outcome is one of ``outcomes``, and that outcome (one pass
    over the rounds, however many outcomes are asked for)."""
    mapped = class_rows(problem, sampled.rounds, 2)
    for i, row in enumerate(mapped.tolist()):
        outcome = tuple(row[:2]) + tuple(t for t in row[2:] if t != PLACEHOLDER)
        if outcome in outcomes:
            return i, outcome
    raise KeyError(outcomes)
