"""A DSpark-style round on seeded tables, correct and with two round-level bugs, for
``specproof audit-engine --engine``.

The target's law depends on the last two tokens (a seeded table, V = 6, T = 0.5); the proposer
drafts a block of gamma = 3 tokens in parallel, slot k from a law that depends on the context's
last two tokens and k only (the target's row there plus seeded noise), and reports slot k's
confidence as that law's largest mass: known before any draft is drawn. Cuts: a static
threshold on the prefix survival, or Algorithm 1 with an SPS curve; verification is
:func:`specproof.e2e.decoding.verifier.batched_chain_verify`.
"""

from __future__ import annotations

from fractions import Fraction

import torch

from specproof.audit.engine.block import BlockProposal, Cut, block_round, round_engine
from specproof.audit.engine.subject import Engine

VOCAB = 6
GAMMA = 3
TEMPERATURE = 0.5
PROMPT = (1, 2, 3)
SEED = 7


def _tables() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(SEED)
    target = 2.0 * torch.randn(VOCAB, VOCAB, VOCAB, generator=generator)
    noise = 0.5 * torch.randn(GAMMA, VOCAB, VOCAB, VOCAB, generator=generator)
    return target, target[None] + noise


TARGET_LOGITS, DRAFT_LOGITS = _tables()


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, V]: the law after each prefix, from its last two tokens."""
    previous = torch.cat((sequences[:, :1], sequences[:, :-1]), dim=1)
    return torch.softmax(TARGET_LOGITS[previous, sequences] / TEMPERATURE, dim=-1)


def slot_probs(context: torch.Tensor, temperature: float) -> torch.Tensor:
    """[1, gamma, V]: slot k's law, from the context's last two tokens."""
    previous, last = context[0, -2], context[0, -1]
    return torch.softmax(DRAFT_LOGITS[:, previous, last] / temperature, dim=-1)[None]


def propose(context: torch.Tensor, temperature: float, generator: torch.Generator) -> BlockProposal:
    probs = slot_probs(context, temperature)
    tokens = torch.multinomial(probs[0], 1, generator=generator).T
    return BlockProposal(tokens, probs, probs.max(dim=-1).values)


def propose_confidence_of_draft(
    context: torch.Tensor, temperature: float, generator: torch.Generator
) -> BlockProposal:
    """Bug: slot k's confidence is q_k(x_k), the drafted token's own mass, so the cut reads the
    drafts it decides on (anticipating admission, theorem T5's lossy class)."""
    proposal = propose(context, temperature, generator)
    confidence = proposal.probs.gather(2, proposal.tokens[:, :, None]).squeeze(2)
    return BlockProposal(proposal.tokens, proposal.probs, confidence)


def propose_reports_untempered_q(
    context: torch.Tensor, temperature: float, generator: torch.Generator
) -> BlockProposal:
    """Bug: drafts drawn at the temperature, q reported at T = 1 (temperature on one side)."""
    proposal = propose(context, temperature, generator)
    return BlockProposal(proposal.tokens, slot_probs(context, 1.0), proposal.confidences)


def threshold_cut(confidences: list[list[float]]) -> list[int]:
    from specproof.reference.schedulers import StaticThreshold

    return StaticThreshold(Fraction(1, 4))(confidences, None)


def algorithm1_cut(confidences: list[list[float]]) -> list[int]:
    from specproof.reference.schedulers import Algorithm1

    return Algorithm1()(confidences, lambda tokens: 1.0 / (1.0 + 0.1 * tokens))


def _engine(name: str, proposer: object, cut: Cut) -> Engine:
    from specproof.e2e.decoding.verifier import batched_chain_verify

    round_fn = block_round(proposer, cut, batched_chain_verify, target_probs, TEMPERATURE)  # type: ignore[arg-type]
    return round_engine(name, round_fn, target_probs, PROMPT, max_draft=GAMMA)


def dspark_round_threshold() -> Engine:
    return _engine("block round, static threshold 1/4", propose, threshold_cut)


def dspark_round_algorithm1() -> Engine:
    return _engine("block round, Algorithm 1", propose, algorithm1_cut)


def mutant_confidence_of_draft() -> Engine:
    return _engine(
        "block round, confidence of the draft", propose_confidence_of_draft, threshold_cut
    )


def mutant_untempered_q() -> Engine:
    return _engine("block round, q untempered", propose_reports_untempered_q, threshold_cut)


BLOCK_ENGINES = {
    "block round, static threshold": ("PASS", dspark_round_threshold),
    "block round, Algorithm 1": ("PASS", dspark_round_algorithm1),
    "block mutant: confidence of the draft (anticipating cut)": (
        "FAIL",
        mutant_confidence_of_draft,
    ),
    "block mutant: drafts tempered, q untempered": ("FAIL", mutant_untempered_q),
}
