"""Public entry points: exact output laws, samples, and the exact quantities derived from them."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

from .choices import Chooser, Law, SeededSource, UniformSource, law_of
from .decoder import Outputs, SpeculativeDecoder, decode, initial_state, one_round
from .distributions import Tokens
from .interpreters import Exact, Sampler
from .models import TargetModel

K = TypeVar("K", bound=Hashable)


def exact_law(
    dec: SpeculativeDecoder, prompts: Sequence[Sequence[int]], num_tokens: int
) -> Law[Outputs]:
    """The exact joint law of the first ``num_tokens`` tokens emitted for every request."""
    checked = dec.check_prompts(prompts, num_tokens)
    law: Law[Outputs] = decode(Exact(), dec, initial_state(dec, checked, num_tokens))
    return law


def sample(
    dec: SpeculativeDecoder,
    prompts: Sequence[Sequence[int]],
    num_tokens: int,
    source: UniformSource | int = 0,
) -> Outputs:
    """One run of the decoder; ``source`` is a seed or a :class:`UniformSource` (e.g. Philox)."""
    checked = dec.check_prompts(prompts, num_tokens)
    uniforms = uniform_source(source)
    outputs: Outputs = decode(Sampler(uniforms), dec, initial_state(dec, checked, num_tokens))
    return outputs


def uniform_source(source: UniformSource | int) -> UniformSource:
    """A seed becomes Python's seeded generator; anything else must have ``uniform``."""
    if isinstance(source, int) and not isinstance(source, bool):
        return SeededSource(source)
    if isinstance(source, bool) or not callable(getattr(source, "uniform", None)):
        raise ValueError(
            f"source must be an int seed or a UniformSource (an object with .uniform(address)), "
            f"got {type(source).__name__} {source!r}"
        )
    return source


def target_law(
    target: TargetModel, prompts: Sequence[Sequence[int]], num_tokens: int
) -> Law[Outputs]:
    """The law of sampling ``num_tokens`` tokens from the target alone, independently per prompt."""

    def run(chooser: Chooser) -> Outputs:
        outputs = []
        for prompt in prompts:
            emitted: list[int] = []
            for i in range(num_tokens):
                emitted.append(
                    chooser.categorical(target.dist(tuple(prompt) + tuple(emitted)), "target", i)
                )
            outputs.append(tuple(emitted))
        return tuple(outputs)

    return law_of(run)


def reference_law(
    dec: SpeculativeDecoder, prompts: Sequence[Sequence[int]], num_tokens: int
) -> Law[Outputs]:
    """The law ``dec`` must reproduce: its rule's target (the argmax one for greedy)."""
    dec.check_prompts(prompts, num_tokens)
    return target_law(dec.rule.law_target(dec.target), prompts, num_tokens)


def tv_distance(first: Mapping[K, Fraction], second: Mapping[K, Fraction]) -> Fraction:
    """Exact total-variation distance between two laws."""
    support = set(first) | set(second)
    total = sum(
        (abs(first.get(x, Fraction(0)) - second.get(x, Fraction(0))) for x in support), Fraction(0)
    )
    return total / 2


def distance_from_target(
    dec: SpeculativeDecoder, prompts: Sequence[Sequence[int]], num_tokens: int
) -> Fraction:
    return tv_distance(exact_law(dec, prompts, num_tokens), reference_law(dec, prompts, num_tokens))


def round_law(dec: SpeculativeDecoder, prompts: Sequence[Sequence[int]]) -> Law[Outputs]:
    """The exact law of the tokens each request emits in the first round (untruncated)."""
    big = dec.gamma + 1
    checked = dec.check_prompts(prompts, big)
    law: Law[Outputs] = {}
    for (emitted, _), weight in one_round(
        Exact(), dec, initial_state(dec, checked, big), 0
    ).items():
        law[emitted] = law.get(emitted, Fraction(0)) + weight
    return law


def sample_round(
    dec: SpeculativeDecoder, prompts: Sequence[Sequence[int]], source: UniformSource | int = 0
) -> Outputs:
    """The tokens each request emits in one sampled first round (untruncated)."""
    big = dec.gamma + 1
    checked = dec.check_prompts(prompts, big)
    uniforms = uniform_source(source)
    emitted, _ = one_round(Sampler(uniforms), dec, initial_state(dec, checked, big), 0)
    outputs: Outputs = emitted
    return outputs


def expected_tokens_per_round(dec: SpeculativeDecoder, prompt: Sequence[int]) -> Fraction:
    """E[tokens emitted in one round] for a single request: accepted drafts + 1."""
    law = round_law(dec, [prompt])
    return sum((len(out[0]) * w for out, w in law.items()), Fraction(0))


def acceptance_probabilities(dec: SpeculativeDecoder, prompt: Sequence[int]) -> list[Fraction]:
    """P(at least k drafted tokens accepted) for k = 1..gamma, in one round of one request."""
    law = round_law(dec, [prompt])
    return [
        sum((w for out, w in law.items() if len(out[0]) - 1 >= k), Fraction(0))
        for k in range(1, dec.gamma + 1)
    ]


def conditional_acceptance(dec: SpeculativeDecoder, prompt: Sequence[int]) -> list[Fraction | None]:
    """P(position k accepted | positions < k accepted); None where the condition has mass 0."""
    reached = [Fraction(1), *acceptance_probabilities(dec, prompt)]
    return [reached[k] / reached[k - 1] if reached[k - 1] else None for k in range(1, len(reached))]


def total_mass(law: Mapping[Hashable, Fraction]) -> Fraction:
    return sum(law.values(), Fraction(0))


def marginal(law: Mapping[Outputs, Fraction], request: int) -> dict[Tokens, Fraction]:
    out: dict[Tokens, Fraction] = {}
    for outputs, w in law.items():
        out[outputs[request]] = out.get(outputs[request], Fraction(0)) + w
    return out
