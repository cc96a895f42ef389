"""The ``acceptance`` row: the count of accepted drafts against its exact expectation, for an
engine whose draft law is known (``Engine.draft_probs``) and whose runs record their rounds.

Each round (d drafted, m accepted) of a run that had emitted t tokens proposed its j-th draft at
the prefix prompt + tokens[: t + j]; proposals j = 0..min(m, d - 1) were tested (the first m
accepted, the next one rejected when m < d), the rest were never looked at; the last round may
end one token past the run when it accepted every draft (an engine that stops at its length
limit drops that round's bonus token, as ONNX Runtime GenAI and mlx-lm do). A correct engine
accepts a proposal with probability a = sum over non-EOS x of min(p(x), q(x))
(:data:`REJECTION`), p and q the target's and drafter's processed laws at its prefix, both
teacher-forced on the run's own tokens; an engine that verifies by sample-and-match
(:data:`MATCH`: the target draws its own token at the position independently of the draft,
and the draft is kept when the two are equal; lossless, the emitted token is always the
target's draw) accepts with probability a = sum over non-EOS x of p(x) q(x), never more than
the first. EOS is left out of either sum
because an accepted EOS draft ends the run and counts as the round's last token, not as an
accepted draft (HF transformers crops at it), so what a round records is "accepted and not
EOS", whose probability is that sum. The count is then tested two-sided by
:func:`specproof.stats.acceptance.acceptance_test` (a martingale test: the a_i depend on
earlier outcomes). Too many accepted drafts is a loss (no verifier accepts
more than sum min(p, q), the largest chance that draws from p and q agree), too few a
slowdown that no law row sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from specproof.stats.acceptance import DEFAULT_SHIFT, AcceptanceTest, acceptance_test

from ..report import WARN, CaseResult, exact_row
from .laws import next_token_chunks
from .rows import Settings
from .subject import Emission

CHECK = "acceptance"
REJECTION = "rejection"
MATCH = "match"
RULES = (REJECTION, MATCH)
"""How an engine decides to keep a draft (``Engine.acceptance_rule``), which sets a."""
SHIFT = DEFAULT_SHIFT
"""The shift of every acceptance probability the row states its power against."""


def proposals_of(run: Emission) -> tuple[list[int], list[bool]] | str:
    """(the position of each tested proposal's draft token, whether it was accepted), or what
    makes the run's rounds disagree with its tokens."""
    positions: list[int] = []
    accepted: list[bool] = []
    emitted = 0
    dropped_bonus = False
    for index, (drafted, matched) in enumerate(run.rounds):
        if not 0 <= matched <= drafted:
            return f"round {index} accepts {matched} of {drafted} drafts"
        for j in range(min(matched + 1, drafted)):
            positions.append(emitted + j)
            accepted.append(j < matched)
        emitted += matched + 1
        last = index == len(run.rounds) - 1
        # An engine that stops at its length limit may drop the bonus token of its last round.
        dropped_bonus = last and matched == drafted > 0 and emitted == len(run.tokens) + 1
        if emitted > len(run.tokens) and not dropped_bonus:
            return f"round {index} ends at token {emitted}, after the run's {len(run.tokens)}"
    if emitted != len(run.tokens) and not dropped_bonus:
        return f"the rounds emit {emitted} tokens, the run {len(run.tokens)}"
    return positions, accepted


def overlap_rows(
    target: np.ndarray, draft: np.ndarray, eos: frozenset[int], rule: str = REJECTION
) -> np.ndarray:
    """[..., V] x2 -> [...]: sum over non-EOS tokens of min(p, q) (``rule`` :data:`REJECTION`)
    or of p q (:data:`MATCH`)."""
    if rule not in RULES:
        raise ValueError(f"acceptance rule must be one of {', '.join(RULES)}, got {rule!r}")
    both = np.minimum(target, draft) if rule == REJECTION else target * draft
    if eos:
        both[..., sorted(eos)] = 0.0
    return np.asarray(both.sum(axis=-1))


def acceptance_probabilities(
    target_probs: Callable[[torch.Tensor], torch.Tensor],
    draft_probs: Callable[[torch.Tensor], torch.Tensor],
    prompts: Sequence[tuple[int, ...]],
    runs: Sequence[Emission],
    positions: Sequence[Sequence[int]],
    vocab: int,
    eos: frozenset[int],
    rule: str = REJECTION,
) -> list[np.ndarray]:
    """Each run's a_i at its proposals' positions, from teacher-forced calls of both laws on
    the run's own tokens (one group per distinct prompt, a chunk at a time)."""
    out = [np.zeros(0)] * len(runs)
    for prompt in dict.fromkeys(prompts):
        index = [i for i, p in enumerate(prompts) if p == prompt]
        continuations = [runs[i].tokens for i in index]
        target_chunks = next_token_chunks(target_probs, prompt, continuations, vocab)
        draft_chunks = next_token_chunks(draft_probs, prompt, continuations, vocab)
        for (start, p), (_, q) in zip(target_chunks, draft_chunks, strict=True):
            if p.shape != q.shape:
                raise ValueError(
                    f"draft_probs returned rows of shape {q.shape[1:]}, the target {p.shape[1:]}"
                )
            overlap = overlap_rows(p, q, eos, rule)
            for row, at in enumerate(index[start : start + len(p)]):
                out[at] = overlap[row, list(positions[at])]
    return out


def acceptance_row(
    case: str,
    runs: Sequence[Emission],
    prompts: Sequence[tuple[int, ...]],
    target_probs: Callable[[torch.Tensor], torch.Tensor],
    draft_probs: Callable[[torch.Tensor], torch.Tensor],
    vocab: int,
    eos: frozenset[int],
    settings: Settings,
    rule: str = REJECTION,
) -> CaseResult:
    """The acceptance row of ``runs`` (each with its rounds) at the audit's alpha, against
    the acceptance ``rule`` the engine verifies by."""
    traced = [(index, proposals_of(run)) for index, run in enumerate(runs)]
    for index, found in traced:
        if isinstance(found, str):
            summary = f"run {index}: {found}"
            return exact_row(case, CHECK, len(runs), "FAIL", summary)
    positions = [found[0] for _, found in traced if not isinstance(found, str)]
    outcomes = [found[1] for _, found in traced if not isinstance(found, str)]
    probabilities = acceptance_probabilities(
        target_probs, draft_probs, prompts, runs, positions, vocab, eos, rule
    )
    a = np.concatenate(probabilities) if probabilities else np.zeros(0)
    accepted = sum(sum(o) for o in outcomes)
    if not len(a):
        return exact_row(case, CHECK, len(runs), WARN, "no draft was proposed: nothing to test")
    test = acceptance_test(accepted, a, settings.rates.alpha, SHIFT)
    return test_row(case, test, settings, len(runs), rule)


def test_row(
    case: str, test: AcceptanceTest, settings: Settings, runs: int, rule: str = REJECTION
) -> CaseResult:
    """A statistical row: the rate gap as its estimate, the gap the test rejects at as its
    bound, the power against :data:`SHIFT` (short of 1 - beta, the report is inconclusive)."""
    rates = settings.rates
    gap = abs(test.observed_rate - test.expected_rate)
    edge = max(test.expected - test.low, test.high - test.expected) / test.proposed
    verdict = "FAIL" if test.rejected else "pass"
    summary = (
        f"{test.accepted} of {test.proposed} drafts accepted, expected {test.expected:.1f}"
        f"{' (sample-and-match)' if rule == MATCH else ''} "
        f"(rate {test.observed_rate:.4f} vs {test.expected_rate:.4f}; rejects at <= {test.low} "
        f"or >= {test.high}){' ' + test.direction if test.rejected else ''} "
        f"(power {test.power:.4f} at a shift of {test.shift:g})"
    )
    return CaseResult(
        case=case,
        check=CHECK,
        n=test.proposed,
        tv_estimate=gap,
        bound=edge,
        alpha=rates.alpha,
        beta=rates.beta,
        delta=test.shift,
        verdict=verdict,
        detail=f"{case}/{CHECK} over {runs} runs: {test.describe()}",
        summary=summary,
        power=test.power,
    )
