"""Chain speculative engines whose draft law is known, for the ``acceptance`` row: a Markov
target and drafter over V = 4 tokens (each law depends on the last token only), drafts of
:data:`GAMMA`, verification in plain Python, every round recorded.

- ``correct``: accept a draft x with probability min(1, p(x) / q(x)), else draw from the
  normalised residual max(p - q, 0); after a full acceptance, a bonus token from p.
- ``accept-all``: every draft accepted: lossy, too many accepted (no correct verifier accepts
  more often than sum min(p, q)).
- ``skip-half``: each round, with probability 1/2, ignores its drafts and draws one token from
  p (recorded as a rejection of the first draft): lossless, yet too few accepted, a slowdown
  that only the acceptance row sees.
- ``match``: sample-and-match (mlx-lm's rule): at each drafted position the target draws its own
  token from p, independently of the draft; the draft is kept when the two are equal, else the
  target's draw is emitted and the round ends. Lossless, and accepts with probability
  sum p(x) q(x), below sum min(p, q): its engine states ``acceptance_rule="match"``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from specproof.audit.engine import Emission, Engine

TARGET = (
    (0.5, 0.3, 0.15, 0.05),
    (0.1, 0.2, 0.3, 0.4),
    (0.25, 0.25, 0.25, 0.25),
    (0.6, 0.05, 0.05, 0.3),
)
DRAFT = (
    (0.2, 0.2, 0.3, 0.3),
    (0.4, 0.3, 0.2, 0.1),
    (0.1, 0.6, 0.2, 0.1),
    (0.25, 0.25, 0.25, 0.25),
)
GAMMA = 3
PROMPT = (1, 2)
VERIFIERS = ("correct", "accept-all", "skip-half", "match")


def _draw(weights: Sequence[float], rng: random.Random) -> int:
    return rng.choices(range(len(weights)), weights=weights)[0]


def run_chain(prompt: Sequence[int], num_new_tokens: int, seed: int, verifier: str) -> Emission:
    """One run: rounds of up to GAMMA drafts (fewer near the end, so no token is wasted)."""
    rng = random.Random(seed)
    out: list[int] = []
    rounds: list[tuple[int, int]] = []
    while len(out) < num_new_tokens:
        context = (list(prompt) + out)[-1]
        drafted = min(GAMMA, num_new_tokens - len(out) - 1)
        drafts: list[int] = []
        for _ in range(drafted):
            drafts.append(_draw(DRAFT[(context, *drafts)[-1]], rng))
        if verifier == "skip-half" and drafted and rng.random() < 0.5:
            out.append(_draw(TARGET[context], rng))
            rounds.append((drafted, 0))
            continue
        matched = 0
        for token in drafts:
            p, q = TARGET[context], DRAFT[context]
            if verifier == "match":
                own = _draw(p, rng)
                out.append(own)
                context = own
                if own != token:
                    break
                matched += 1
                continue
            if verifier == "accept-all" or rng.random() * q[token] < p[token]:
                out.append(token)
                context = token
                matched += 1
                continue
            rest = [max(pi - qi, 0.0) for pi, qi in zip(p, q, strict=True)]
            out.append(_draw(rest, rng))
            break
        else:
            out.append(_draw(TARGET[context], rng))
        rounds.append((drafted, matched))
    return Emission(tuple(out), tuple(rounds))


def _markov(rows: tuple[tuple[float, ...], ...]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, V]: the target's law after each prefix (its last token)."""
    return _markov(TARGET)[sequences]


def draft_probs(sequences: torch.Tensor) -> torch.Tensor:
    """The drafter's law after each prefix."""
    return _markov(DRAFT)[sequences]


def chain_engine(verifier: str = "correct") -> Engine:
    """The chain engine with ``verifier`` (one of :data:`VERIFIERS`) and its known draft law."""
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier must be one of {', '.join(VERIFIERS)}, got {verifier!r}")

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        return run_chain(prompt, num_new_tokens, seed, verifier)

    return Engine(
        f"markov chain engine ({verifier})",
        generate,
        target_probs,
        PROMPT,
        max_draft=GAMMA,
        draft_probs=draft_probs,
        acceptance_rule="match" if verifier == "match" else "rejection",
    )
