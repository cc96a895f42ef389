"""What an engine audit is handed: a generate loop and the target's processed law.

``generate(prompt, num_new_tokens, seed)`` runs the engine under test once and returns the
tokens it emitted after the prompt (EOS, when emitted, ends the list), or an :class:`Emission`
that also carries the rounds it ran (draft length, accepted count) for the coverage row.
``target_probs(sequences [B, L]) -> [B, L, V]`` is the target's processed law (the sampling
parameters applied) of the token after each prefix ``sequences[b, : t + 1]``, computed by a
plain teacher-forced pass that does not go through the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch


@dataclass(frozen=True)
class Emission:
    """One run of an engine: the tokens after the prompt, and the rounds that made them."""

    tokens: tuple[int, ...]
    rounds: tuple[tuple[int, int], ...] = ()
    """(draft length, accepted drafts) of each round, in order; empty when not traced."""


class Generate(Protocol):
    def __call__(
        self, prompt: Sequence[int], num_new_tokens: int, seed: int
    ) -> Sequence[int] | Emission: ...


TargetProbs = Callable[[torch.Tensor], torch.Tensor]
GenerateMany = Callable[[list[tuple[int, ...]], int, int], list[Emission]]
"""``generate_many(prompts, num_new_tokens, seed)``: one batch of independent runs (a batched
engine whose requests do not influence each other's law)."""


@dataclass
class Engine:
    """An engine under audit and the law it must reproduce."""

    name: str
    generate: Generate
    target_probs: TargetProbs
    prompt: tuple[int, ...]
    eos: int | Collection[int] | None = None
    """The EOS id, or all of them (a model config may list several)."""
    greedy: bool = False
    """True for an engine that must emit the target's argmax at every position."""
    max_draft: int | None = None
    """The longest draft the engine may propose; the coverage row warns when it never did."""
    notes: list[str] = field(default_factory=list)
    generate_many: GenerateMany | None = None
    """When set, runs are made in batches of ``batch`` through it instead of ``generate``."""
    batch: int = 512
    draft_probs: TargetProbs | None = None
    """The drafter's processed law, as ``target_probs`` gives the target's, for an engine
    whose draft law is known (a draft model): with it, and rounds in the runs, the audit adds
    the ``acceptance`` row (:mod:`.acceptance`)."""
    acceptance_rule: str = "rejection"
    """How the engine keeps a draft, which sets the acceptance row's expectation:
    "rejection" (speculative sampling, sum min(p, q)) or "match" (sample-and-match: kept when
    it equals the target's own independent draw, sum p q)."""

    @property
    def eos_ids(self) -> frozenset[int]:
        """Every id that ends a run (none when ``eos`` is None)."""
        if self.eos is None:
            return frozenset()
        if isinstance(self.eos, int):
            return frozenset((self.eos,))
        return frozenset(int(t) for t in self.eos)
