"""A speculative engine whose runs end at its own EOS after tens of tokens, correct and with a
drift of a few percent per position, for the sequence rows (``specproof audit-engine --engine
MODULE:FN --sequence 64``).

The target's law depends on the last two tokens (a seeded table, V = 8, token 7 is EOS) and
gives EOS mass :data:`EOS_MASS` after every context, so a run stops after 28 tokens at the
median and a fifth of the runs reach 64 tokens without EOS. The round is
:mod:`.block_examples`'s: a block of gamma = 3 drafts from a noisy copy of the target, a static
confidence threshold, :func:`specproof.e2e.decoding.verifier.batched_chain_verify`, run one request
at a time (``generate``) or for a batch of independent requests (``generate_many``, which the audit
uses). The drift mutant verifies against a target pass that moves :data:`DRIFT` of the mass to
EOS at every position (the speculative path's target law differs from the plain pass's by TV
0.015 per position): each position is off by less than any per-position row is powered for,
while the median stopping time falls from 28 to 17.4 tokens and the mean emitted length from
32.5 to 23.6.
"""

from __future__ import annotations

import torch

from specproof.audit.engine.block import BlockProposal, block_round, round_engine
from specproof.audit.engine.subject import Emission, Engine, GenerateMany, TargetProbs
from specproof.subjects.block_examples import threshold_cut

VOCAB = 8
EOS = VOCAB - 1
GAMMA = 3
TEMPERATURE = 1.0
PROMPT = (1, 2, 3)
SEED = 11
EOS_MASS = 1 - 0.5 ** (1 / 28)
"""EOS mass after every context: the stopping time is geometric with median 28."""
DRIFT = 0.015
"""Mass the drift mutant's verification moves to EOS at every position."""


def _tables() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(SEED)
    words = torch.softmax(1.5 * torch.randn(VOCAB, VOCAB, VOCAB - 1, generator=generator), -1)
    target = torch.cat(
        [(1 - EOS_MASS) * words, torch.full((VOCAB, VOCAB, 1), EOS_MASS)], dim=-1
    ).double()
    noise = torch.exp(0.5 * torch.randn(GAMMA, VOCAB, VOCAB, VOCAB, generator=generator))
    draft = target[None] * noise
    return target, draft / draft.sum(-1, keepdim=True)


TARGET, DRAFT = _tables()


def target_probs(sequences: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, V]: the law after each prefix, from its last two tokens."""
    previous = torch.cat((sequences[:, :1], sequences[:, :-1]), dim=1)
    return TARGET[previous, sequences].float()


def drifted_probs(sequences: torch.Tensor) -> torch.Tensor:
    """The target law with DRIFT of its mass moved to EOS at every position."""
    probs = target_probs(sequences)
    eos = torch.zeros(VOCAB)
    eos[EOS] = 1.0
    return (1 - DRIFT) * probs + DRIFT * eos


def propose(context: torch.Tensor, temperature: float, generator: torch.Generator) -> BlockProposal:
    """Slot k drawn from the noisy row of the context's last two tokens; confidence its largest
    mass (known before any draft)."""
    previous, last = context[0, -2], context[0, -1]
    probs = DRAFT[:, previous, last].float()[None]
    tokens = torch.multinomial(probs[0], 1, generator=generator).T
    return BlockProposal(tokens, probs, probs.max(dim=-1).values)


def batched_rounds(verified: TargetProbs) -> GenerateMany:
    """The round of :func:`propose`, :func:`.block_examples.threshold_cut` and
    batched_chain_verify, run for a batch of independent requests at once (each request's
    rows, drafts and uniforms are its own): ``generate_many(prompts, num_new_tokens, seed)``."""
    from specproof.e2e.decoding.verifier import batched_chain_verify

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        generator = torch.Generator().manual_seed(seed)
        out: list[list[int]] = [[] for _ in prompts]
        rounds: list[list[tuple[int, int]]] = [[] for _ in prompts]
        open_rows = list(range(len(prompts)))
        while open_rows:
            tails = torch.tensor([[*prompts[r], *out[r]][-2:] for r in open_rows])
            drafts, probs, confidences = [], [], []
            for row in tails:
                proposal = propose(row[None], TEMPERATURE, generator)
                drafts.append(proposal.tokens)
                probs.append(proposal.probs)
                confidences.append(proposal.confidences[0].tolist())
            tokens = torch.cat(drafts)
            lengths = torch.tensor(threshold_cut(confidences))
            # The law after the context and after each draft reads the last two tokens only.
            rows = verified(torch.cat((tails, tokens), dim=1))[:, 1:]
            emitted, accepted = batched_chain_verify(
                rows,
                torch.cat(probs),
                tokens,
                lengths,
                temperature=TEMPERATURE,
                generator=generator,
            )
            still_open = []
            for index, r in enumerate(open_rows):
                new = [int(t) for t in emitted[index].tolist() if t >= 0]
                out[r] += new
                rounds[r].append((int(lengths[index]), int(accepted[index])))
                if EOS in new:
                    out[r] = out[r][: out[r].index(EOS) + 1]
                if len(out[r]) < num_new_tokens and EOS not in new:
                    still_open.append(r)
            open_rows = still_open
        return [
            Emission(tuple(tokens[:num_new_tokens]), tuple(trace))
            for tokens, trace in zip(out, rounds, strict=True)
        ]

    return generate_many


def _engine(name: str, verified: TargetProbs) -> Engine:
    from specproof.e2e.decoding.verifier import batched_chain_verify

    round_fn = block_round(propose, threshold_cut, batched_chain_verify, verified, TEMPERATURE)
    engine = round_engine(name, round_fn, target_probs, PROMPT, max_draft=GAMMA, eos=EOS)
    engine.generate_many = batched_rounds(verified)
    return engine


def long_engine() -> Engine:
    return _engine("block round, EOS after ~28 tokens", target_probs)


def drift_mutant() -> Engine:
    return _engine("block mutant: 1.5 % of each position's mass moved to EOS", drifted_probs)


def stop_law(eos_mass: float, tokens: int) -> list[float]:
    """The exact law of the stopping-time cells (:func:`specproof.audit.engine.sequence.stop_cell`)
    when every position puts ``eos_mass`` on EOS: the target's, or the drift mutant's at (1 - DRIFT)
    EOS_MASS + DRIFT (its output follows the drifted law exactly)."""
    from specproof.audit.engine.sequence import STOP_BINS

    law = [0.0] * (STOP_BINS + 1)
    for stop in range(1, tokens + 1):
        law[(stop - 1) * STOP_BINS // tokens] += (1 - eos_mass) ** (stop - 1) * eos_mass
    law[STOP_BINS] = (1 - eos_mass) ** tokens
    return law


def mean_length(eos_mass: float, tokens: int) -> float:
    """The exact mean emitted length: sum over t < tokens of P(no EOS in the first t)."""
    return sum((1 - eos_mass) ** t for t in range(tokens))


MUTANT_EOS_MASS = (1 - DRIFT) * EOS_MASS + DRIFT


SEQUENCE_ENGINES = {
    "block round, EOS after ~28 tokens": ("PASS", long_engine),
    "block mutant: 1.5 % of each position's mass moved to EOS": ("FAIL", drift_mutant),
}
