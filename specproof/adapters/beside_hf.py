"""A real engine audited beside HF transformers on the same weights: the engine's logit gap to
HF, the audit at a tolerance that covers it, and the entry of the results file.

Every adapter of a real engine (llama.cpp, mlx-lm, ...) ends the same way; this is that end."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.subject import Engine
from specproof.audit.report import AuditReport, CaseResult
from specproof.models import AuditModel

GAP_SEQUENCES = 32
GAP_LENGTH = 16


class Configuration(Protocol):
    """What the results file records of an engine configuration."""

    @property
    def name(self) -> str: ...

    @property
    def tokens(self) -> int: ...

    @property
    def control(self) -> str: ...

    @property
    def drafter(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def sampling_label(self) -> str: ...

    @property
    def prompt(self) -> Sequence[int]: ...

    @property
    def lossy_by_design(self) -> bool: ...


def gap_sequences(
    model: AuditModel, count: int = GAP_SEQUENCES, length: int = GAP_LENGTH, seed: int = 0
) -> list[list[int]]:
    """Token sequences on which the engine's logits are compared with HF's: uniform over the
    vocabulary for a vocabulary of at most 64 ids (every id is seen), otherwise the audited
    prompt followed by random ids (a real model's logits on realistic positions as well as
    on noise)."""
    rng = np.random.default_rng(seed)
    if model.vocab <= 64:
        return [[int(t) for t in rng.integers(0, model.vocab, length)] for _ in range(count)]
    return [
        [*model.prompt, *(int(t) for t in rng.integers(0, model.vocab, length))]
        for _ in range(count)
    ]


def logit_gap(
    engine_logits: Callable[[list[int]], torch.Tensor],
    target: Any,
    sequences: Iterable[list[int]],
) -> tuple[float, float]:
    """(largest |logit difference|, largest TV between softmax rows) of the engine and HF on
    the same sequences, all positions; ``engine_logits(sequence)`` is the engine's [len, V]."""
    worst_logit = worst_tv = 0.0
    for sequence in sequences:
        ours = engine_logits(sequence).to(torch.float64)
        with torch.no_grad():
            theirs = target(torch.tensor([sequence])).logits[0].to(torch.float64)
        worst_logit = max(worst_logit, float((ours - theirs).abs().max()))
        tv = 0.5 * (torch.softmax(ours, -1) - torch.softmax(theirs, -1)).abs().sum(-1)
        worst_tv = max(worst_tv, float(tv.max()))
    return worst_logit, worst_tv


def prompt_shown(prompt: Sequence[int], greedy: bool) -> object:
    """How a results-file entry shows the prompt: the audit gives a greedy engine a random
    prompt of the same length per run (one prompt has one greedy output)."""
    return f"random prompts of {len(prompt)} tokens, one per run" if greedy else list(prompt)


def chained_target_probs(
    target: Any, chain: Callable[[torch.Tensor], torch.Tensor]
) -> Callable[[torch.Tensor], torch.Tensor]:
    """[B, L] -> [B, L, V]: HF's logits on the same weights, each row through the engine's own
    sampling chain ``chain`` (one row of logits -> its law)."""

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for b in range(sequences.shape[0]):
            for t in range(sequences.shape[1]):
                out[b, t] = chain(logits[b, t]).to(torch.float32)
        return out

    return target_probs


def coverage_text(row: CaseResult) -> str:
    return row.summary + ("" if row.verdict == "pass" else f" ({row.detail})")


def entry(
    engine: str,
    version: str,
    configuration: str,
    report: AuditReport,
    *,
    model: str,
    kind: str = "engine",
    control: str = "",
    settings: Mapping[str, Any] | None = None,
    coverage: str = "",
    seconds: float | None = None,
) -> dict[str, Any]:
    """One configuration's record: the report's rows and what the table shows of them;
    ``model``: the audited model's name."""
    return {
        "engine": engine,
        "version": version,
        "model": model,
        "configuration": configuration,
        "kind": kind,
        "control": control,
        "settings": dict(settings or {}),
        "verdict": report.verdict,
        "coverage": coverage,
        "seconds": round(report.seconds if seconds is None else seconds, 1),
        "report": report.as_dict(),
    }


def audit_beside_hf(
    engine_name: str,
    version: str,
    config: Configuration,
    build: Callable[[], Engine],
    gap: tuple[float, float] | None,
    plan: RunPlan,
    out: Path,
    model: AuditModel,
    prompt: object = None,
    notes: Callable[[], list[str]] | None = None,
    coverage_text_of: Callable[[], str] | None = None,
) -> None:
    """Build the engine, audit it at a tolerance covering its gap to HF, write its entry to
    ``out`` and print the report; ``prompt``: how the entry shows the prompt (the
    configuration's own by default); ``notes``: the engine's own notes, read after the audit
    (counters it kept while running); ``coverage_text_of``: the coverage column for an engine
    whose runs carry no rounds (what it traced instead); ``gap`` None: the engine is HF itself,
    which computes the law too."""
    from specproof.audit.engine.audit import audit_engine
    from specproof.audit.run import DEFAULT_TOLERANCE, progress_bar

    gap_logit, gap_tv = gap if gap is not None else (0.0, 0.0)
    # A row of N tokens can differ by up to N times the per-row gap; the exact row has N = 2.
    tolerance = max(DEFAULT_TOLERANCE, 2 * gap_tv)
    started = time.perf_counter()
    engine = build()
    startup = time.perf_counter() - started
    report = audit_engine(
        engine, num_new_tokens=config.tokens, tolerance=tolerance, bars=progress_bar(),
        **plan.audit_options(),
    )  # fmt: skip
    if gap is not None:
        report.notes.append(
            f"{engine_name} vs HF on the same weights: max |logit gap| {gap_logit:.2e}, max "
            f"row TV {gap_tv:.2e} ({GAP_SEQUENCES} random sequences of {GAP_LENGTH}); "
            f"--tolerance {tolerance:.2e}"
        )
    report.notes += [f"model {model.name}: {note}" for note in model.notes]
    report.notes += notes() if notes else []
    coverage = next((r for r in report.results if r.check == "coverage"), None)
    if coverage is None or config.drafter == "none":
        column = "-"
    else:
        column = coverage_text_of() if coverage_text_of else coverage_text(coverage)
    record = entry(
        engine_name,
        version,
        config.name,
        report,
        model=model.name,
        control=config.control,
        settings={
            "sampling": config.sampling_label,
            "drafter": config.label,
            "tokens": config.tokens,
            "prompt": list(config.prompt) if prompt is None else prompt,
            **({"logit_gap": gap_logit, "row_tv_gap": gap_tv} if gap is not None else {}),
            "tolerance": tolerance,
            "startup_seconds": round(startup, 1),
            **({"binned_cells": plan.binned_cells} if plan.binned_cells is not None else {}),
            **({"lossy_by_design": True} if config.lossy_by_design else {}),
        },
        coverage=column,
    )
    print(report.table(), file=sys.stderr, flush=True)
    out.write_text(json.dumps(record))
