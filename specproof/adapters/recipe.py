"""Glue for an engine on a GPU box (vLLM, SGLang, ...): generate through the engine, take the
target's law from HF transformers on the same weights.

``generate_batch(prompts, num_new_tokens, seeds) -> list of token lists`` is the only piece an
engine supplies (one request per prompt, request i seeded with ``seeds[i]``, EOS ending a list);
docs/guide/auditing_an_engine.md's "Engines on a GPU box" shows it for vLLM and SGLang.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from specproof.adapters.hf import hf_target_probs
from specproof.audit.engine.subject import Emission, Engine

GenerateBatch = Callable[[list[tuple[int, ...]], int, list[int]], Sequence[Sequence[int]]]


def batched_engine(
    name: str,
    generate_batch: GenerateBatch,
    hf_target: Any,
    sampling: Mapping[str, Any],
    prompt: Sequence[int],
    *,
    eos: int | Sequence[int] | None = None,
    batch: int = 256,
) -> Engine:
    """An :class:`Engine` whose runs go through ``generate_batch`` in batches of ``batch``
    (the audit's call c with seed s seeds request i with (s + c) * 1_000_003 + i), audited against
    ``hf_target``'s teacher-forced law under ``sampling`` (generate kwargs: do_sample,
    temperature, top_k, top_p, min_p, repetition_penalty)."""

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        seeds = [seed * 1_000_003 + i for i in range(len(prompts))]
        out = generate_batch(prompts, num_new_tokens, seeds)
        return [Emission(tuple(int(t) for t in tokens)) for tokens in out]

    def generate(prompt: Sequence[int], num_new_tokens: int, seed: int) -> Emission:
        return generate_many([tuple(prompt)], num_new_tokens, seed)[0]

    return Engine(
        name=name,
        generate=generate,
        target_probs=hf_target_probs(hf_target, sampling),
        prompt=tuple(prompt),
        eos=eos,
        greedy=not sampling.get("do_sample", False),
        generate_many=generate_many,
        batch=batch,
    )
