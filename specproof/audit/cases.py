"""The audit battery: table problems for verifiers, exact-law cases for schedulers."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np

from specproof.reference import (
    Case,
    Drafter,
    TargetModel,
    Tokens,
    appendix_a,
    default_case,
    table_sps,
)
from specproof.stats import HashPartition

from .filters import FilterOrder, FilterProblem, filter_problems
from .problems import TableProblem
from .requests import request_kinds
from .signatures import VerifierSignature

LARGE_VOCAB = 50_257
LONG_LARGE_VOCAB = 2_053
"""Vocabulary of the large-vocab-long case (at most ``large_vocab``): a prime above 2048, so
no power-of-two tile divides it. Its rounds carry gamma + 1 = 9 rows of V floats each (its cost
grows with V nine times faster than the gamma = 1 case's); ``--long-vocab`` raises it."""


def _rows(rng: np.random.Generator, shape: tuple[int, ...], zeros: float = 0.0) -> np.ndarray:
    """Random rows (Dirichlet-like) with a share ``zeros`` of exact zeros; never all-zero."""
    rows = rng.gamma(0.6, size=shape)
    if zeros:
        rows[rng.random(shape) < zeros] = 0.0
        empty = rows.sum(axis=-1) == 0
        rows[empty, 0] = 1.0
    return rows / rows.sum(axis=-1, keepdims=True)


def _one_hot(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    rows = np.zeros(shape)
    hot = rng.integers(0, shape[-1], size=shape[:-1])
    np.put_along_axis(rows, hot[..., None], 1.0, axis=-1)
    return rows


def _no_ties(rows: np.ndarray) -> np.ndarray:
    """Rows whose largest entry is unique (greedy verification is then tie-free)."""
    top = rows.max(axis=-1, keepdims=True)
    ties = (rows == top).sum(axis=-1) > 1
    rows = rows.copy()
    rows[ties] += np.eye(rows.shape[-1])[0] * 1e-3
    return rows / rows.sum(axis=-1, keepdims=True)


SMALL_VOCAB = 4
GAMMA = 2
LONG_GAMMA = 7
"""Draft length of the long case (V = 2: the joint round law has 2^9 - 2 cells)."""
RAGGED_GAMMA = 8
"""Longest draft of the long ragged case (V = 3, lengths 0..8, per-position rows)."""
LONG_VOCAB_GAMMA = 8
"""Longest draft of the large-vocabulary long case (lengths 0..8, per-position rows)."""
HEAVY_BIN = (2.0, 8.0)
"""Weight of the heavy hash bin after state 0 and state 1 in the large-vocabulary long case."""
REQUEST_KEPT = 4
"""Tokens with target mass in each row of the request case (V = 6: two are filtered out)."""


def _kept_rows(rng: np.random.Generator, shape: tuple[int, ...], kept: int) -> np.ndarray:
    """Rows with exactly ``kept`` tokens of mass >= 0.1 each (unique argmax), zeros elsewhere."""
    vocab = shape[-1]
    rows = np.zeros(shape)
    flat = rows.reshape(-1, vocab)
    for row in flat:
        tokens = rng.choice(vocab, size=kept, replace=False)
        mass = 0.1 + (1 - 0.1 * kept) * rng.dirichlet(np.ones(kept))
        row[tokens] = mass
    return _no_ties(rows)


def _position_binned_rows(
    rng: np.random.Generator, bins: HashPartition, gamma: int, vocab: int
) -> tuple[np.ndarray, np.ndarray]:
    """Random target and draft rows (two states) whose hash-bin masses differ by position and
    state: the target row at position k is heavier on bin k mod bins (2x after state 0, 8x
    after state 1), its draft row on the next bin by as much. The residual max(p - q, 0) then
    sits on different bins at different positions, so a verifier that reads another position's
    (or state's) row shows in the binned law."""
    token_bin = bins.tokens(np.arange(vocab))
    heavy = np.arange(gamma + 1)[:, None, None] % bins.bins
    weight = np.asarray(HEAVY_BIN)[None, :, None]
    target = _rows(rng, (gamma + 1, len(HEAVY_BIN), vocab))
    target *= np.where(token_bin == heavy, weight, 1.0)
    target /= target.sum(axis=-1, keepdims=True)
    over = token_bin == (heavy[:gamma] + 1) % bins.bins
    draft = target[:gamma] * np.where(over, weight, 1.0)
    return target, draft / draft.sum(axis=-1, keepdims=True)


def verifier_problems(
    seed: int = 0,
    large_vocab: int = LARGE_VOCAB,
    long_vocab: int = LONG_LARGE_VOCAB,
    filter_order: FilterOrder = "sequential",
) -> list[TableProblem]:
    """The verifier battery. Small outcome spaces (V = 4, gamma = 2: at most 84 round outcomes
    per draft length and row kind) so that the joint law of the whole round is tested cell by
    cell; one large vocabulary through hash bins (gamma = 1 at ``large_vocab``; drafts of 0..8
    at the smaller of ``long_vocab`` and ``large_vocab``, per-position rows); the fixed
    adversarial cases of :mod:`specproof.audit.adversarial`; the binding-filter cases of
    :mod:`specproof.audit.filters` under ``filter_order``."""
    if large_vocab < 2 or long_vocab < 2:
        raise ValueError(f"vocabularies must be at least 2, got {large_vocab}, {long_vocab}")
    long_vocab = min(long_vocab, large_vocab)
    rng = np.random.default_rng(seed)
    gamma, states, vocab = GAMMA, 2, SMALL_VOCAB
    shape_p, shape_q = (gamma + 1, states, vocab), (gamma, states, vocab)
    small_p, small_q = _rows(rng, shape_p), _rows(rng, shape_q)
    bins = HashPartition(3, salt=seed)
    large_p = _rows(rng, (2, states, large_vocab))  # gamma = 1: the case is memory-bound
    # The draft over-weights one hash bin, so residual errors show in the binned law.
    weight = np.where(bins.tokens(np.arange(large_vocab)) == 0, 8.0, 1.0)
    large_q = large_p[:1] * weight
    large_q /= large_q.sum(axis=-1, keepdims=True)
    zeros_p = _rows(rng, shape_p, zeros=0.5)
    zeros_q = _rows(rng, shape_q, zeros=0.5)
    equal_p = _rows(rng, shape_p)
    greedy_p = _no_ties(_rows(rng, shape_p))
    problems = [
        TableProblem("small-vocab", small_p, small_q, description=f"V={vocab}, gamma={gamma}"),
        TableProblem(
            "large-vocab",
            large_p,
            large_q,
            token_bins=bins,
            description=f"V={large_vocab}, gamma=1, tokens hashed into 3 bins",
        ),
        TableProblem(
            "one-hot-draft",
            small_p,
            _one_hot(rng, shape_q),
            ngram=True,
            description="n-gram drafts (vLLM: draft_probs=None)",
        ),
        TableProblem("one-hot-target", _one_hot(rng, shape_p), small_q, description="p one-hot"),
        TableProblem(
            "p-equals-q", equal_p, equal_p[:gamma].copy(), description="p == q: no rejection"
        ),
        TableProblem("zeros", zeros_p, zeros_q, description="half of p and q exactly zero"),
        TableProblem(
            "ragged",
            small_p,
            small_q,
            ragged=True,
            description=f"draft lengths 0..{gamma} in one batch",
        ),
        TableProblem(
            "greedy",
            greedy_p,
            small_q,
            greedy_modes=(True,),
            description="temperature 0 rows (vLLM only)",
        ),
        TableProblem(
            "greedy-ties",
            np.array([[[3, 3, 2, 0], [1, 4, 4, 3]]] * (gamma + 1), dtype=np.float64),
            small_q,
            greedy_modes=(True,),
            description="temperature 0 rows with exact ties in the argmax (vLLM only)",
        ),
        TableProblem(
            "mixed",
            greedy_p,
            small_q,
            greedy_modes=(False, True),
            ragged=True,
            description="greedy and random rows, lengths 0..2, one batch (vLLM only)",
        ),
    ]
    long_p, long_q = _rows(rng, (LONG_GAMMA + 1, 2, 2)), _rows(rng, (LONG_GAMMA, 2, 2))
    ragged_p = _rows(rng, (RAGGED_GAMMA + 1, 2, 3))
    ragged_q = _rows(rng, (RAGGED_GAMMA, 2, 3))
    request_p = _kept_rows(rng, (gamma + 1, states, 6), REQUEST_KEPT)
    request_q = _rows(rng, (gamma, states, 6))
    problems += [
        TableProblem(
            "long",
            long_p,
            long_q,
            description=f"V=2, gamma={LONG_GAMMA}: the joint law of every round outcome",
        ),
        TableProblem(
            "long-ragged",
            ragged_p,
            ragged_q,
            ragged=True,
            positions=True,
            description=f"V=3, draft lengths 0..{RAGGED_GAMMA} in one batch, per-position rows",
        ),
        TableProblem(
            "requests",
            request_p,
            request_q,
            ragged=True,
            greedy_modes=(False, True),
            requests=request_kinds(REQUEST_KEPT),
            seeded=True,
            description="per-request temperature, top-k, top-p; greedy and random rows; "
            "seeded and unseeded requests; V=6 with 2 tokens filtered out",
        ),
    ]
    problems.append(
        TableProblem(
            "requests-random",
            request_p,
            request_q,
            ragged=True,
            requests=request_kinds(REQUEST_KEPT),
            description="the request case's random rows, for signatures without vLLM's "
            "metadata (hf: each row's own temperature)",
        )
    )
    problems += filter_problems(seed, filter_order)
    from .adversarial import adversarial_problems

    # Last, so that the cases before it (and their rows) are those of earlier batteries.
    wide_p, wide_q = _position_binned_rows(rng, bins, LONG_VOCAB_GAMMA, long_vocab)
    long_case = TableProblem(
        "large-vocab-long",
        wide_p,
        wide_q,
        ragged=True,
        positions=True,
        token_bins=bins,
        description=f"V={long_vocab}, draft lengths 0..{LONG_VOCAB_GAMMA} in one batch, "
        "tokens hashed into 3 bins, per-position rows",
    )
    return [*problems, *adversarial_problems(), long_case]


def calls_problem(signature: VerifierSignature, seed: int = 0) -> TableProblem:
    """The table of the calls rows: random rows of the request case (vLLM signatures: mixed
    requests, half of them seeded, lengths 0..2) or of the small-vocabulary case."""
    problems = {p.name: p for p in verifier_problems(seed, 2)}
    if signature.carries_requests:
        source = problems["requests"]
        return TableProblem(
            "calls",
            source.target,
            source.draft,
            ragged=True,
            requests=source.requests,
            seeded=True,
            description="identical inputs, called again (random rows, half seeded)",
        )
    source = problems["small-vocab"]
    return TableProblem("calls", source.target, source.draft, description="identical inputs")


def applies(problem: TableProblem, signature: VerifierSignature) -> bool:
    """Whether a signature can express the problem: greedy rows exist only in vLLM's (which
    gets the request case whole, so not its random half); request filters reach every
    signature but FlashInfer's."""
    if isinstance(problem, FilterProblem):
        return signature.takes_request_filters
    if signature.carries_requests:
        return problem.name != "requests-random"
    return not any(problem.greedy_modes)


# Scheduler cases --------------------------------------------------------------------------


def previous_token_case() -> Case:
    """Appendix-A style: c_2 depends on the drafted x_1 (0.9 after token 0, 0 after token 1) and
    the draft q_1 = (0.6, 0.4) differs from p = (0.7, 0.3), so a scheduler that reads c_2 (or
    q_1(x_1)) before x_1 is verified leaks x_1 into its own admission; two output tokens."""
    half = Fraction(1, 2)
    target = TargetModel(2, lambda ctx: (Fraction(7, 10), Fraction(3, 10)), order=0, name="p")

    def proposal(context: Tokens, drafted: Tokens) -> tuple[Fraction, Fraction]:
        return (Fraction(3, 5), Fraction(2, 5)) if not drafted else (half, half)

    def confidence(context: Tokens, drafted: Tokens) -> Fraction:
        if not drafted:
            return Fraction(4, 5)
        return Fraction(9, 10) if drafted[-1] == 0 else Fraction(0)

    drafter = Drafter(2, proposal, confidence, order=0, name="q")
    sps = table_sps({1: Fraction(1), 2: Fraction(1, 2), 3: Fraction(9, 20)}, tail=Fraction(2, 5))
    return Case("previous-token", target, drafter, 2, sps, ((),), 2)


def random_case(seed: int) -> Case:
    """Seeded random bigram tables, two requests, gamma = 2."""
    from specproof.reference.generators import random_drafter, random_target

    rng = random.Random(seed)
    target = random_target(rng, 3, 1, denominator=10)
    drafter = random_drafter(rng, 3, 1, 2, denominator=10)
    sps = table_sps(
        {1: Fraction(1), 2: Fraction(1), 3: Fraction(3, 4), 4: Fraction(1, 2)},
        tail=Fraction(2, 5),
    )
    return Case(f"random-{seed}", target, drafter, 2, sps, ((0,), (2,)), 2)


def scheduler_cases() -> list[Case]:
    return [appendix_a(), previous_token_case(), default_case(), random_case(7)]
