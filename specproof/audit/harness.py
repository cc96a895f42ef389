"""Table problems for auditing chain verifiers: Markov target and draft tables, exact laws of the
output, and a vectorised driver that drafts, calls a verifier and completes the output.

A problem has ``gamma`` draft positions. The target row at position t and the draft row at block
position k depend on t (or k) and on the state of the previous token, ``token % states`` (the
prompt's state for t = 0). One round: draft x_1..x_gamma from the draft rows, verify, then
continue each row from the target alone up to ``tokens`` tokens. If the round is lossless, the
completed tokens follow the target's Markov law exactly, which is what the audit tests.
Exact laws are computed in float64 from the float32 rows the verifier is given.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import torch

from specproof.stats import HashPartition

from .requests import (
    GREEDY_TEMPERATURE,
    RequestParams,
    check_margins,
    raw_logits,
    vllm_metadata,
)

Signature = Literal["flashinfer", "vllm", "vllm-logits", "hf"]
PLACEHOLDER = -1


@dataclass(frozen=True)
class TableProblem:
    """``target[t, s]`` is the target row at output position t after state s (t = 0..gamma);
    ``draft[k, s]`` the draft row at block position k (k = 0..gamma-1)."""

    name: str
    target: np.ndarray
    draft: np.ndarray
    tokens: int | None = None
    prompt_state: int = 0
    ragged: bool = False
    token_bins: HashPartition | None = None
    description: str = ""
    greedy_modes: tuple[bool, ...] = (False,)
    """Row kinds drawn uniformly per round: False = random (temperature 1), True = greedy."""
    positions: bool = False
    """Test per-position rows (draft length, tokens emitted, the token at position j) instead
    of the joint round law, whose cells grow as V^gamma."""
    ngram: bool = False
    """Drafts are one-hot (n-gram); the vLLM signature then receives ``draft_probs=None``."""
    requests: tuple[RequestParams, ...] = ()
    """Random rows draw their request parameters uniformly from these (temperature 1 when
    empty); the raw-logit signature gets logits that these parameters process into the rows."""
    seeded: bool = False
    """Half of the rows carry their own seeded generator (vLLM's per-request generators)."""
    target32: torch.Tensor = field(init=False, repr=False)
    draft32: torch.Tensor = field(init=False, repr=False)
    target_cdf: torch.Tensor = field(init=False, repr=False)
    draft_cdf: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        gamma = self.draft.shape[0]
        if self.target.shape[0] != gamma + 1 or self.target.shape[1:] != self.draft.shape[1:]:
            raise ValueError(f"{self.name}: target {self.target.shape} vs draft {self.draft.shape}")
        if self.tokens is None:
            object.__setattr__(self, "tokens", gamma + 1)
        assert self.tokens is not None
        if not 1 <= self.tokens <= gamma + 1:
            raise ValueError(f"{self.name}: tokens must be in 1..{gamma + 1}")
        if not self.greedy_modes:
            raise ValueError(f"{self.name}: greedy_modes needs at least one row kind")
        object.__setattr__(self, "target32", _rows32(self.target))
        object.__setattr__(self, "draft32", _rows32(self.draft))
        for params in self.requests:
            check_margins(self.target32.reshape(-1, self.vocab), params)
        # Every row of a batch is one of ``states`` rows per position: draw from their CDFs.
        object.__setattr__(self, "target_cdf", self.target32.double().cumsum(-1))
        object.__setattr__(self, "draft_cdf", self.draft32.double().cumsum(-1))

    @property
    def gamma(self) -> int:
        return int(self.draft.shape[0])

    @property
    def states(self) -> int:
        return int(self.target.shape[1])

    @property
    def vocab(self) -> int:
        return int(self.target.shape[-1])

    @property
    def draft_lengths(self) -> tuple[int, ...]:
        """Draft lengths drawn uniformly per round (0..gamma when ragged)."""
        return tuple(range(self.gamma + 1)) if self.ragged else (self.gamma,)

    @property
    def num_tokens(self) -> int:
        assert self.tokens is not None
        return self.tokens

    def p64(self) -> np.ndarray:
        """The target rows the verifier sees, renormalised in float64."""
        return _renormalised(self.target32)

    def q64(self) -> np.ndarray:
        return _renormalised(self.draft32)


def _rows32(rows: np.ndarray) -> torch.Tensor:
    rows64 = np.asarray(rows, dtype=np.float64)
    return torch.from_numpy(rows64 / rows64.sum(axis=-1, keepdims=True)).to(torch.float32)


def _renormalised(rows: torch.Tensor) -> np.ndarray:
    rows64 = rows.numpy().astype(np.float64)
    return rows64 / rows64.sum(axis=-1, keepdims=True)


# Exact laws -------------------------------------------------------------------------------


def token_classes(problem: TableProblem) -> tuple[np.ndarray, int]:
    """Each token's observed class (its id, or its hash bin) and the number of classes."""
    ids = np.arange(problem.vocab)
    if problem.token_bins is None:
        return ids, problem.vocab
    return problem.token_bins.tokens(ids), problem.token_bins.bins


def exact_output_law(problem: TableProblem) -> dict[tuple[int, ...], float]:
    """The target's law of the observed classes of the first ``tokens`` output tokens."""
    p = problem.p64()
    classes, count = token_classes(problem)
    states = problem.states
    # mass[t, s, c, s']: P(class c and next state s' at position t | state s)
    mass = np.zeros((p.shape[0], states, count, states))
    next_state = np.arange(problem.vocab) % states
    for c in range(count):
        for s2 in range(states):
            mask = (classes == c) & (next_state == s2)
            mass[:, :, c, s2] = p[:, :, mask].sum(axis=-1)
    law: dict[tuple[tuple[int, ...], int], float] = {((), problem.prompt_state): 1.0}
    for t in range(problem.num_tokens):
        step: dict[tuple[tuple[int, ...], int], float] = {}
        for (prefix, s), w in law.items():
            for c in range(count):
                for s2 in range(states):
                    m = mass[t, s, c, s2]
                    if m > 0:
                        key = ((*prefix, c), s2)
                        step[key] = step.get(key, 0.0) + w * m
        law = step
    out: dict[tuple[int, ...], float] = {}
    for (prefix, _), w in law.items():
        out[prefix] = out.get(prefix, 0.0) + w
    return out


def exact_length_law(problem: TableProblem) -> dict[int, float]:
    """Law of the tokens one round emits (accepted drafts + 1) under chain verification.

    P(first k drafts accepted, state s) follows a forward recursion over states with the
    accepted-token mass min(p, q); ragged problems mix draft lengths 0..gamma uniformly.
    """
    p, q = problem.p64(), problem.q64()
    states, gamma = problem.states, problem.gamma
    next_state = np.arange(problem.vocab) % states
    reach = [np.eye(states)[problem.prompt_state]]
    for k in range(gamma):
        accepted = np.minimum(p[k], q[k])  # [s, V]
        step = np.zeros(states)
        for s2 in range(states):
            step[s2] = reach[-1] @ accepted[:, next_state == s2].sum(axis=1)
        reach.append(step)
    survive = [float(r.sum()) for r in reach]  # P(at least k accepted), k = 0..gamma
    lengths = [None] if not problem.ragged else list(range(gamma + 1))
    law: dict[int, float] = {}
    for length in lengths:
        drafts = gamma if length is None else length
        weight = 1.0 / len(lengths)
        for k in range(drafts + 1):
            at_least = survive[k]
            more = survive[k + 1] if k < drafts else 0.0
            law[k + 1] = law.get(k + 1, 0.0) + weight * (at_least - more)
    return {k: v for k, v in law.items() if v > 0}


# Driving a verifier ------------------------------------------------------------------------


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
        drawn = torch.as_tensor(result[0]).to(torch.int64).reshape(-1)
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


Verifier = Callable[..., Any]
RoundFn = Callable[[TableProblem, int, torch.Generator], Any]
"""(problem, batch, generator) -> emitted tokens [batch, gamma + 1], -1 padded, or the pair
(tokens, the :class:`Drafts` they verified)."""


class VerifierError(AssertionError):
    """The verifier broke a structural rule of its signature (not a statistical finding).

    ``row`` is the offending row of the batch when known; the sampler turns it into a round."""

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.round: int | None = None


def _accepts_generator(fn: Verifier) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _seed_torch(generator: torch.Generator) -> None:
    """Verifiers that draw from torch's default generator get a seed from the audit's stream."""
    torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))


