"""A tiny speculative engine for the plugin's engine checks: a Markov target over V = 4 tokens
(the law of the next token depends on the last one), drafts of 2 tokens from a noisy copy,
chain verification in plain Python; and the same engine with the residual replaced by the
target row (a rejection resamples from p instead of max(p - q, 0)), which is lossy."""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from specproof.audit.engine import Engine
from specproof.subjects.acceptance_engines import DRAFT, TARGET

GAMMA = 2
PROMPT = (1, 2)


def _draw(weights: Sequence[float], rng: random.Random) -> int:
    return rng.choices(range(len(weights)), weights=weights)[0]


def _generate(prompt: Sequence[int], num_new_tokens: int, seed: int, residual: bool) -> list[int]:
    rng = random.Random(seed)
    out: list[int] = []
    while len(out) < num_new_tokens:
        last = (list(prompt) + out)[-1]
        drafts: list[int] = []
        for _ in range(GAMMA):
            drafts.append(_draw(DRAFT[(last, *drafts)[-1]], rng))
        context = last
        for token in drafts:
            p, q = TARGET[context], DRAFT[context]
            if rng.random() * q[token] < p[token]:
                out.append(token)
                context = token
                continue
            rest = [max(pi - qi, 0.0) for pi, qi in zip(p, q, strict=True)] if residual else p
            out.append(_draw(rest, rng))
            break
        else:
            out.append(_draw(TARGET[context], rng))
    return out[:num_new_tokens]


def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> list[int]:
    return _generate(prompt, num_new_tokens, seed, residual=True)


def generate_residual_from_target(
    prompt: Sequence[int], num_new_tokens: int, seed: int
) -> list[int]:
    return _generate(prompt, num_new_tokens, seed, residual=False)


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, V]: the target's law after each prefix (its last token)."""
    return torch.tensor(TARGET, dtype=torch.float64)[sequences]


def correct_engine() -> Engine:
    """``specproof parity-report engine plugin.engines:correct_engine``."""
    return Engine("tiny chain engine", generate, target_probs, PROMPT, max_draft=GAMMA)


def residual_from_target_engine() -> Engine:
    return Engine(
        "tiny chain engine, residual from the target",
        generate_residual_from_target,
        target_probs,
        PROMPT,
        max_draft=GAMMA,
    )
