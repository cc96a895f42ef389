"""Hypothesis strategies for exact tabular decoding problems."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from hypothesis import strategies as st
from specproof.reference import Drafter, SpeculativeDecoder, TargetModel, Tokens
from specproof.reference.models import all_contexts, draft_keys
from specproof.reference.rules import VerificationRule
from specproof.reference.schedulers import SPS, BlockScheduler, ScheduleFn


@st.composite
def distributions(draw: st.DrawFn, vocab_size: int) -> tuple[Fraction, ...]:
    """Small-denominator distributions; zeros and one-hot rows come up often."""
    shape = draw(st.sampled_from(["weights", "one-hot", "uniform"]))
    if shape == "one-hot":
        hot = draw(st.integers(0, vocab_size - 1))
        return tuple(Fraction(int(v == hot)) for v in range(vocab_size))
    if shape == "uniform":
        return tuple(Fraction(1, vocab_size) for _ in range(vocab_size))
    weights = draw(
        st.lists(st.integers(0, 5), min_size=vocab_size, max_size=vocab_size).filter(any)
    )
    return tuple(Fraction(w, sum(weights)) for w in weights)


probabilities = st.sampled_from([Fraction(n, 4) for n in range(5)] + [Fraction(9, 10)])


@dataclass(frozen=True)
class Problem:
    target: TargetModel
    drafter: Drafter
    gamma: int
    sps_values: tuple[Fraction, ...]
    prompts: tuple[Tokens, ...]
    num_tokens: int
    draft_equals_target: bool

    def sps(self, batch: int) -> Fraction:
        return self.sps_values[batch - 1]

    def decoder(
        self, rule: VerificationRule, scheduler: BlockScheduler | ScheduleFn
    ) -> SpeculativeDecoder:
        sps: SPS = self.sps
        return SpeculativeDecoder(self.target, self.drafter, rule, scheduler, self.gamma, sps)

    def __repr__(self) -> str:
        v = self.target.vocab_size
        return (
            f"Problem(V={v}, gamma={self.gamma}, N={self.num_tokens}, prompts={self.prompts}, "
            f"q==p={self.draft_equals_target}, sps={[str(s) for s in self.sps_values]})"
        )


@st.composite
def problems(
    draw: st.DrawFn,
    max_vocab: int = 4,
    max_gamma: int = 3,
    max_tokens: int = 3,
    max_requests: int = 2,
    max_work: int = 64,
) -> Problem:
    """A target, a semi-autoregressive drafter whose confidences depend on x_{k-1}, prompts
    and a (possibly jagged) SPS curve. ``max_work`` bounds V**gamma * R**2 to keep exact laws
    fast."""
    requests = draw(st.integers(1, max_requests))
    vocab = draw(st.integers(2, max_vocab))
    gamma = draw(st.integers(1, max_gamma))
    while gamma > 1 and vocab**gamma * requests**2 > max_work:
        gamma -= 1
    num_tokens = draw(st.integers(1, max_tokens if requests == 1 else min(max_tokens, 2)))
    order = draw(st.integers(0, 1))
    contexts = all_contexts(vocab, order)
    table = {ctx: draw(distributions(vocab)) for ctx in contexts}
    target = TargetModel.from_table(vocab, order, table)
    keys = draft_keys(vocab, order, gamma)
    confidences = {key: draw(probabilities) for key in keys}
    equal = draw(st.booleans())
    if equal:
        drafter = Drafter(
            vocab,
            lambda ctx, drafted: target.dist(ctx + drafted),
            lambda ctx, drafted: confidences[
                (ctx, len(drafted) + 1, drafted[-1] if drafted else None)
            ],
            order=order,
        )
    else:
        proposals = {key: draw(distributions(vocab)) for key in keys}
        drafter = Drafter.from_tables(vocab, order, gamma, proposals, confidences)
    sps_values = tuple(
        draw(
            st.lists(
                st.sampled_from([Fraction(n, 20) for n in range(1, 21)]),
                min_size=requests * (gamma + 1),
                max_size=requests * (gamma + 1),
            )
        )
    )
    prompts = tuple(
        tuple(draw(st.lists(st.integers(0, vocab - 1), min_size=order, max_size=order)))
        for _ in range(requests)
    )
    return Problem(target, drafter, gamma, sps_values, prompts, num_tokens, equal)
