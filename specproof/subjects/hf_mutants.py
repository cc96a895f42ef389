"""Glue bugs injected into the installed transformers' assisted generation, one per function.

Each returns (target, assistant, generate kwargs) like :mod:`.tiny`, with the bug patched into
the target instance (its candidate generator factory or its ``generate``), never into
transformers itself: the rest of the process keeps the correct engine. Every one is lossy by
construction; ``specproof audit-engine --hf`` must fail each by default. The planted verifiers
of :data:`ACCEPTANCE_MUTANTS` accept too often or too rarely, for the acceptance row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from specproof.subjects.tiny import HFSetup, assisted

Patch = Callable[[Any], None]


def _patch_candidates(target: Any, patch: Patch) -> None:
    """Apply ``patch`` to every candidate generator the target builds."""
    build = target._get_candidate_generator

    def patched(*args: Any, **kwargs: Any) -> Any:
        generator = build(*args, **kwargs)
        patch(generator)
        return generator

    target._get_candidate_generator = patched


def _patch_generate(target: Any, context: Callable[[], Any]) -> None:
    """Run the target's ``generate`` inside ``context()``."""
    generate = target.generate

    @functools.wraps(generate)
    def patched(*args: Any, **kwargs: Any) -> Any:
        with context():
            return generate(*args, **kwargs)

    target.generate = patched