def call_flashinfer(fn: Verifier, drafts: Drafts, generator: torch.Generator) -> torch.Tensor:
    """Call ``fn`` with FlashInfer's chain_speculative_sampling signature, once per draft
    length (its layout is dense), and check its counters."""
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    for length in torch.unique(drafts.lengths).tolist():
        rows = torch.nonzero(drafts.lengths == length).squeeze(1)
        accepted = torch.zeros(len(rows), dtype=torch.int32)
        emitted = torch.zeros(len(rows), dtype=torch.int32)
        kwargs: dict[str, Any] = {"deterministic": True}
        if _accepts_generator(fn):
            kwargs["generator"] = generator
        else:
            _seed_torch(generator)
        result = fn(
            drafts.draft_probs[rows, :length].contiguous(),
            drafts.tokens[rows, :length].to(torch.int32).contiguous(),
            drafts.target_probs[rows, : length + 1].contiguous(),
            accepted,
            emitted,
            **kwargs,
        )
        out = result[0] if isinstance(result, tuple | list) else result
        out = torch.as_tensor(out).to(torch.int64)
        if out.shape != (len(rows), length + 1):
            raise VerifierError(
                f"output_token_ids has shape {tuple(out.shape)}, expected {(len(rows), length + 1)}"
            )
        if isinstance(result, tuple | list) and len(result) >= 3:
            reported = torch.as_tensor(result[2]).to(torch.int64)
            wrong = torch.nonzero(reported != emitted_lengths(out) - 1)
            if len(wrong):
                raise VerifierError(
                    "emitted_num differs from the drafts kept in output_token_ids",
                    int(rows[int(wrong[0, 0])]),
                )
        padded[rows, : length + 1] = out
    return padded


