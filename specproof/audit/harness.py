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
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import torch

from specproof.stats import HashPartition

Signature = Literal["flashinfer", "vllm"]
PLACEHOLDER = -1


@dataclass(frozen=True)
class TableProblem:
    """``target[t, s]`` is the target row at output position t after state s (t = 0..gamma);
    ``draft[k, s]`` the draft row at block position k (k = 0..gamma-1)."""

    name: str
    target: np.ndarray
    draft: np.ndarray
    tokens: int
    prompt_state: int = 0
    ragged: bool = False
    token_bins: HashPartition | None = None
    description: str = ""
    target32: torch.Tensor = field(init=False, repr=False)
    draft32: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        gamma = self.draft.shape[0]
        if self.target.shape[0] != gamma + 1 or self.target.shape[1:] != self.draft.shape[1:]:
            raise ValueError(f"{self.name}: target {self.target.shape} vs draft {self.draft.shape}")
        if not 1 <= self.tokens <= gamma + 1:
            raise ValueError(f"{self.name}: tokens must be in 1..{gamma + 1}")
        object.__setattr__(self, "target32", _rows32(self.target))
        object.__setattr__(self, "draft32", _rows32(self.draft))

    @property
    def gamma(self) -> int:
        return int(self.draft.shape[0])

    @property
    def states(self) -> int:
        return int(self.target.shape[1])

    @property
    def vocab(self) -> int:
        return int(self.target.shape[-1])

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
    for t in range(problem.tokens):
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
    draft_probs: torch.Tensor  # [B, gamma, V] float32
    target_probs: torch.Tensor  # [B, gamma + 1, V] float32
    lengths: torch.Tensor  # [B] draft lengths (all gamma unless ragged)


