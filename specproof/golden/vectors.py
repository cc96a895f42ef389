"""Golden law vectors: for each case of :mod:`.cases`, the exact law of one chain verification
round computed by the reference (:class:`ChainRule` / :class:`GreedyRule`, exact enumeration
with :func:`law_of`), the target row after the request's temperature and filters
(:func:`specproof.reference.filters.filtered`), and the round's output for injected uniforms
(the reference's :class:`SamplingChooser`: accept draft k iff u_k < p_k(x_k) / q_k(x_k); the
correction or bonus token is the inverse CDF of its law at the draw uniform)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from specproof.reference.blocks import DraftBlock
from specproof.reference.choices import Address, SamplingChooser, law_of
from specproof.reference.distributions import Dist, as_dist, normalise
from specproof.reference.filters import filtered
from specproof.reference.rules import ChainRule, GreedyRule

from .cases import CASES, GoldenCase, Sampling

FORMAT = "specproof-golden-chain"
VERSION = 1
MARGIN = Fraction(1, 10**6)
"""Every injected uniform is at least this far from a threshold that would change the output,
so float32 and float64 implementations must reproduce it exactly."""
CONVENTION = (
    "One chain verification round. Draft k (k = 1..n) is accepted iff u_k < p_k(x_k) / q_k(x_k) "
    "(p_k: processed target row k - 1, q_k: draft row k - 1); at the first rejection the "
    "correction token is drawn from norm(max(p_k - q_k, 0)), and after n acceptances the bonus "
    "token from p_{n+1}; a draw with uniform u returns the smallest token v with u < P(X <= v). "
    "Greedy cases keep drafts while they equal the argmax of the raw target row (ties to the "
    "lowest id) and emit the argmax after. The processed target row is the raw row at the "
    "temperature (p^(1/T) renormalised), then top-k, top-p and min-p in the declared order "
    "(specproof.reference.filters.filtered); at a tie with the k-th token, top-k keeps every "
    "tied token in the orders vllm, sequential and joint, and exactly k tokens (the lower ids) "
    "in the order llama.cpp. target_logits and draft_logits are ln of the rows "
    "(null: zero mass), for engines that take logits. Fractions are exact strings; *_float "
    "fields are the nearest doubles (null where the string is nan or inf)."
)


class RowsTarget:
    """A target whose law after ``prompt + emitted`` is row ``len(emitted)``."""

    def __init__(self, rows: Sequence[Dist], prompt_length: int) -> None:
        self.rows = rows
        self.prompt_length = prompt_length

    def dist(self, context: tuple[int, ...]) -> Dist:
        return self.rows[len(context) - self.prompt_length]


class InjectedUniforms:
    """The uniforms an engine is handed: u_k for the accept test of draft k, one for the draw."""

    def __init__(self, accept: Sequence[Fraction], draw: Fraction) -> None:
        self.accept = accept
        self.draw = draw

    def uniform(self, address: Address) -> Fraction:
        if address.phase == "accept":
            return self.accept[address.index - 1]
        return self.draw


PROMPT = (0,)


def exact_row(values: Sequence[Fraction | str], vocab: int, where: str) -> Dist:
    """A row as the reference reads it; ``nan`` and ``inf`` strings become floats, which it
    refuses."""
    return as_dist(
        [float(v) if isinstance(v, str) else v for v in values], vocab_size=vocab, where=where
    )


def processed(row: Dist, sampling: Sampling) -> Dist:
    """The law the request samples from: the row at its temperature, filtered."""
    if sampling.greedy:
        return row
    power = 1 / sampling.temperature
    if power.denominator != 1:
        raise ValueError(f"temperature must be 1/m for an exact law, got {sampling.temperature}")
    tempered = normalise([mass ** int(power) for mass in row])
    assert tempered is not None
    return filtered(
        tempered,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        min_p=sampling.min_p,
        order=sampling.order,
    )


def round_program(case: GoldenCase, target: Sequence[Dist], draft: Sequence[Dist]) -> Any:
    """The reference's verification of ``case.draft_ids`` as a program of the chooser."""
    rule = GreedyRule() if case.sampling.greedy else ChainRule()
    block = DraftBlock(case.draft_ids, tuple(draft), tuple(Fraction(1) for _ in draft))
    rows = RowsTarget(target, len(PROMPT))

    def program(chooser: Any) -> tuple[int, ...]:
        return tuple(rule.verify(PROMPT, block, rows, None, chooser))

    return program