def bonus_tokens(problem: TableProblem, drafts: Drafts, generator: torch.Generator) -> torch.Tensor:
    """The bonus token of every row, from the target row after its last draft (argmax for
    greedy rows): what an engine samples before calling vLLM's rejection_sample."""
    lengths = drafts.lengths
    last_state = torch.where(
        lengths > 0,
        drafts.tokens.gather(1, (lengths - 1).clamp_min(0).unsqueeze(1)).squeeze(1) % problem.states
        if drafts.tokens.shape[1]
        else torch.zeros_like(lengths),
        torch.full_like(lengths, problem.prompt_state),
    )
    keys = lengths * problem.states + last_state
    flat = problem.target_cdf.reshape(-1, problem.vocab)
    drawn = draw_states(flat, keys, generator)
    if not bool(drafts.greedy.any()):
        return drawn
    best = problem.target32.reshape(-1, problem.vocab).argmax(-1)[keys]
    return torch.where(drafts.greedy, best, drawn)


def vllm_call(
    drafts: Drafts,
    problem: TableProblem,
    generator: torch.Generator,
    *,
    logits: bool = False,
    marker: float = GREEDY_TEMPERATURE,
) -> Callable[..., torch.Tensor]:
    """vLLM's rejection_sample inputs for these drafts (ragged, flattened rows), built once;
    the returned call can be repeated on identical inputs (fresh per-request generators with
    the same seeds each time, or ``seeds`` instead). ``logits``: target rows as raw logits
    (current vLLM hands its sampler raw logits and the request's parameters) instead of
    processed probabilities."""
    batch, gamma = drafts.tokens.shape
    lengths = drafts.lengths
    keep = torch.arange(gamma).unsqueeze(0) < lengths.unsqueeze(1)  # [B, gamma]
    bonus = bonus_tokens(problem, drafts, generator).to(torch.int32).unsqueeze(1)
    num_draft = lengths.tolist()
    params = drafts.params(problem)
    target = drafts.target_probs[:, :gamma][keep].contiguous()
    if logits:
        row_of = torch.arange(batch).unsqueeze(1).expand(batch, gamma)[keep]
        temperature = torch.tensor([p.temperature for p in params], dtype=torch.float64)
        temperature = torch.where(drafts.greedy, 0.0, temperature)[row_of]
        dropped = torch.tensor([p.dropped_mass() for p in params], dtype=torch.float64)
        target = raw_logits(target, temperature, torch.where(drafts.greedy, 0.0, dropped)[row_of])
    args = (
        drafts.tokens[keep].to(torch.int32).contiguous(),
        num_draft,
        max(num_draft) if num_draft else 0,
        torch.cumsum(lengths, 0).to(torch.int32),
        None if problem.ngram else drafts.draft_probs[keep].contiguous(),
        target,
        bonus.contiguous(),
    )

    def call(fn: Verifier, seeds: torch.Tensor | None = None) -> torch.Tensor:
        _seed_torch(generator)
        own = drafts if seeds is None else replace(drafts, seeds=seeds)
        metadata = vllm_metadata(
            batch,
            drafts.greedy,
            marker=marker,
            params=params,
            generators=own.generators(),
            vocab=problem.vocab,
        )
        out = torch.as_tensor(fn(*args, metadata)).to(torch.int64)
        if out.dim() != 2 or out.shape[0] != batch:
            raise VerifierError(f"output has shape {tuple(out.shape)}, expected [{batch}, n + 1]")
        padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
        width = min(out.shape[1], gamma + 1)
        padded[:, :width] = out[:, :width]
        if out.shape[1] > gamma + 1:
            extra = torch.nonzero((out[:, gamma + 1 :] != PLACEHOLDER).any(1))
            if len(extra):
                raise VerifierError("a row emitted more than its drafts plus one", int(extra[0, 0]))
        return padded

    return call


def call_vllm(
    fn: Verifier,
    drafts: Drafts,
    problem: TableProblem,
    generator: torch.Generator,
    *,
    logits: bool = False,
    marker: float = GREEDY_TEMPERATURE,
) -> torch.Tensor:
    """Call ``fn`` once with vLLM's rejection_sample signature (see :func:`vllm_call`)."""
    return vllm_call(drafts, problem, generator, logits=logits, marker=marker)(fn)


