"""Drafting the rounds of a table problem: the batch layout verifiers are given, draws from
float32 rows by the inverse CDF, and user drafters called on LLM-scale logits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .errors import VerifierError
from .ids import integer_ids
from .problems import TableProblem
from .requests import RequestParams


@dataclass(frozen=True)
class Drafts:
    """One batch of drafted rounds, in FlashInfer's dense layout."""

    tokens: torch.Tensor  # [B, gamma] int64
    draft_probs: torch.Tensor  # [B, gamma, V] float32: the q the drafter reports
    target_probs: torch.Tensor  # [B, gamma + 1, V] float32
    lengths: torch.Tensor  # [B] draft lengths (all gamma unless ragged)
    greedy: torch.Tensor  # [B] bool: the row is verified at temperature 0
    kinds: torch.Tensor | None = None  # [B] index into the problem's requests
    seeds: torch.Tensor | None = None  # [B] the row's own generator seed, -1 for none

    def select(self, rows: slice) -> Drafts:
        """The rounds ``rows`` of this batch (one verifier call of at most ``max_batch``)."""
        return Drafts(
            self.tokens[rows],
            self.draft_probs[rows],
            self.target_probs[rows],
            self.lengths[rows],
            self.greedy[rows],
            None if self.kinds is None else self.kinds[rows],
            None if self.seeds is None else self.seeds[rows],
        )

    def params(self, problem: TableProblem) -> list[RequestParams]:
        """Each row's request parameters (greedy rows keep theirs; the marker says greedy)."""
        if self.kinds is None or not problem.requests:
            return [RequestParams(1.0)] * len(self.lengths)
        return [problem.requests[k] for k in self.kinds.tolist()]

    def generators(self) -> dict[int, torch.Generator]:
        """Fresh generators of the seeded rows (the same seeds give the same streams)."""
        if self.seeds is None:
            return {}
        return {
            row: torch.Generator().manual_seed(int(seed))
            for row, seed in enumerate(self.seeds.tolist())
            if seed >= 0
        }


def categorical(rows: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw per row by the inverse CDF in float64 (rows need not be normalised)."""
    cdf = rows.to(torch.float64).cumsum(-1)
    u = torch.rand(rows.shape[:-1], generator=generator, dtype=torch.float64) * cdf[..., -1]
    index = torch.searchsorted(cdf, u.unsqueeze(-1), right=True).squeeze(-1)
    return index.clamp_max(rows.shape[-1] - 1)


def draw_states(cdf: torch.Tensor, state: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw per row from the row ``cdf[state[b]]`` ([states, V] cumulative sums), by the
    inverse CDF in float64, without materialising a [B, V] row per draw."""
    u = torch.rand(state.shape, generator=generator, dtype=torch.float64)
    out = torch.empty(state.shape, dtype=torch.int64)
    for s in range(cdf.shape[0]):
        rows = state == s
        if bool(rows.any()):
            scaled = u[rows] * cdf[s, -1]
            out[rows] = torch.searchsorted(cdf[s], scaled, right=True).clamp_max(cdf.shape[-1] - 1)
    return out


DraftFn = Callable[..., Any]
"""A user drafter: ``draft(logits [B, V] float32, temperature: float) -> (tokens [B] int64,
probs [B, V] float32)``, the tokens it samples and the probabilities it reports for them."""

DRAFT_TEMPERATURES = (0.6, 0.7, 1.0)
"""Rows of a drafted batch cycle through these temperatures."""
LOGIT_TOP = 25.0
"""The largest logit of every row a drafter is given, as an LLM's (bf16-representable rows)."""


def drafter_logits(q: torch.Tensor, temperature: float) -> torch.Tensor:
    """LLM-scale logits for the draft rows ``q``: T log q shifted so the top logit is 25, then
    rounded to bf16 (so their softmax at T is close to q, not equal: the drafter reports its
    own q, and the verifier uses what it reports)."""
    logits = torch.log(q.double()) * temperature
    logits = logits - logits.max(-1, keepdim=True).values + LOGIT_TOP
    return logits.to(torch.bfloat16).to(torch.float32)


def call_drafter(fn: DraftFn, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Give ``fn`` LLM-scale logits of the rows ``q`` at the temperatures 0.6, 0.7 and 1 (row b
    at ``DRAFT_TEMPERATURES[b % 3]``); check its answers."""
    tokens = torch.empty(q.shape[:1], dtype=torch.int64)
    probs = torch.empty(q.shape, dtype=torch.float32)
    group = torch.arange(q.shape[0]) % len(DRAFT_TEMPERATURES)
    for index, temperature in enumerate(DRAFT_TEMPERATURES):
        rows = group == index
        if not bool(rows.any()):
            continue
        result = fn(drafter_logits(q[rows], temperature), temperature)
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise VerifierError("a drafter must return (tokens [B], probs [B, V])")
        drawn = integer_ids(result[0], "the drafter's tokens").reshape(-1)
        reported = torch.as_tensor(result[1]).to(torch.float32)
        if drawn.shape != q[rows].shape[:1] or reported.shape != q[rows].shape:
            raise VerifierError(
                f"drafter returned shapes {tuple(drawn.shape)} and {tuple(reported.shape)}, "
                f"expected {tuple(q[rows].shape[:1])} and {tuple(q[rows].shape)}"
            )
        tokens[rows], probs[rows] = drawn, reported
    if bool(((tokens < 0) | (tokens >= q.shape[-1])).any()):
        raise VerifierError("the drafter returned a token id outside the vocabulary")
    return tokens, probs


def draft_rounds(
    problem: TableProblem,
    batch: int,
    generator: torch.Generator,
    draft_rows: Callable[[torch.Tensor], torch.Tensor] | None = None,
    drafter: DraftFn | None = None,
) -> Drafts:
    """Draft ``batch`` rounds. ``draft_rows`` maps the float32 draft rows to the rows tokens are
    actually drawn from (identity for a correct drafter; adversarial drafters change it);
    ``drafter`` replaces drafting by a user function that also reports its q."""
    state = torch.full((batch,), problem.prompt_state, dtype=torch.int64)
    tokens, q_rows, p_rows = [], [], []
    for k in range(problem.gamma):
        q = problem.draft32[k][state]
        p_rows.append(problem.target32[k][state])
        if drafter is not None:
            x, reported = call_drafter(drafter, q)
        elif draft_rows is None:
            x = draw_states(problem.draft_cdf[k], state, generator)
            reported = q
        else:
            x = categorical(draft_rows(q), generator)
            reported = q
        q_rows.append(reported)
        tokens.append(x)
        state = x % problem.states
    p_rows.append(problem.target32[problem.gamma][state])
    choices = torch.tensor(problem.draft_lengths, dtype=torch.int64)
    lengths = choices[torch.randint(0, len(choices), (batch,), generator=generator)]
    modes = torch.tensor(problem.greedy_modes, dtype=torch.bool)
    greedy = modes[torch.randint(0, len(modes), (batch,), generator=generator)]
    empty = torch.empty((batch, 0), dtype=torch.int64)
    kinds = seeds = None
    if problem.requests:
        kinds = torch.randint(0, len(problem.requests), (batch,), generator=generator)
    if problem.seeded:
        seeds = torch.randint(0, 2**62, (batch,), generator=generator)
        seeds[torch.rand(batch, generator=generator) < 0.5] = -1
    return Drafts(
        torch.stack(tokens, 1) if tokens else empty,
        torch.stack(q_rows, 1) if q_rows else torch.empty((batch, 0, problem.vocab)),
        torch.stack(p_rows, 1),
        lengths,
        greedy,
        kinds,
        seeds,
    )
