"""The catalogue: each mutant is one plausible bug of the chain verifier in ``verifier.py``
(vLLM signature) or of a drafter, with the public bug class it reproduces where there is one."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Mutant:
    bug: str
    description: str
    origin: str = ""
    drafter: bool = False
    """A drafting bug: audited with ``--drafter`` behind the correct verifier."""


MUTANTS: tuple[Mutant, ...] = (
    Mutant("bonus-wrong-row", "bonus token drawn from the last draft's target row, not the next"),
    Mutant("residual-from-p", "correction token drawn from p instead of norm(max(p - q, 0))"),
    Mutant("residual-abs", "correction token drawn from norm(|p - q|)"),
    Mutant(
        "residual-softmax-clamp",
        "correction token drawn from softmax(max(p - q, 0))",
        "HF transformers PR 28508",
    ),
    Mutant("residual-unnormalised", "max(p - q, 0) sampled without renormalisation"),
    Mutant("residual-wrong-position", "correction from the residual one position later"),
    Mutant("residual-reuses-uniform", "correction drawn with the rejected test's uniform"),
    Mutant("ratio-swapped", "accept with probability min(1, q/p)"),
    Mutant("threshold-eps", "accept when u < p/q + 0.02"),
    Mutant("threshold-tiny-eps", "accept when u < p/q + 1e-6"),
    Mutant("no-uniform", "accept exactly when q(x) <= p(x)"),
    Mutant(
        "uniform-float32-le",
        "float32 uniform and u q <= p: an exact 0.0 accepts a draft with p = 0",
        "vLLM PR 23803",
    ),
    Mutant("uniform-bf16", "acceptance uniform rounded to bfloat16 (can round to 1.0)"),
    Mutant("q-bf16", "q rounded to bfloat16 inside the verifier"),
    Mutant("q-top-k", "q renormalised over its top 2 tokens inside the verifier"),
    Mutant("p-tempered", "temperature 1/2 applied to the target side only"),
    Mutant("shared-uniform", "one uniform per request for every position"),
    Mutant("independent-acceptance", "accepted count = number of accepted positions, not a prefix"),
    Mutant("last-draft-skipped", "ragged length off by one: the last draft is never verified"),
    Mutant("greedy-as-random", "greedy rows verified by rejection sampling (temperature ignored)"),
    Mutant("greedy-tie-last", "greedy argmax ties broken to the highest id"),
    Mutant("ngram-q-uniform", "draft_probs=None read as a uniform q instead of one-hot"),
    Mutant("zero-length-dropped", "rows with zero drafts emit nothing"),
    Mutant("drop-correction", "no correction token after a rejection"),
    Mutant("padding-zero", "unused positions padded with token 0 instead of -1"),
    Mutant("pq-fallback-draft", "an empty residual (p == q) emits the rejected draft"),
    Mutant("residual-by-acceptance", "residual normalised by 1 - sum min(p, q), not its sum"),
    Mutant(
        "draft-greedy-report-softmax",
        "drafter takes the argmax while reporting the softmax as q",
        "HF transformers issue 32867",
        drafter=True,
    ),
    Mutant(
        "draft-top-k-report-raw",
        "drafter samples top-2 while reporting the raw softmax",
        drafter=True,
    ),
)

SAMPLE = ("bonus-wrong-row", "residual-softmax-clamp", "pq-fallback-draft")
"""The mutants the default test session runs (one per kind of verdict)."""


def by_name(bug: str) -> Mutant:
    for mutant in MUTANTS:
        if mutant.bug == bug:
            return mutant
    raise KeyError(bug)


# Drafters ---------------------------------------------------------------------------------


def make_drafter(bug: str | None):  # type: ignore[no-untyped-def]
    """The audit's drafter signature: draft(logits [B, V], temperature) -> (tokens, probs)."""

    def draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
        probs = torch.softmax(logits.double() / temperature, -1)
        drawn = probs
        if bug == "draft-greedy-report-softmax":
            return probs.argmax(-1), probs.float()
        if bug == "draft-top-k-report-raw":
            values, index = probs.topk(2, dim=-1)
            drawn = torch.zeros_like(probs).scatter_(-1, index, values)
        tokens = torch.multinomial(drawn, 1).squeeze(1)
        return tokens, probs.float()

    draft.__name__ = "draft" if bug is None else f"mutant_{bug}"
    return draft