HF_TEMPERATURE = 0.5
"""Temperature of the hf signature's cases (each request's own temperature where the problem
has requests): the logits are T log p, so softmax(logits / T) = p exactly when (and only when)
the temperature is applied to both sides."""


def call_hf(
    fn: Verifier, drafts: Drafts, problem: TableProblem, generator: torch.Generator
) -> torch.Tensor:
    """Call ``fn`` once per row with the hf signature (batch 1, logits and a temperature):

    ``fn(draft_tokens [1, n] int64, draft_logits [1, n, V], target_logits [1, n + 1, V],
    temperature: float)`` returns the emitted tokens [1, m] (or a tuple whose first item they
    are): m - 1 accepted drafts, then the correction or bonus token.
    """
    batch, gamma = drafts.tokens.shape
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    temperatures = [
        p.temperature if problem.requests else HF_TEMPERATURE for p in drafts.params(problem)
    ]
    scale = torch.tensor(temperatures, dtype=torch.float64).reshape(-1, 1, 1)
    draft_logits = (torch.log(drafts.draft_probs.double()) * scale).to(torch.float32)
    target_logits = (torch.log(drafts.target_probs.double()) * scale).to(torch.float32)
    _seed_torch(generator)
    for row in range(batch):
        n = int(drafts.lengths[row])
        result = fn(
            drafts.tokens[row : row + 1, :n].clone(),
            draft_logits[row : row + 1, :n].clone(),
            target_logits[row : row + 1, : n + 1].clone(),
            temperatures[row],
        )
        out = result[0] if isinstance(result, tuple | list) else result
        out = torch.as_tensor(out).to(torch.int64).reshape(-1)
        if not 1 <= out.numel() <= n + 1:
            raise VerifierError(f"emitted {out.numel()} tokens for {n} drafts", row)
        padded[row, : out.numel()] = out
    return padded


def emitted_lengths(out: torch.Tensor) -> torch.Tensor:
    """Entries before the first placeholder in each row."""
    filled = out != PLACEHOLDER
    return filled.to(torch.int64).cumprod(1).sum(1)


def _first(mask: torch.Tensor) -> int | None:
    rows = torch.nonzero(mask.reshape(mask.shape[0], -1).any(1) if mask.dim() > 1 else mask)
    return int(rows[0, 0]) if len(rows) else None


def check_structure(out: torch.Tensor, drafts: Drafts, vocab: int) -> None:
    """Exact checks on every row (alpha = 0): ids in range, padding only at the end, at least
    one token, at most length + 1 tokens, and the kept drafts equal the drafted tokens."""
    lengths = emitted_lengths(out)
    filled = out != PLACEHOLDER
    gamma = drafts.tokens.shape[1]
    kept = torch.arange(gamma).unsqueeze(0) < (lengths - 1).unsqueeze(1)
    checks = [
        ((out < PLACEHOLDER) | (out >= vocab), "a token id is outside the vocabulary 0..V-1"),
        (filled.sum(1) != lengths, "a placeholder -1 is followed by a token"),
        (lengths < 1, "a row emitted no token"),
        (lengths > drafts.lengths + 1, "a row emitted more than its drafts plus one"),
        (kept & (out[:, :gamma] != drafts.tokens), "an accepted position differs from its draft"),
    ]
    for mask, message in checks:
        row = _first(mask)
        if row is not None:
            raise VerifierError(message, row)


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
    fn: Verifier,
    signature: Signature,
    drafter: DraftFn | None = None,
    *,
    marker: float = GREEDY_TEMPERATURE,
) -> RoundFn:
    """A round: drafting (correct, or ``drafter``), then ``fn`` verifies, structure checked.
    ``marker``: the temperature that marks greedy rows in vLLM's metadata."""

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> Any:
        drafts = draft_rounds(problem, batch, generator, drafter=drafter)
        if signature == "flashinfer":
            out = call_flashinfer(fn, drafts, generator)
        elif signature == "hf":
            out = call_hf(fn, drafts, problem, generator)
        else:
            logits = signature == "vllm-logits"
            out = call_vllm(fn, drafts, problem, generator, logits=logits, marker=marker)
        check_structure(out, drafts, problem.vocab)
        return out, drafts

    return run


@dataclass(frozen=True)
class Sampled:
    outputs: np.ndarray  # [n, tokens] completed output tokens
    lengths: np.ndarray  # [n] tokens emitted by the round
    rounds: np.ndarray  # [n, 2 + gamma + 1]: draft length, greedy flag, emitted tokens (-1 pad)


class CaseTimeout(TimeoutError):
    """A case ran past its time limit."""


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


Outcome = tuple[int, ...]
"""A round's outcome: (draft length, greedy flag, emitted token classes...)."""


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
