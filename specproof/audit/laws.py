"""Exact laws of one audited round, from the reference decoder (``specproof.reference``).

A table problem becomes a reference ``TargetModel`` and ``Drafter`` over Fractions (the float32
rows the verifier is given, converted exactly and renormalised exactly). The law of a round with
draft length l and row kind g (random: ``ChainRule``; greedy: ``GreedyRule``) is the reference's
``round_law``; the audit's outcome is (l, g, emitted tokens...), mixed uniformly over the
problem's lengths and kinds. Nothing here runs the code under audit.

Large vocabularies are binned: :func:`binned_round_law` pushes the chain rule's round law
through the token bins by a forward pass over (bin, state) masses in float64, using the closed
form of one round (accepted x_1..x_{j} then a residual token z at j + 1, or the bonus):

    P = prod_i min(p_i, q_i)(x_i) * max(p_{j+1} - q_{j+1}, 0)(z)     (rejection at j + 1)
    P = prod_i min(p_i, q_i)(x_i) * p_{l+1}(z)                        (all l accepted)

``tests/audit`` checks it against the reference on small tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

import numpy as np

from specproof.reference import (
    ChainRule,
    Drafter,
    FixedGamma,
    GreedyRule,
    SpeculativeDecoder,
    TargetModel,
    Tokens,
    VerificationRule,
    round_law,
)

from .problems import Outcome, TableProblem, exact_output_law, token_classes

Law = dict[Outcome, float]
RuleFor = Callable[[bool], VerificationRule]
"""Row kind (greedy?) -> the reference rule whose law that row must follow."""

EXACT_VOCAB = 64
"""Up to this vocabulary the round law is enumerated by the reference in Fractions."""
MAX_LAW_PATHS = 10**6
"""The most token paths an exact law may enumerate; a case that needs more is refused before
any work, with its size stated."""


def binned_targets(problem: TableProblem) -> bool:
    """Whether the target's law of the completed tokens is computed over hash bins (a forward
    pass over (bin, state) masses) rather than enumerated token by token."""
    return problem.token_bins is not None and not any(problem.greedy_modes)


def law_paths(problem: TableProblem) -> int:
    """The token paths the exact laws of ``problem`` enumerate: the round law (per draft
    length and row kind) and the law of the completed tokens."""
    if problem.vocab > EXACT_VOCAB or problem.positions:
        _, classes = token_classes(problem)
        rounds = classes ** (max(problem.draft_lengths) + 1) * problem.states
    else:
        modes = len(problem.greedy_modes)
        rounds = sum(problem.vocab ** (length + 1) for length in problem.draft_lengths) * modes
    if binned_targets(problem) or problem.vocab > EXACT_VOCAB:
        _, classes = token_classes(problem)
        tokens = classes**problem.num_tokens * problem.states
    else:
        tokens = problem.vocab**problem.num_tokens * len(problem.greedy_modes)
    return max(rounds, tokens)


def check_enumerable(problem: TableProblem) -> None:
    """ValueError, before any work, when the exact laws would enumerate too many paths."""
    paths = law_paths(problem)
    if paths > MAX_LAW_PATHS:
        raise ValueError(
            f"case {problem.name}: its exact laws would enumerate {paths:,} token paths "
            f"(V = {problem.vocab}, {problem.num_tokens} tokens: up to {problem.vocab}^"
            f"{problem.num_tokens}), more than {MAX_LAW_PATHS:,}; bin its tokens or shorten it"
        )


def default_rule(greedy: bool) -> VerificationRule:
    return GreedyRule() if greedy else ChainRule()


def fraction_rows(rows: np.ndarray) -> list[list[tuple[Fraction, ...]]]:
    """Exact, exactly renormalised Fractions of float32 rows ``[positions, states, V]``."""
    out = []
    for position in rows:
        per_state = []
        for row in position:
            values = [Fraction(float(v)) for v in row]
            total = sum(values, Fraction(0))
            per_state.append(tuple(v / total for v in values))
        out.append(per_state)
    return out


def reference_models(problem: TableProblem) -> tuple[TargetModel, Drafter, Tokens]:
    """The problem as reference models; the prompt is the single token ``prompt_state``, so the
    output position is len(context) - 1 and a token's state is token % states."""
    p = fraction_rows(problem.target32.numpy())
    q = fraction_rows(problem.draft32.numpy())
    states = problem.states

    def next_token(context: Tokens) -> tuple[Fraction, ...]:
        return p[len(context) - 1][context[-1] % states]

    def proposal(context: Tokens, drafted: Tokens) -> tuple[Fraction, ...]:
        last = drafted[-1] if drafted else context[-1]
        return q[len(drafted)][last % states]

    target = TargetModel(problem.vocab, next_token, order=None, name=problem.name)
    drafter = Drafter(problem.vocab, proposal, lambda c, d: Fraction(1), order=None)
    return target, drafter, (problem.prompt_state,)


def exact_round_law(problem: TableProblem, rule_for: RuleFor = default_rule) -> Law:
    """The exact law of the audit's round outcome, (l, g, emitted token classes...)."""
    if problem.vocab > EXACT_VOCAB or problem.positions:
        if rule_for is not default_rule or any(problem.greedy_modes):
            raise ValueError(f"{problem.name}: binned laws cover random rows of the chain rule")
        return binned_round_law(problem)
    target, drafter, prompt = reference_models(problem)
    classes, _ = token_classes(problem)
    weight = Fraction(1, len(problem.draft_lengths) * len(problem.greedy_modes))
    exact: dict[Outcome, Fraction] = {}
    for length in problem.draft_lengths:
        for greedy in problem.greedy_modes:
            decoder = SpeculativeDecoder(
                target, drafter, rule_for(greedy), FixedGamma(), gamma=length
            )
            for (emitted,), mass in round_law(decoder, [prompt]).items():
                key = (length, int(greedy), *(int(classes[t]) for t in emitted))
                exact[key] = exact.get(key, Fraction(0)) + weight * mass
    return {k: float(v) for k, v in exact.items() if v > 0}


