"""The inputs of the golden law vectors: small rows chosen to land on the boundaries engines get
wrong (ties at the top-k edge, one case per tie rule, top-p exactly on a cumulative sum, min-p
binding, zeros in the draft row, p = q, a rejected last position, full acceptance with the
bonus, greedy ties, non-finite rows). Masses are exact rationals; temperatures are 1 / m so
that the tempered law p^m / sum p^m stays rational."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction as F

Row = tuple[F, ...]


@dataclass(frozen=True)
class Sampling:
    temperature: F = F(1)
    top_k: int | None = None
    top_p: F | None = None
    min_p: F | None = None
    order: str = "sequential"
    greedy: bool = False


@dataclass(frozen=True)
class GoldenCase:
    """``target[k]`` is the raw target row at output position k (k = 0..n; row n gives the bonus),
    ``draft[k]`` the draft row that proposed ``draft_ids[k]``; ``uniforms`` lists injected
    (accept uniforms u_1..u_n, draw uniform) tuples. ``nonfinite`` marks a case whose rows hold
    NaN or inf (given as strings): the reference refuses it."""

    name: str
    description: str
    target: tuple[tuple[F | str, ...], ...]
    draft: tuple[tuple[F | str, ...], ...]
    draft_ids: tuple[int, ...]
    sampling: Sampling = field(default_factory=Sampling)
    uniforms: tuple[tuple[tuple[F, ...], F], ...] = ()
    nonfinite: bool = False


def _r(*values: int | str) -> tuple[F, ...]:
    """A row from integers or fraction strings; integer rows are normalised."""
    masses = tuple(F(v) for v in values)
    if all(isinstance(v, int) for v in values):
        total = sum(masses, F(0))
        return tuple(m / total for m in masses)
    return masses


U = F(1, 64)
"""Injected uniforms are multiples of 1/64: exact in float32 and float64."""


def _u(*sixty_fourths: int) -> tuple[F, ...]:
    return tuple(U * v for v in sixty_fourths)


TIE_TARGET = (_r(4, 3, 3, 2), _r(1, 3, 3, 3), _r(5, 2, 2, 1))
"""Target rows with a tie at the top-2 edge in every row."""
TIE_DRAFT = (_r(1, 1, 1, 1), _r(2, 1, 1, 1))

CASES: tuple[GoldenCase, ...] = (
    GoldenCase(
        "basic",
        "random-looking rows, two drafts, temperature 1, no filters",
        (_r(5, 3, 1, 1), _r(1, 4, 2, 3), _r(2, 2, 5, 1)),
        (_r(2, 5, 2, 1), _r(3, 3, 3, 1)),
        (1, 0),
        uniforms=((_u(10, 20), U * 5), (_u(50, 3), U * 40), (_u(1, 60), U * 63)),
    ),
    GoldenCase(
        "p-equals-q",
        "p = q at every draft position: every draft is accepted, the bonus comes from row n",
        (_r(1, 2, 3, 4), _r(4, 3, 2, 1), _r(1, 1, 1, 1)),
        (_r(1, 2, 3, 4), _r(4, 3, 2, 1)),
        (3, 0),
        uniforms=((_u(63, 63), U * 17),),
    ),
    GoldenCase(
        "draft-zeros",
        "the draft rows hold exact zeros (and the target puts mass there)",
        (_r(3, 1, 2, 2), _r(1, 1, 1, 5), _r(2, 1, 1, 4)),
        (_r(0, 1, 0, 3), _r(5, 0, 0, 1)),
        (3, 0),
        uniforms=((_u(8, 60), U * 30), (_u(62, 1), U * 33)),
    ),
    GoldenCase(
        "rejected-last",
        "the last draft has no target mass: if reached, it is always rejected",
        (_r(4, 3, 2, 1), _r(2, 2, 0, 4), _r(1, 1, 1, 1)),
        (_r(3, 3, 3, 1), _r(1, 1, 6, 1)),
        (0, 2),
        uniforms=((_u(4, 1), U * 20), (_u(63, 1), U * 50)),
    ),
    GoldenCase(
        "all-accepted-bonus",
        "p(x) >= q(x) at every draft: all accepted with probability 1, then the bonus token",
        (_r(1, 6, 1, 2), _r(1, 1, 7, 1), _r(3, 1, 4, 2)),
        (_r(3, 5, 1, 1), _r(3, 3, 3, 1)),
        (1, 2),
        uniforms=((_u(63, 63), U * 12), (_u(0, 0), U * 45)),
    ),
    GoldenCase(
        "top-k-tie-keep-ties",
        "top-k 2 with a tie at the edge (ranks 2 and 3 equal): every token as probable as the "
        "k-th is kept, 3 tokens, as vLLM (apply_top_k_only), HF transformers (TopKLogitsWarper) "
        "and FlashInfer (its top-k sampling and renorm kernels) do",
        TIE_TARGET,
        TIE_DRAFT,
        (2, 1),
        Sampling(top_k=2, order="vllm"),
        uniforms=((_u(20, 20), U * 30), (_u(1, 40), U * 60)),
    ),
    GoldenCase(
        "top-k-tie-exactly-k",
        "the same rows cut to exactly k = 2 tokens, the lower id of the tied ones, as llama.cpp "
        "(llama_sampler_top_k_impl: a partial sort, then k candidates; GCC's std::partial_sort "
        "keeps the lower ids on these rows), so the draft of token 2 is always rejected",
        TIE_TARGET,
        TIE_DRAFT,
        (2, 1),
        Sampling(top_k=2, order="llama.cpp"),
        uniforms=((_u(20, 20), U * 30), (_u(1, 40), U * 60)),
    ),
    GoldenCase(
        "top-p-exact",
        "top-p 3/4 lands exactly on a cumulative sum (1/2 + 1/4): the nucleus stops there",
        (
            _r("1/2", "1/4", "1/8", "1/8"),
            _r("1/8", "1/2", "1/4", "1/8"),
            _r("1/4", "1/4", "1/2", 0),
        ),
        (_r(1, 1, 1, 1), _r(1, 2, 1, 0)),
        (2, 1),
        Sampling(top_p=F(3, 4)),
        uniforms=((_u(30, 10), U * 50), (_u(2, 2), U * 1)),
    ),
    GoldenCase(
        "min-p-binding",
        "min-p 1/3 removes tokens below a third of the largest mass",
        (_r(6, 3, 1, 2), _r(2, 9, 3, 2), _r(1, 1, 5, 1)),
        (_r(1, 2, 2, 1), _r(1, 1, 1, 1)),
        (3, 1),
        Sampling(min_p=F(1, 3)),
        uniforms=((_u(5, 5), U * 33), (_u(30, 62), U * 9)),
    ),
    GoldenCase(
        "filters-sequential",
        "top-k 3 then top-p 3/5 on the renormalised top-k law (HF transformers; vLLM's order "
        "gives the same law when min-p is off)",
        (_r(36, 28, 14, 10, 7, 5), _r(30, 25, 20, 15, 6, 4), _r(40, 20, 15, 10, 10, 5)),
        (_r(1, 1, 1, 1, 1, 1), _r(3, 2, 2, 1, 1, 1)),
        (1, 2),
        Sampling(top_k=3, top_p=F(3, 5), order="sequential"),
        uniforms=((_u(7, 7), U * 40),),
    ),
    GoldenCase(
        "filters-joint",
        "the same rows with top-k 3 and top-p 3/5 both cut on the full law (FlashInfer, SGLang)",
        (_r(36, 28, 14, 10, 7, 5), _r(30, 25, 20, 15, 6, 4), _r(40, 20, 15, 10, 10, 5)),
        (_r(1, 1, 1, 1, 1, 1), _r(3, 2, 2, 1, 1, 1)),
        (1, 2),
        Sampling(top_k=3, top_p=F(3, 5), order="joint"),
        uniforms=((_u(7, 7), U * 40),),
    ),
    GoldenCase(
        "min-p-top-p-vllm",
        "min-p 1/5 then top-p 41/50 on the law min-p renormalised (vLLM): keeps (5/8, 3/8, 0, 0), "
        "so the draft of token 2 is always rejected",
        (_r(10, 6, 3, 1), _r(10, 6, 3, 1)),
        (_r(1, 1, 1, 1),),
        (2,),
        Sampling(top_p=F(41, 50), min_p=F(1, 5), order="vllm"),
        uniforms=((_u(40), U * 20),),
    ),
    GoldenCase(
        "min-p-top-p-sequential",
        "the same rows with top-p 41/50 first and min-p last (HF transformers): keeps "
        "(10/19, 6/19, 3/19, 0), so the draft of token 2 is accepted with probability 12/19",
        (_r(10, 6, 3, 1), _r(10, 6, 3, 1)),
        (_r(1, 1, 1, 1),),
        (2,),
        Sampling(top_p=F(41, 50), min_p=F(1, 5), order="sequential"),
        uniforms=((_u(40), U * 20),),
    ),
    GoldenCase(
        "temperature-half",
        "temperature 1/2: the processed row is p^2 renormalised",
        (_r(3, 2, 1, 4), _r(1, 2, 2, 5), _r(4, 4, 1, 1)),
        (_r(1, 1, 1, 1), _r(2, 1, 1, 2)),
        (3, 0),
        Sampling(temperature=F(1, 2)),
        uniforms=((_u(40, 40), U * 20), (_u(10, 63), U * 61)),
    ),
    GoldenCase(
        "greedy-ties",
        "greedy (temperature 0): drafts kept while equal to the argmax; ties go to the lowest id",
        (_r(3, 3, 2, 2), _r(1, 4, 4, 1), _r(2, 2, 2, 2)),
        (_r(1, 1, 1, 1), _r(1, 1, 1, 1)),
        (0, 1),
        Sampling(temperature=F(0), greedy=True),
        uniforms=((_u(0, 0), U * 0),),
    ),
    GoldenCase(
        "nonfinite-target",
        "a NaN in the target row: no law is defined; the reference refuses the call",
        (_r(1, 1, 1, 1), (F(1, 2), "nan", F(1, 4), F(1, 4)), _r(1, 1, 1, 1)),
        (_r(1, 1, 1, 1), _r(1, 1, 1, 1)),
        (0, 1),
        nonfinite=True,
    ),
    GoldenCase(
        "nonfinite-draft",
        "an infinity in the draft row: no law is defined; the reference refuses the call",
        (_r(1, 1, 1, 1), _r(1, 1, 1, 1), _r(1, 1, 1, 1)),
        ((F(1, 4), "inf", F(1, 4), F(1, 4)), _r(1, 1, 1, 1)),
        (0, 1),
        nonfinite=True,
    ),
)