def output_for(program: Any, accept: Sequence[Fraction], draw: Fraction) -> tuple[int, ...]:
    return tuple(program(SamplingChooser(InjectedUniforms(accept, draw), 0, 0)))


def check_margin(program: Any, accept: Sequence[Fraction], draw: Fraction) -> None:
    """Refuse uniforms within MARGIN of a threshold (the output must not move)."""
    expected = output_for(program, accept, draw)
    for index in range(len(accept) + 1):
        for step in (-MARGIN, MARGIN):
            moved = [*accept, draw]
            moved[index] = min(max(moved[index] + step, Fraction(0)), 1 - MARGIN)
            if output_for(program, moved[:-1], moved[-1]) != expected:
                raise ValueError(f"uniforms {accept}, {draw} lie within {MARGIN} of a threshold")


def fraction_text(value: Fraction | str) -> str:
    return str(value)


def as_float(value: Fraction | str) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def texts(rows: Sequence[Sequence[Fraction | str]]) -> list[list[str]]:
    return [[fraction_text(v) for v in row] for row in rows]


def floats(rows: Sequence[Sequence[Fraction | str]]) -> list[list[float | None]]:
    return [[as_float(v) for v in row] for row in rows]


def logits(rows: Sequence[Sequence[Fraction | str]]) -> list[list[float | None]]:
    out: list[list[float | None]] = []
    for row in rows:
        values = [float(v) for v in row]
        out.append([math.log(v) if math.isfinite(v) and v > 0 else None for v in values])
    return out


def optional(value: Fraction | None) -> str | None:
    return None if value is None else str(value)


def inputs_of(case: GoldenCase) -> dict[str, Any]:
    s = case.sampling
    return {
        "vocab": len(case.target[0]),
        "draft_ids": list(case.draft_ids),
        "target_probs": texts(case.target),
        "target_probs_float": floats(case.target),
        "target_logits": logits(case.target),
        "draft_probs": texts(case.draft),
        "draft_probs_float": floats(case.draft),
        "draft_logits": logits(case.draft),
        "sampling": {
            "temperature": str(s.temperature),
            "temperature_float": float(s.temperature),
            "top_k": s.top_k,
            "top_p": optional(s.top_p),
            "top_p_float": None if s.top_p is None else float(s.top_p),
            "min_p": optional(s.min_p),
            "min_p_float": None if s.min_p is None else float(s.min_p),
            "filter_order": s.order,
            "greedy": s.greedy,
        },
    }


def expected_of(case: GoldenCase) -> dict[str, Any]:
    vocab = len(case.target[0])
    try:
        raw = [
            exact_row(r, vocab, f"{case.name}: target row {k}") for k, r in enumerate(case.target)
        ]
        draft = [
            exact_row(r, vocab, f"{case.name}: draft row {k}") for k, r in enumerate(case.draft)
        ]
    except ValueError as error:
        return {"refused": True, "reason": str(error)}
    if case.nonfinite:
        raise ValueError(f"{case.name}: marked non-finite, yet the reference accepted its rows")
    target = [processed(row, case.sampling) for row in raw]
    program = round_program(case, target, draft)
    law = law_of(program)
    outcomes = sorted(law.items(), key=lambda item: (len(item[0]), item[0]))
    with_uniforms = []
    for accept, draw in case.uniforms:
        check_margin(program, accept, draw)
        emitted = output_for(program, accept, draw)
        with_uniforms.append(
            {
                "accept_uniforms": [str(u) for u in accept],
                "accept_uniforms_float": [float(u) for u in accept],
                "draw_uniform": str(draw),
                "draw_uniform_float": float(draw),
                "accepted": len(emitted) - 1,
                "emitted": list(emitted),
            }
        )
    return {
        "refused": False,
        "processed_target": texts(target),
        "processed_target_float": floats(target),
        "law": [
            {
                "accepted": len(tokens) - 1,
                "emitted": list(tokens),
                "probability": str(mass),
                "probability_float": float(mass),
            }
            for tokens, mass in outcomes
        ],
        "with_uniforms": with_uniforms,
    }


def golden_vectors(cases: Sequence[GoldenCase] = CASES) -> dict[str, Any]:
    """The whole versioned document."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "convention": CONVENTION,
        "cases": [
            {
                "name": case.name,
                "description": case.description,
                "inputs": inputs_of(case),
                "expected": expected_of(case),
            }
            for case in cases
        ],
    }