def binned_round_law(problem: TableProblem) -> Law:
    """The chain rule's round law of random rows with tokens mapped to classes, in float64."""
    p, q = problem.p64(), problem.q64()
    classes, count = token_classes(problem)
    onehot_class = np.eye(count)[classes]  # [V, classes]
    onehot_state = np.eye(problem.states)[np.arange(problem.vocab) % problem.states]  # [V, states]
    # Per (position, state), over classes: the bonus p, the residual max(p - q, 0), and the
    # accepted mass min(p, q) split by the next state. No path depends on V after this.
    bonus = p @ onehot_class  # [gamma + 1, states, classes]
    residual = np.maximum(p[:-1] - q, 0.0) @ onehot_class
    accepted = np.einsum("ksv,vc,vt->ksct", np.minimum(p[:-1], q), onehot_class, onehot_state)
    law: Law = {}
    weight = 1.0 / len(problem.draft_lengths)
    # paths: (classes so far, state) -> mass, all drafts so far accepted
    paths: dict[tuple[tuple[int, ...], int], float] = {((), problem.prompt_state): 1.0}
    for k in range(max(problem.draft_lengths) + 1):
        for length in problem.draft_lengths:
            if length < k:
                continue
            final = bonus[k] if k == length else residual[k]
            for (prefix, s), mass in paths.items():
                for c in np.nonzero(final[s] > 0)[0].tolist():
                    key = (length, 0, *prefix, c)
                    law[key] = law.get(key, 0.0) + weight * mass * float(final[s, c])
        if k == max(problem.draft_lengths):
            break
        step: dict[tuple[tuple[int, ...], int], float] = {}
        for (prefix, s), mass in paths.items():
            moves = accepted[k, s]
            for c, s2 in zip(*np.nonzero(moves), strict=True):
                key2 = ((*prefix, int(c)), int(s2))
                step[key2] = step.get(key2, 0.0) + mass * float(moves[c, s2])
        paths = step
    return law


def position_law(
    law: Mapping[Outcome, float], positions: int
) -> dict[int, dict[tuple[int, int, int], float]]:
    """For each output position j = 1..``positions`` (gamma + 1), the law of (draft length,
    tokens emitted, class of the token at j, or -1 when fewer were emitted): a function of the
    round outcome, so its TV from the correct law is at most the round's. Works on counts."""
    out: dict[int, dict[tuple[int, int, int], float]] = {}
    for j in range(1, positions + 1):
        rows: dict[tuple[int, int, int], float] = {}
        for (length, _, *tokens), mass in law.items():
            key = (length, len(tokens), tokens[j - 1] if len(tokens) >= j else -1)
            rows[key] = rows.get(key, 0) + mass
        out[j] = rows
    return out


def length_law(law: Law) -> dict[int, float]:
    """Marginal law of the number of tokens a round emits."""
    out: dict[int, float] = {}
    for key, mass in law.items():
        out[len(key) - 2] = out.get(len(key) - 2, 0.0) + mass
    return out


def lengths_of(counts: dict[Outcome, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for key, count in counts.items():
        out[len(key) - 2] = out.get(len(key) - 2, 0) + count
    return out


def tokens_law(problem: TableProblem) -> dict[tuple[int, ...], float]:
    """The target's exact law of the classes of the first ``tokens`` output tokens (what a
    lossless round completed from the target must follow), from the reference; greedy rows
    follow the argmax target (``TargetModel.greedy``)."""
    from specproof.reference import target_law

    if problem.vocab > EXACT_VOCAB or binned_targets(problem):
        return exact_output_law(problem)
    target, _, prompt = reference_models(problem)
    classes, _ = token_classes(problem)
    out: dict[tuple[int, ...], float] = {}
    for greedy in problem.greedy_modes:
        law = target_law(target.greedy() if greedy else target, [prompt], problem.num_tokens)
        for (tokens,), mass in law.items():
            key = tuple(int(classes[t]) for t in tokens)
            out[key] = out.get(key, 0.0) + float(mass) / len(problem.greedy_modes)
    return out


def completed_law(problem: TableProblem, law: Law) -> dict[tuple[int, ...], float]:
    """The law of the first ``tokens`` output tokens when each round outcome of ``law`` is
    continued from the target (argmax for greedy rows); token ids, small vocabularies only."""
    p = problem.p64()
    out: dict[tuple[int, ...], float] = {}
    size = problem.num_tokens

    def walk(tokens: tuple[int, ...], mass: float, greedy: bool) -> None:
        if len(tokens) >= size:
            out[tokens[:size]] = out.get(tokens[:size], 0.0) + mass
            return
        state = tokens[-1] % problem.states if tokens else problem.prompt_state
        row = p[len(tokens), state]
        if greedy:
            walk((*tokens, int(row.argmax())), mass, greedy)
            return
        for token, m in enumerate(row):
            if m > 0:
                walk((*tokens, token), mass * float(m), greedy)

    for (_, greedy, *emitted), mass in law.items():
        walk(tuple(emitted), mass, bool(greedy))
    return out
