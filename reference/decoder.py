"""The speculative decoding loop, written once and read two ways (sample / exact law).

One round: every active request drafts a block; the scheduler picks l_r from all the blocks;
each request verifies its first l_r drafted tokens and emits at least one token. Requests leave
the batch once they have emitted ``num_tokens`` tokens.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .blocks import DraftBlock
from .choices import Chooser
from .distributions import Tokens
from .interpreters import Interpreter, Random
from .models import Drafter, TargetModel
from .rules import VerificationRule
from .schedulers import SPS, BlockScheduler, ScheduleFn, as_block_scheduler, check_lengths

Outputs = tuple[Tokens, ...]
"""The first ``num_tokens`` tokens emitted for each request, in request order."""


@dataclass
class SpeculativeDecoder:
    target: TargetModel
    drafter: Drafter
    rule: VerificationRule
    scheduler: BlockScheduler | ScheduleFn
    gamma: int
    sps: SPS | None = None
    block_scheduler: BlockScheduler = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.gamma, int) or self.gamma < 0:
            raise ValueError(f"gamma must be an integer >= 0, got {self.gamma!r}")
        if self.target.vocab_size != self.drafter.vocab_size:
            raise ValueError(
                f"vocabulary mismatch: target has {self.target.vocab_size} tokens, "
                f"drafter has {self.drafter.vocab_size}"
            )
        self.block_scheduler = as_block_scheduler(self.scheduler)

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    def context_key(self, context: Tokens) -> Tokens:
        """The part of a context that the models read."""
        orders = (self.target.order, self.drafter.order)
        if None in orders:
            return context
        order = max(o for o in orders if o is not None)
        return context[len(context) - order :] if order else ()

    def check_prompts(self, prompts: Sequence[Sequence[int]], num_tokens: int) -> list[Tokens]:
        if not isinstance(num_tokens, int) or num_tokens < 0:
            raise ValueError(f"num_tokens must be an integer >= 0, got {num_tokens!r}")
        if len(prompts) == 0:
            raise ValueError("at least one prompt is needed")
        checked = []
        for r, prompt in enumerate(prompts):
            given = tuple(prompt)
            # numpy and other integer types count as ints; bools and floats do not.
            bad = [
                t
                for t in given
                if isinstance(t, bool)
                or not isinstance(t, numbers.Integral)
                or not 0 <= t < self.vocab_size
            ]
            if bad:
                raise ValueError(
                    f"prompt {r}: token ids {bad} are outside 0..{self.vocab_size - 1}"
                )
            tokens = tuple(int(t) for t in given)
            for model in (self.target, self.drafter):
                if model.order is not None and len(tokens) < model.order:
                    raise ValueError(
                        f"prompt {r} has {len(tokens)} tokens; {model.name} reads {model.order}"
                    )
            checked.append(tokens)
        return checked


@dataclass(frozen=True)
class _State:
    contexts: tuple[Tokens, ...]
    remaining: tuple[int, ...]
    scheduler_state: Hashable


def decode(interp: Interpreter, dec: SpeculativeDecoder, state: _State, round: int = 0) -> Random:
    """The random tuple of tokens each request still emits (at most ``remaining`` each)."""
    if all(left <= 0 for left in state.remaining):
        return interp.pure(tuple(() for _ in state.remaining))
    key = (
        "decode",
        tuple(
            dec.context_key(c) if left > 0 else None
            for c, left in zip(state.contexts, state.remaining, strict=True)
        ),
        state.remaining,
        state.scheduler_state,
    )

    def continue_after(round_result: tuple[Outputs, Hashable]) -> Random:
        emitted, scheduler_state = round_result
        after = _State(
            tuple(c + e for c, e in zip(state.contexts, emitted, strict=True)),
            tuple(left - len(e) for left, e in zip(state.remaining, emitted, strict=True)),
            scheduler_state,
        )

        def prepend(rest: Outputs) -> Outputs:
            return tuple(e + tail for e, tail in zip(emitted, rest, strict=True))

        return interp.bind(
            decode(interp, dec, after, round + 1), lambda rest: interp.pure(prepend(rest))
        )

    return interp.memo(
        key, lambda: interp.bind(one_round(interp, dec, state, round), continue_after)
    )


def one_round(interp: Interpreter, dec: SpeculativeDecoder, state: _State, round: int) -> Random:
    """The random (tokens emitted per request, next scheduler state) of one round."""
    active = [r for r, left in enumerate(state.remaining) if left > 0]

    def draft(r: int) -> Random:
        context = state.contexts[r]
        program = partial(dec.rule.draft, context, dec.drafter, dec.gamma)
        return interp.memo(
            ("draft", dec.context_key(context)), lambda: interp.run(program, round, r)
        )

    def verify(r: int, block: DraftBlock) -> Random:
        context = state.contexts[r]

        def program(chooser: Chooser) -> Tokens:
            emitted = dec.rule.verify(context, block, dec.target, dec.drafter, chooser)
            return emitted[: state.remaining[r]]

        key = ("verify", dec.context_key(context), block, state.remaining[r])
        return interp.memo(key, lambda: interp.run(program, round, r))

    def schedule(blocks: tuple[DraftBlock, ...]) -> Random:
        lengths, next_state = dec.block_scheduler.schedule_blocks(
            blocks, dec.sps, state.scheduler_state
        )
        lengths = check_lengths(lengths, blocks, dec.block_scheduler.name)
        admitted = tuple(b.truncated(n) for b, n in zip(blocks, lengths, strict=True))
        return interp.pure((_without_confidences(admitted), next_state))

    def verify_all(scheduled: tuple[tuple[DraftBlock, ...], Hashable]) -> Random:
        admitted, next_state = scheduled
        verified = interp.product([verify(r, b) for r, b in zip(active, admitted, strict=True)])
        return interp.bind(
            verified,
            lambda emitted: interp.pure(
                (_spread(emitted, active, len(state.remaining)), next_state)
            ),
        )

    blocks = interp.product([draft(r) for r in active])
    return interp.bind(interp.bind(blocks, schedule), verify_all)


def _without_confidences(blocks: tuple[DraftBlock, ...]) -> tuple[DraftBlock, ...]:
    """Verification never reads confidences; dropping them merges equal verifier inputs."""
    return tuple(DraftBlock(b.tokens, b.proposals, ()) for b in blocks)


def _spread(emitted: tuple[Any, ...], active: list[int], requests: int) -> Outputs:
    out: list[Tokens] = [()] * requests
    for r, tokens in zip(active, emitted, strict=True):
        out[r] = tokens
    return tuple(out)


def initial_state(dec: SpeculativeDecoder, prompts: list[Tokens], num_tokens: int) -> _State:
    return _State(
        tuple(prompts), tuple(num_tokens for _ in prompts), dec.block_scheduler.initial_state()
    )
