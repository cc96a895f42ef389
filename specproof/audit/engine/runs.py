"""Running the subject: its prompts, its guarded target, its sampled runs, and a misbehaving
subject as a FAIL row (shared by the per-position rows of :mod:`.audit` and the sequence rows
of :mod:`.sequence`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..guard import TIMEOUT_CHECK, Guard, SubjectFailure
from ..report import CaseResult, exact_row
from .outputs import checked_rows, emission_of, emissions_of
from .subject import Emission, Engine

Bars = Callable[[str], Callable[[int, int], None]]


class SetupError(ValueError):
    """The audit cannot start as asked (checked before any run); ``argument`` names what to
    change (prompt, eos, tokens, runs)."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


class PromptError(SetupError):
    """The prompt is empty or holds an id outside the target's vocabulary."""

    def __init__(self, message: str) -> None:
        super().__init__("prompt", message)


def run_prompts(engine: Engine, runs: int, vocab: int, seed: int) -> list[tuple[int, ...]]:
    """The engine's prompt for every run of a sampled engine; random prompts of the same
    length (without EOS) for a greedy one, whose output one prompt determines."""
    if not engine.greedy:
        return [engine.prompt] * runs
    rng = np.random.default_rng(seed)
    tokens = [t for t in range(vocab) if t not in engine.eos_ids]
    return [tuple(int(t) for t in rng.choice(tokens, len(engine.prompt))) for _ in range(runs)]


def guarded_probs(
    guard: Guard, engine: Engine, label: str = "target_probs", vocab: int | None = None
) -> Callable[[torch.Tensor], torch.Tensor]:
    """``engine.target_probs`` (``label`` "draft_probs": ``engine.draft_probs``) through the
    guard, every answer checked (one vocabulary: ``vocab`` when given); a failure fails the row
    ``label``."""
    known: list[int] = [] if vocab is None else [vocab]
    law = engine.draft_probs if label == "draft_probs" else engine.target_probs
    if law is None:
        raise ValueError(f"the engine has no {label}")

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        what = f"{label} on sequences {tuple(sequences.shape)}"
        out = guard.call(label, what, law, sequences)
        try:
            rows = checked_rows(out, sequences, known[0] if known else None)
        except SubjectFailure as failure:
            failure.check = label
            failure.reason = failure.reason.replace("target_probs", label)
            raise
        known[:] = [rows.shape[-1]]
        return rows

    return target_probs


def target_vocab(probs: Callable[[torch.Tensor], torch.Tensor], engine: Engine) -> int:
    """V, from one call on a prompt of zeros (the engine's own prompt is checked against it
    before the target sees it)."""
    if not engine.prompt:
        raise PromptError("the prompt is empty: give at least one id")
    vocab = int(probs(torch.zeros((1, len(engine.prompt)), dtype=torch.long)).shape[-1])
    outside = [t for t in engine.prompt if not 0 <= t < vocab]
    if outside:
        raise PromptError(
            f"prompt id {outside[0]} is outside the target's vocabulary 0..{vocab - 1}"
        )
    return vocab


def sample_runs(
    engine: Engine,
    prompts: list[tuple[int, ...]],
    num_new_tokens: int,
    seed: int,
    bars: Bars | None,
    guard: Guard | None = None,
) -> list[Emission]:
    """Run ``engine`` once per prompt: run i with seed + i, or batch b of a batched engine
    with seed + b. A failure carries the number of runs completed before it."""
    guard = guard or Guard()
    runs = len(prompts)
    update = bars(engine.name) if bars else None
    emitted: list[Emission] = []
    step = engine.batch if engine.generate_many else 1
    for call, start in enumerate(range(0, runs, step)):
        chunk = prompts[start : start + step]
        try:
            if engine.generate_many:
                what = f"generate_many (runs {start}..{start + len(chunk) - 1})"
                many: Any = guard.call(
                    "generate", what, engine.generate_many, chunk, num_new_tokens, seed + call
                )
                emitted += emissions_of(many, start, len(chunk))
            else:
                one: Any = guard.call(
                    "generate", f"generate run {start}", engine.generate, chunk[0],
                    num_new_tokens, seed + start,
                )  # fmt: skip
                emitted.append(emission_of(one, start))
        except SubjectFailure as failure:
            failure.runs_done = len(emitted)
            raise
        done = len(emitted)
        if update and (done == runs or step > 1 or done % max(runs // 50, 1) == 0):
            update(done, runs)
    return emitted


def failure_row(case: str, failure: SubjectFailure, runs: int | None) -> CaseResult:
    """A misbehaving subject as an exact FAIL row; n counts the runs completed before it."""
    done = failure.runs_done
    summary = failure.reason
    if failure.check == TIMEOUT_CHECK and done is not None and runs is not None:
        summary += f"; {done} of {runs} runs completed"
    return exact_row(
        case, failure.check, done, "FAIL", summary, f"{case}/{failure.check}: {summary}"
    )
