"""Built-in cases: the paper's Appendix A counterexample and the default models of the matrix."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from .decoder import SpeculativeDecoder
from .distributions import Tokens
from .generators import random_drafter, random_target
from .models import Drafter, TargetModel
from .rules import ChainRule, VerificationRule
from .schedulers import SPS, BlockScheduler, ScheduleFn

TOKEN_A, TOKEN_B = 0, 1


def table_sps(table: dict[int, Fraction], tail: Fraction | None = None) -> SPS:
    """Steps per second from a table of batch sizes; ``tail`` for larger batches."""

    def sps(batch: int) -> Fraction:
        if batch in table:
            return table[batch]
        if tail is None:
            raise ValueError(f"SPS is not profiled at batch size {batch}")
        return tail

    return sps


@dataclass(frozen=True)
class Case:
    """Models, prompts and an SPS curve: everything but the rule and the scheduler."""

    name: str
    target: TargetModel
    drafter: Drafter
    gamma: int
    sps: SPS
    prompts: tuple[Tokens, ...]
    num_tokens: int

    def decoder(
        self, scheduler: BlockScheduler | ScheduleFn, rule: VerificationRule | None = None
    ) -> SpeculativeDecoder:
        return SpeculativeDecoder(
            self.target, self.drafter, rule or ChainRule(), scheduler, self.gamma, self.sps
        )


def appendix_a() -> Case:
    """DSpark Appendix A: R = 1, gamma = 2, p = (0.7, 0.3), q = (0.5, 0.5), a_1 = 0.8,
    c_2 = 0.9 after A and 0 after B; SPS(1, 2, 3) = (1, 0.5, 0.45)."""
    half = (Fraction(1, 2), Fraction(1, 2))
    target = TargetModel(2, lambda ctx: (Fraction(7, 10), Fraction(3, 10)), order=0, name="p")

    def confidence(context: Tokens, drafted: Tokens) -> Fraction:
        if not drafted:
            return Fraction(4, 5)
        return Fraction(9, 10) if drafted[-1] == TOKEN_A else Fraction(0)

    drafter = Drafter(2, lambda ctx, drafted: half, confidence, order=0, name="q")
    sps = table_sps({1: Fraction(1), 2: Fraction(1, 2), 3: Fraction(9, 20)})
    return Case("appendix-a", target, drafter, 2, sps, ((),), 1)


def default_case() -> Case:
    """Two requests over a 3-token vocabulary, bigram target and drafter tables (seeded, exact),
    gamma = 3, the first 3 tokens of each request, and a jagged SPS curve."""
    rng = random.Random(3)
    target = random_target(rng, 3, 1, denominator=10)
    drafter = random_drafter(rng, 3, 1, 3, denominator=10)
    sps = table_sps(
        {
            1: Fraction(1),
            2: Fraction(1),
            3: Fraction(3, 5),
            4: Fraction(11, 20),
            5: Fraction(1, 2),
            6: Fraction(9, 20),
            7: Fraction(2, 5),
        },
        tail=Fraction(1, 3),
    )
    return Case("default", target, drafter, 3, sps, ((0,), (2,)), 3)