def q_from_raw_logits() -> HFSetup:
    """The assistant samples from its processed logits but reports its raw logits as q (the
    class of transformers issue 47932), at top-k 2."""
    target, assistant, kwargs = assisted(do_sample=True, top_k=2)

    def patch(generator: Any) -> None:
        generator.generation_config.output_logits = True

        def candidates(generation_args: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
            out = generator.assistant_model.generate(
                **generation_args, **generator.assistant_kwargs
            )
            generator.assistant_kwargs["cache"] = out.cache
            return out.sequences, torch.stack(out.logits, dim=1)

        generator._generate_candidates = candidates

    _patch_candidates(target, patch)
    return target, assistant, kwargs


def greedy_assistant_softmax_q() -> HFSetup:
    """The assistant decodes greedily while its softmax is reported as q (transformers 4.41 to
    4.44, issue 32867)."""
    target, assistant, kwargs = assisted(do_sample=True)

    def patch(generator: Any) -> None:
        generator.generation_config.do_sample = False

    _patch_candidates(target, patch)
    return target, assistant, kwargs


def _correction_from_p(
    candidate_input_ids: torch.Tensor,
    candidate_logits: torch.Tensor,
    candidate_length: int,
    new_logits: torch.Tensor,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Speculative sampling whose token after a rejection is drawn from p, not from
    (p - q)+ normalised."""
    drafts = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    p = new_logits.softmax(dim=-1)
    positions = torch.arange(candidate_length)
    ratio = p[0, positions, drafts[0]] / q[0, positions, drafts[0]]
    accepted = torch.rand_like(ratio) < ratio
    n_matches = ((~accepted).cumsum(dim=-1) < 1).sum()
    token = torch.multinomial(p[:, n_matches, :], num_samples=1)
    return torch.cat((drafts[:, :n_matches], token), dim=-1), n_matches


def correction_from_p() -> HFSetup:
    """After a rejection the next token is drawn from the target's p instead of the residual."""
    target, assistant, kwargs = assisted(do_sample=True)

    @contextmanager
    def swapped() -> Iterator[None]:
        from transformers.generation import utils

        original = utils._speculative_sampling
        setattr(utils, "_speculative_sampling", _correction_from_p)  # noqa: B010
        try:
            yield
        finally:
            utils._speculative_sampling = original

    _patch_generate(target, swapped)
    return target, assistant, kwargs


def _swap_verifier(target: Any, verifier: Callable[..., Any]) -> None:
    """Run the target's ``generate`` with transformers' ``_speculative_sampling`` replaced."""

    @contextmanager
    def swapped() -> Iterator[None]:
        from transformers.generation import utils

        original = utils._speculative_sampling
        setattr(utils, "_speculative_sampling", verifier)  # noqa: B010
        try:
            yield
        finally:
            utils._speculative_sampling = original

    _patch_generate(target, swapped)


def _accept_every_draft(
    candidate_input_ids: torch.Tensor,
    candidate_logits: torch.Tensor,
    candidate_length: int,
    new_logits: torch.Tensor,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every draft accepted, then a bonus token from p."""
    drafts = candidate_input_ids[:, -candidate_length:]
    bonus = torch.multinomial(new_logits[:, candidate_length].softmax(dim=-1), num_samples=1)
    return torch.cat((drafts, bonus), dim=-1), torch.tensor(candidate_length)


def accept_every_draft() -> HFSetup:
    """A verifier that accepts every draft: lossy, and too many accepted drafts (no correct
    verifier accepts more often than sum min(p, q))."""
    target, assistant, kwargs = assisted(do_sample=True)
    _swap_verifier(target, _accept_every_draft)
    return target, assistant, kwargs


SKIP = 0.5
"""The chance a round of :func:`skip_half_the_rounds` ignores its drafts."""


def _skip_half_the_rounds(
    own: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    candidate_input_ids: torch.Tensor,
    candidate_logits: torch.Tensor,
    candidate_length: int,
    new_logits: torch.Tensor,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """With probability SKIP the round rejects its first draft unseen and draws the token from
    p; otherwise transformers' own verification ``own``."""
    if float(torch.rand(())) < SKIP:
        token = torch.multinomial(new_logits[:, 0].softmax(dim=-1), num_samples=1)
        return token, torch.tensor(0)
    return own(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kwargs)


def skip_half_the_rounds() -> HFSetup:
    """Half the rounds ignore their drafts: lossless (each round's token is drawn from the
    target's law either way) but half the accepted drafts, a slowdown only the acceptance row
    sees."""
    from transformers.generation import utils

    target, assistant, kwargs = assisted(do_sample=True)
    own = utils._speculative_sampling
    _swap_verifier(target, functools.partial(_skip_half_the_rounds, own))
    return target, assistant, kwargs


def target_cache_not_rolled_back() -> HFSetup:
    """The target's KV cache keeps the rejected drafts' entries (its crop after verification
    is skipped), so later passes attend to tokens that were never emitted: the class of the
    transformers 4.40 cache_position bug."""
    target, assistant, kwargs = assisted(do_sample=True)
    _patch_generate(target, functools.partial(_skip_target_crop, target))
    return target, assistant, kwargs


@contextmanager
def _skip_target_crop(target: Any) -> Iterator[None]:
    """Make ``crop`` a no-op on the caches the target's forward returns."""
    forward = target.forward

    def forward_without_crop(*args: Any, **kwargs: Any) -> Any:
        out = forward(*args, **kwargs)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        if cache is not None:
            cache.crop = lambda max_length: None
        return out

    target.forward = forward_without_crop
    try:
        yield
    finally:
        del target.forward


def processors_on_assistant_only() -> HFSetup:
    """The sampling parameters reach the assistant's drafting but not the target's
    verification (T = 0.7, top-k 3): the output follows the unprocessed target."""
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper

    target, assistant, kwargs = assisted(do_sample=True, temperature=0.7, top_k=3)

    def patch(generator: Any) -> None:
        generator.logits_processor = [
            *generator.logits_processor,
            TemperatureLogitsWarper(0.7),
            TopKLogitsWarper(top_k=3),
        ]

    _patch_candidates(target, patch)
    generate = target.generate

    @functools.wraps(generate)
    def unprocessed(*args: Any, **generate_kwargs: Any) -> Any:
        for key in ("temperature", "top_k", "top_p", "min_p"):
            generate_kwargs.pop(key, None)
        return generate(*args, top_k=0, **generate_kwargs)

    target.generate = unprocessed
    return target, assistant, kwargs


def greedy_cache_not_rolled_back() -> HFSetup:
    """Greedy assisted decoding whose target cache keeps rejected drafts."""
    target, assistant, kwargs = assisted(do_sample=False)
    _patch_generate(target, functools.partial(_skip_target_crop, target))
    return target, assistant, kwargs


MUTANTS: dict[str, Callable[[], HFSetup]] = {
    "q-from-raw-logits (issue 47932 class)": q_from_raw_logits,
    "greedy-assistant-softmax-q (issue 32867)": greedy_assistant_softmax_q,
    "correction-from-p": correction_from_p,
    "target-cache-not-rolled-back (4.40 class)": target_cache_not_rolled_back,
    "processors-on-assistant-only": processors_on_assistant_only,
    "greedy-cache-not-rolled-back": greedy_cache_not_rolled_back,
}
ACCEPTANCE_MUTANTS: dict[str, Callable[[], HFSetup]] = {
    "accept-every-draft": accept_every_draft,
    "skip-half-the-rounds (lossless, slower)": skip_half_the_rounds,
}
"""Verifiers planted for the acceptance row: one accepting too often, one too rarely (the
second is lossless, so only that row fails it)."""
