"""Table problems for auditing chain verifiers: Markov target and draft tables and the exact
laws of their output.

A problem has ``gamma`` draft positions. The target row at position t and the draft row at block
position k depend on t (or k) and on the state of the previous token, ``token % states`` (the
prompt's state for t = 0). One round: draft x_1..x_gamma from the draft rows, verify, then
continue each row from the target alone up to ``tokens`` tokens. If the round is lossless, the
completed tokens follow the target's Markov law exactly, which is what the audit tests.
Exact laws are computed in float64 from the float32 rows the verifier is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from specproof.stats import HashPartition

from .requests import RequestParams, check_margins

PLACEHOLDER = -1
Outcome = tuple[int, ...]
"""A round's outcome: (draft length, greedy flag, emitted token classes...)."""


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
