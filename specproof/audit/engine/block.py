"""The whole speculative round as one unit: a block proposer, its cut, and the verifier, run
as a generate loop and audited end to end (rather than in three separate audits).

Signature of the pieces (batch 1, full context each round, so no cache can be stale):

- ``propose(context [1, L] int64, temperature, generator) -> BlockProposal``: gamma draft
  tokens, the per-slot laws q they were drawn from [1, gamma, V], and confidences [1, gamma].
- ``cut(confidences: list[list[float]]) -> list[int]``: the draft length to verify (a static
  threshold, or a scheduler such as Algorithm 1 with its SPS curve bound in).
- ``verify(target_probs [1, n + 1, V], draft_probs [1, n, V], drafts [1, n], lengths [1],
  temperature=, generator=) -> (emitted [1, n + 1] with -1 padding, accepted [1])``, the
  signature of :func:`specproof.e2e.decoding.verifier.batched_chain_verify`.

``target_probs(sequences [B, L]) -> [B, L, V]`` is the target's processed law; the round
verifies against it, and the audit tests the output against it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from .subject import Emission, Engine, TargetProbs


@dataclass(frozen=True)
class BlockProposal:
    tokens: torch.Tensor
    probs: torch.Tensor
    confidences: torch.Tensor


class Propose(Protocol):
    def __call__(
        self, context: torch.Tensor, temperature: float, generator: torch.Generator
    ) -> BlockProposal: ...


class Verify(Protocol):
    def __call__(
        self,
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        lengths: torch.Tensor,
        *,
        temperature: float,
        generator: torch.Generator,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


Cut = Callable[[list[list[float]]], list[int]]
Round = Callable[[Sequence[int], torch.Generator], tuple[list[int], int, int]]
"""One round from a context: (emitted tokens, draft length verified, accepted drafts)."""


def block_round(
    propose: Propose, cut: Cut, verify: Verify, target_probs: TargetProbs, temperature: float
) -> Round:
    """Propose a block, cut it, verify the kept drafts against the target in one pass."""

    def run(context: Sequence[int], generator: torch.Generator) -> tuple[list[int], int, int]:
        ids = torch.tensor([list(context)], dtype=torch.long)
        proposal = propose(ids, temperature, generator)
        length = int(cut(proposal.confidences.tolist())[0])
        drafts = proposal.tokens[:, :length]
        probs = target_probs(torch.cat((ids, drafts), dim=1))[:, ids.shape[1] - 1 :]
        emitted, accepted = verify(
            probs,
            proposal.probs[:, :length],
            drafts,
            torch.tensor([length]),
            temperature=temperature,
            generator=generator,
        )
        tokens = [int(t) for t in emitted[0].tolist() if t >= 0]
        return tokens, length, int(accepted[0])

    return run


def round_engine(
    name: str,
    round_fn: Round,
    target_probs: TargetProbs,
    prompt: Sequence[int],
    *,
    max_draft: int | None = None,
    greedy: bool = False,
    eos: int | None = None,
) -> Engine:
    """The generate loop of a round function: rounds until enough tokens or ``eos`` (the run
    ends after it), every round traced."""

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        generator = torch.Generator().manual_seed(seed)
        out: list[int] = []
        rounds: list[tuple[int, int]] = []
        while len(out) < num_new_tokens and (eos is None or eos not in out):
            tokens, drafted, accepted = round_fn([*prompt, *out], generator)
            out += tokens
            rounds.append((drafted, accepted))
        if eos is not None and eos in out:
            out = out[: out.index(eos) + 1]
        return Emission(tuple(out[:num_new_tokens]), tuple(rounds))

    return Engine(
        name=name,
        generate=generate,
        target_probs=target_probs,
        prompt=tuple(prompt),
        greedy=greedy,
        max_draft=max_draft,
        eos=eos,
    )