def categorical(rows: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw per row by the inverse CDF in float64 (rows need not be normalised)."""
    cdf = rows.to(torch.float64).cumsum(-1)
    u = torch.rand(rows.shape[:-1], generator=generator, dtype=torch.float64) * cdf[..., -1]
    index = torch.searchsorted(cdf, u.unsqueeze(-1), right=True).squeeze(-1)
    return index.clamp_max(rows.shape[-1] - 1)


def draft_rounds(
    problem: TableProblem,
    batch: int,
    generator: torch.Generator,
    draft_rows: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Drafts:
    """Draft ``batch`` rounds. ``draft_rows`` maps the float32 draft rows to the rows tokens are
    actually drawn from (identity for a correct drafter; adversarial drafters change it)."""
    state = torch.full((batch,), problem.prompt_state, dtype=torch.int64)
    tokens, q_rows, p_rows = [], [], []
    for k in range(problem.gamma):
        q = problem.draft32[k][state]
        p_rows.append(problem.target32[k][state])
        q_rows.append(q)
        x = categorical(q if draft_rows is None else draft_rows(q), generator)
        tokens.append(x)
        state = x % problem.states
    p_rows.append(problem.target32[problem.gamma][state])
    if problem.ragged:
        lengths = torch.randint(0, problem.gamma + 1, (batch,), generator=generator)
    else:
        lengths = torch.full((batch,), problem.gamma, dtype=torch.int64)
    empty = torch.empty((batch, 0), dtype=torch.int64)
    return Drafts(
        torch.stack(tokens, 1) if tokens else empty,
        torch.stack(q_rows, 1) if q_rows else torch.empty((batch, 0, problem.vocab)),
        torch.stack(p_rows, 1),
        lengths,
    )


Verifier = Callable[..., Any]
RoundFn = Callable[[TableProblem, int, torch.Generator], torch.Tensor]
"""(problem, batch, generator) -> emitted tokens [batch, gamma + 1], -1 padded."""


def _accepts_generator(fn: Verifier) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def call_flashinfer(fn: Verifier, drafts: Drafts, generator: torch.Generator) -> torch.Tensor:
    """Call ``fn`` with FlashInfer's chain_speculative_sampling signature; check its counters."""
    batch = drafts.tokens.shape[0]
    accepted = torch.zeros(batch, dtype=torch.int32)
    emitted = torch.zeros(batch, dtype=torch.int32)
    kwargs: dict[str, Any] = {"deterministic": True}
    if _accepts_generator(fn):
        kwargs["generator"] = generator
    else:
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    result = fn(
        drafts.draft_probs.contiguous(),
        drafts.tokens.to(torch.int32).contiguous(),
        drafts.target_probs.contiguous(),
        accepted,
        emitted,
        **kwargs,
    )
    out = result[0] if isinstance(result, tuple | list) else result
    out = torch.as_tensor(out).to(torch.int64)
    if isinstance(result, tuple | list) and len(result) >= 3:
        lengths = emitted_lengths(out)
        reported = torch.as_tensor(result[2]).to(torch.int64)
        if not torch.equal(reported, lengths - 1):
            raise VerifierError("emitted_num differs from the drafts kept in output_token_ids")
    return out


def vllm_metadata(batch: int) -> SimpleNamespace:
    """The fields of vLLM's SamplingMetadata that rejection_sample reads, for all-random rows."""
    return SimpleNamespace(
        all_greedy=False,
        all_random=True,
        temperature=torch.ones(batch, dtype=torch.float32),
        generators={},
        top_k=None,
        top_p=None,
        max_num_logprobs=None,
    )


def call_vllm(
    fn: Verifier, drafts: Drafts, problem: TableProblem, generator: torch.Generator
) -> torch.Tensor:
    """Call ``fn`` with vLLM's rejection_sample signature (ragged, flattened rows)."""
    batch, gamma = drafts.tokens.shape
    lengths = drafts.lengths
    keep = torch.arange(gamma).unsqueeze(0) < lengths.unsqueeze(1)  # [B, gamma]
    # The bonus token comes from the target row after the row's last draft.
    last_state = torch.where(
        lengths > 0,
        drafts.tokens.gather(1, (lengths - 1).clamp_min(0).unsqueeze(1)).squeeze(1)
        % problem.states,
        torch.full_like(lengths, problem.prompt_state),
    )
    bonus_rows = problem.target32[lengths, last_state]
    bonus = categorical(bonus_rows, generator).to(torch.int32).unsqueeze(1)
    num_draft = [int(n) for n in lengths]
    torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    out = fn(
        drafts.tokens[keep].to(torch.int32).contiguous(),
        num_draft,
        max(num_draft) if num_draft else 0,
        torch.cumsum(lengths, 0).to(torch.int32),
        drafts.draft_probs[keep].contiguous(),
        drafts.target_probs[:, :gamma][keep].contiguous(),
        bonus.contiguous(),
        vllm_metadata(batch),
    )
    out = torch.as_tensor(out).to(torch.int64)
    padded = torch.full((batch, gamma + 1), PLACEHOLDER, dtype=torch.int64)
    padded[:, : out.shape[1]] = out[:, : gamma + 1]
    return padded


class VerifierError(AssertionError):
    """The verifier broke a structural rule of its signature (not a statistical finding)."""


def emitted_lengths(out: torch.Tensor) -> torch.Tensor:
    """Entries before the first placeholder in each row."""
    filled = out != PLACEHOLDER
    return filled.to(torch.int64).cumprod(1).sum(1)


def check_structure(out: torch.Tensor, drafts: Drafts, vocab: int) -> None:
    """Exact checks on every row: ids in range, padding only at the end, at least one token,
    at most length + 1 tokens, and the kept drafts equal the drafted tokens."""
    lengths = emitted_lengths(out)
    filled = out != PLACEHOLDER
    if not torch.equal(filled.sum(1), lengths):
        raise VerifierError("a placeholder -1 is followed by a token")
    if bool((lengths < 1).any()):
        raise VerifierError("a row emitted no token")
    if bool((lengths > drafts.lengths + 1).any()):
        raise VerifierError("a row emitted more than its drafts plus one")
    if bool(((out < PLACEHOLDER) | (out >= vocab)).any()):
        raise VerifierError("a token id is outside the vocabulary")
    gamma = drafts.tokens.shape[1]
    kept = torch.arange(gamma).unsqueeze(0) < (lengths - 1).unsqueeze(1)
    if not torch.equal(out[:, :gamma][kept], drafts.tokens[kept]):
        raise VerifierError("an accepted position differs from the drafted token")


def complete(problem: TableProblem, out: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Continue each row from the target alone up to ``problem.tokens`` tokens."""
    batch = out.shape[0]
    lengths = emitted_lengths(out)
    result = torch.full((batch, problem.tokens), PLACEHOLDER, dtype=torch.int64)
    width = min(problem.tokens, out.shape[1])
    result[:, :width] = out[:, :width]
    for t in range(problem.tokens):
        todo = lengths <= t
        if not bool(todo.any()):
            continue
        previous = result[:, t - 1] if t > 0 else torch.full((batch,), problem.prompt_state)
        state = previous % problem.states if t > 0 else previous
        draws = categorical(problem.target32[t][state], generator)
        result[:, t] = torch.where(todo, draws, result[:, t])
    return result


def verifier_round(fn: Verifier, signature: Signature) -> RoundFn:
    """A round: correct drafting, then ``fn`` verifies, with the structure checks applied."""

    def run(problem: TableProblem, batch: int, generator: torch.Generator) -> torch.Tensor:
        drafts = draft_rounds(problem, batch, generator)
        if signature == "flashinfer":
            if problem.ragged:
                raise ValueError("FlashInfer's layout is dense; ragged problems are vLLM-only")
            out = call_flashinfer(fn, drafts, generator)
        else:
            out = call_vllm(fn, drafts, problem, generator)
        check_structure(out, drafts, problem.vocab)
        return out

    return run


@dataclass(frozen=True)
class Sampled:
    outputs: np.ndarray  # [n, tokens] completed output tokens
    lengths: np.ndarray  # [n] tokens emitted by the round


def sample_rounds(
    problem: TableProblem, round_fn: RoundFn, n: int, seed: int, chunk: int | None = None
) -> Sampled:
    """``n`` independent rounds in chunks (bounded memory for large vocabularies)."""
    if chunk is None:
        chunk = max(64, min(8192, 2**26 // max(1, problem.vocab * (problem.gamma + 1) * 2)))
    generator = torch.Generator().manual_seed(seed)
    outputs, lengths = [], []
    done = 0
    while done < n:
        size = min(chunk, n - done)
        out = round_fn(problem, size, generator)
        lengths.append(emitted_lengths(out).numpy())
        outputs.append(complete(problem, out, generator).numpy())
        done += size
    return Sampled(np.concatenate(outputs), np.concatenate(lengths))


def observed_classes(problem: TableProblem, outputs: np.ndarray) -> list[tuple[int, ...]]:
    classes, _ = token_classes(problem)
    mapped = classes[outputs]
    return [tuple(int(v) for v in row) for row in mapped]
