"""Public bug classes of speculative-decoding verifiers and drafters, each as a small model of its
mechanism (not the engine's code), the audit row that catches it and the test that shows it.

``python -m specproof.audit.bugclasses --markdown`` prints docs/audit.md's table. Each model is
importable (``specproof.audit.bugclasses:MODEL``) and killed by the default command
``specproof audit specproof.audit.bugclasses:MODEL --signature SIGNATURE`` (drafters:
``specproof audit specproof.audit.examples:rejection_sample --signature vllm --drafter
specproof.audit.bugclasses:MODEL``); ``tests/audit/test_bug_classes.py`` runs the catching
case of each at the command's defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from specproof.reference.filters import FilterOrder

from . import examples
from .engine import sequence_examples
from .signatures import Signature, signature_named


@dataclass(frozen=True)
class BugClass:
    name: str
    record: str
    """Repository and issue or pull-request number from the public record."""
    trigger: str
    model: str
    """Attribute of this module: the model of the mechanism."""
    signature: Signature
    case: str
    check: str
    drafter: bool = False
    filter_order: FilterOrder | None = None
    """The engine's filter order, when the command must name it (``--filter-order``)."""
    engine: bool = False
    """A whole-engine class: the model is an Engine factory for ``specproof audit-engine``."""


def _vllm_model(bug: str) -> Callable[..., torch.Tensor]:
    def rejection_sample(*args: Any) -> torch.Tensor:
        tokens, lengths, longest, _cu, draft, target, bonus, metadata = args
        return examples._vllm(
            tokens, lengths, longest, draft, target, bonus, metadata, biased=False, bug=bug
        )

    rejection_sample.__name__ = bug.replace("-", "_")
    return rejection_sample


def _vllm_logits_model(bug: str) -> Callable[..., torch.Tensor]:
    def rejection_sample(*args: Any) -> torch.Tensor:
        tokens, lengths, longest, _cu, draft, logits, bonus, metadata = args
        target = examples.process_target_logits(logits, lengths, metadata, bug=bug)
        return examples._vllm(
            tokens, lengths, longest, draft, target, bonus, metadata, biased=False, bug=bug
        )

    rejection_sample.__name__ = bug.replace("-", "_")
    return rejection_sample


def _flashinfer_model(bug: str) -> Callable[..., tuple[torch.Tensor, ...]]:
    def chain_speculative_sampling(
        draft_probs: torch.Tensor,
        draft_token_ids: torch.Tensor,
        target_probs: torch.Tensor,
        accepted: torch.Tensor | None = None,
        emitted: torch.Tensor | None = None,
        deterministic: bool = True,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return examples._flashinfer(
            draft_probs, draft_token_ids, target_probs, accepted, emitted, generator, False, bug
        )

    chain_speculative_sampling.__name__ = bug.replace("-", "_")
    return chain_speculative_sampling


def bf16_draft(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Draws from softmax(bf16 logits / T) computed in bf16 while reporting the float32
    softmax(logits / T) as q (the DeepSpec issue 31 class)."""
    drawn_from = torch.softmax(logits.to(torch.bfloat16) / temperature, -1)
    reported = torch.softmax(logits.float() / temperature, -1)
    return examples._draw(drawn_from.double(), None), reported


mixed_generator_noise = _vllm_model("mixed-generator-noise")
greedy_marker_minus_one = _vllm_model("greedy-marker-minus-one")
identical_streams = _vllm_model("identical-streams")
uniform_grid_le = _vllm_model("uniform-grid-le")
relaxed_from_3_drafts = _vllm_model("relaxed-from-3-drafts")
always_greedy = _vllm_model("always-greedy")
params_at_bonus_only = _vllm_logits_model("params-at-bonus-only")
top_p_all_or_nothing = _vllm_logits_model("top-p-all-or-nothing")
min_p_skipped = _vllm_logits_model("min-p-skipped")
sequential_filters = examples.rejection_sample_logits
nan_target_emits_vocab_size = _vllm_model("nan-target-emits-vocab-size")
nan_draft_recovers_rejected = _vllm_model("nan-draft-recovers-rejected")
shared_coin = _flashinfer_model("shared-coin")
position_zero_rows = _flashinfer_model("position-zero-rows")
residual_from_p = examples.biased_chain_speculative_sampling
bonus_from_last_draft_row = _flashinfer_model("bonus-from-last-draft-row")
greedy_draft_softmax = examples.greedy_draft
sequence_drift = sequence_examples.drift_mutant

CLASSES: tuple[BugClass, ...] = (
    BugClass(
        "mixed seeded/unseeded batch",
        "vllm-project/vllm PR 10863 (Dec 2024)",
        "a batch mixing requests with and without their own generator: the unseeded rows' "
        "exponential noise is never filled in (modelled as zeros: residual / 0, argmax)",
        "mixed_generator_noise",
        "vllm",
        "requests",
        "support",
    ),
    BugClass(
        "request parameters only at the bonus position",
        "vllm-project/vllm issue 9834 (fixed by PR 10198, Nov 2024)",
        "raw target logits: temperature, top-k and top-p applied to the bonus token but not at "
        "the verified positions",
        "params_at_bonus_only",
        "vllm-logits",
        "requests",
        "support",
    ),
    BugClass(
        "top-p on some rows only",
        "",
        "top-p skipped unless every random request in the batch sets it",
        "top_p_all_or_nothing",
        "vllm-logits",
        "requests",
        "support",
    ),
    BugClass(
        "top-k and top-p combined in another order than the engine samples",
        "sgl-project/sglang PR 36173 (closed unmerged; the review of PR 37667 finds it still "
        "present)",
        "speculative verification applies top-k, renormalises, then top-p, while the engine's "
        "regular sampler cuts both on the full law: where both bind, the verified law is not "
        "the law sampled without speculation (audited with the engine's order, "
        "--filter-order joint)",
        "sequential_filters",
        "vllm-logits",
        "filters-order",
        "round",
        filter_order="joint",
    ),
    BugClass(
        "min-p skipped at verified positions",
        "vllm-project/vllm issue 42744 (min-p and logit bias; logit bias is not modelled here)",
        "raw target logits: min-p applied by the sampler to the bonus token but never at the "
        "verified positions",
        "min_p_skipped",
        "vllm-logits",
        "filters-min-p",
        "support",
    ),
    BugClass(
        "old greedy marker",
        "vllm-project/vllm PR 27077 (Oct 2025; vllm-ascend PRs 5418, 5423 followed it)",
        "greedy requests read as temperature == -1 while the engine marks them 0: greedy rows "
        "verified by rejection sampling",
        "greedy_marker_minus_one",
        "vllm",
        "mixed",
        "round",
    ),
    BugClass(
        "identical streams on serial calls",
        "warpfront/hipfire PR 627 (Aug 2026)",
        "every call restarts the same random stream: unseeded repeated requests return "
        "identical samples",
        "identical_streams",
        "vllm",
        "calls",
        "unseeded",
    ),
    BugClass(
        "uniform exactly 0 with <=",
        "vllm-project/vllm PR 23803 (float32 uniform, rate 2^-24)",
        "u * q <= p with a uniform that can be exactly 0 accepts a draft of target "
        "probability 0 (modelled on a 2^-16 grid so the test is fast; the float32 mutant is "
        "specproof.audit.mutants.verifier:mutant_uniform_float32_le)",
        "uniform_grid_le",
        "vllm",
        "zero-target-draft",
        "hunt",
    ),
    BugClass(
        "a rule switched on from 3 drafts",
        "",
        "a looser acceptance (min(1, 2p/q)) for requests with 3 or more drafts",
        "relaxed_from_3_drafts",
        "vllm",
        "long",
        "round",
    ),
    BugClass(
        "a reused coin",
        "flashinfer-ai/flashinfer PR 424 (Aug 2024: 'use unique uniform samples')",
        "one uniform per request for every position's acceptance test",
        "shared_coin",
        "flashinfer",
        "small-vocab",
        "round",
    ),
    BugClass(
        "rows of position 0 at every position",
        "flashinfer-ai/flashinfer PR 425 (Aug 2024: a correctness fix of the speculative "
        "sampling kernels; that this was its mechanism is not confirmed here)",
        "every position reads the target and draft rows of position 0",
        "position_zero_rows",
        "flashinfer",
        "small-vocab",
        "round",
    ),
    BugClass(
        "residual drawn from p",
        "SafeAILab/EAGLE PR 47 (Mar 2024: a non-greedy sampling bug; that this was its "
        "mechanism is not confirmed here)",
        "the token after a rejection drawn from p instead of norm(max(p - q, 0))",
        "residual_from_p",
        "flashinfer",
        "small-vocab",
        "round",
    ),
    BugClass(
        "bonus from the wrong row",
        "",
        "after full acceptance the bonus token drawn from the last draft's target row",
        "bonus_from_last_draft_row",
        "flashinfer",
        "p-equals-q",
        "round",
    ),
    BugClass(
        "always-greedy verification on some devices",
        "sgl-project/sglang PRs 31214 (ROCm) and 32495 (NPU), 2026",
        "every row verified by argmax whatever its temperature",
        "always_greedy",
        "vllm",
        "small-vocab",
        "round",
    ),
    BugClass(
        "all-NaN target row: id == vocab_size",
        "vllm-project/vllm issue 53029",
        "an all-NaN target row at a rejected position: the search for the recovered token finds "
        "no maximum and returns its initial index, vocab_size (robustness row, not a law row)",
        "nan_target_emits_vocab_size",
        "vllm",
        "nonfinite",
        "target-all-nan",
    ),
    BugClass(
        "all-NaN draft row: the rejected draft recovered",
        "vllm-project/vllm PR 41834 (a review comment)",
        "an all-NaN draft row: the token recovered after the rejection is the draft just "
        "rejected (robustness row, not a law row)",
        "nan_draft_recovers_rejected",
        "vllm",
        "nonfinite",
        "draft-all-nan",
    ),
    BugClass(
        "drafts from bf16 logits, q in float32",
        "deepseek-ai/DeepSpec issue 31 (Jun 2026)",
        "tokens drawn from softmax(bf16 logits / T) in bf16 while q is the float32 softmax",
        "bf16_draft",
        "vllm",
        "fidelity-T0.7",
        "row",
        drafter=True,
    ),
    BugClass(
        "greedy drafts, softmax reported",
        "huggingface/transformers issue 32867 (fixed in 4.45)",
        "the drafter takes the argmax while reporting its softmax as q",
        "greedy_draft_softmax",
        "vllm",
        "small-vocab",
        "tokens",
        drafter=True,
    ),
    BugClass(
        "generations that end early, a little at every position",
        "DSpark deployment report (median reasoning length 28k tokens with speculation, 57k or "
        "more without)",
        "an engine whose speculative path puts 1.5 % more mass on EOS at every position (TV "
        "0.015 per position, below the per-position rows' delta): the median stopping time "
        "falls from 28 to 17 tokens",
        "sequence_drift",
        "vllm",
        "sequence (64 tokens)",
        "stop",
        engine=True,
    ),
)


def catching_rows(bug: BugClass, seed: int = 0) -> list[Any]:
    """The rows of the catching case, as the default command computes them (same seed,
    alpha, beta, delta, tolerance; the hunt case at 2^20 rounds)."""
    from .calls import audit_calls
    from .cases import calls_problem, verifier_problems
    from .drafters import fidelity_rates, fidelity_rows
    from .hunt import hunt_case, hunt_cases
    from .nonfinite import nonfinite_rows
    from .run import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_DELTA, audit_verifier
    from .settings import ErrorRates

    model = globals()[bug.model]
    alpha, beta = DEFAULT_ALPHA, DEFAULT_BETA
    if bug.engine:
        from .engine.audit import DEFAULT_DELTA as ENGINE_DELTA
        from .engine.sequence import SEQUENCE_TOKENS, sequence_rates, timed_sequence_rows

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as the command does: tiny tensors, many calls
        try:
            rows, _ = timed_sequence_rows(
                model(),
                SEQUENCE_TOKENS,
                rates=sequence_rates(ErrorRates(alpha, beta, ENGINE_DELTA), SEQUENCE_TOKENS),
                seed=seed,
            )
        finally:
            torch.set_num_threads(threads)
        return rows
    if bug.check == "hunt":
        case = next(c for c in hunt_cases() if c.name == bug.case)
        return [hunt_case(model, bug.signature, case, 1 << 20, seed=seed, batch=1 << 16)]
    if bug.case == "nonfinite":
        return nonfinite_rows(model, bug.signature, seed)
    if bug.case == "calls":
        problem = calls_problem(bug.signature, seed)
        rates = ErrorRates(alpha, beta, DEFAULT_DELTA)
        return audit_calls(model, bug.signature, problem, rates=rates, seed=seed)
    if bug.case.startswith("fidelity"):
        temperature = float(bug.case.removeprefix("fidelity-T"))
        rates = fidelity_rates(ErrorRates(alpha, beta))
        return fidelity_rows(model, rates=rates, seed=seed, temperatures=(temperature,))
    order = bug.filter_order or signature_named(bug.signature).default_filter_order
    problems = verifier_problems(seed, filter_order=order)
    problem = next(p for p in problems if p.name == bug.case)
    fn, drafter = (examples.rejection_sample, model) if bug.drafter else (model, None)
    report = audit_verifier(
        fn,
        bug.signature,
        problems=[problem],
        drafter=drafter,
        calls=False,
        seed=seed,
        alpha=alpha,
        beta=beta,
        delta=DEFAULT_DELTA,
    )
    return report.results


def command(bug: BugClass) -> str:
    """The default command that kills the model."""
    path = f"specproof.audit.bugclasses:{bug.model}"
    if bug.engine:
        return f"specproof audit-engine --engine {path} --sequence 64"
    if bug.drafter:
        return (
            f"specproof audit specproof.audit.examples:rejection_sample --signature vllm "
            f"--drafter {path}"
        )
    order = f" --filter-order {bug.filter_order}" if bug.filter_order else ""
    return f"specproof audit {path} --signature {bug.signature}{order}"


def how(bug: BugClass) -> str:
    """The options the model is audited with, for the table."""
    if bug.engine:
        return "`specproof audit-engine --engine`, `--sequence 64`"
    drafter = ", drafter" if bug.drafter else ""
    order = f", `--filter-order {bug.filter_order}`" if bug.filter_order else ""
    return f"`--signature {bug.signature}`{drafter}{order}"


def markdown() -> str:
    lines = [
        "| bug class | public record | trigger (modelled) | caught by | model | test |",
        "|---|---|---|---|---|---|",
    ]
    for bug in CLASSES:
        test = f"`tests/audit/test_bug_classes.py::test_bug_class_is_caught[{bug.model}]`"
        record = bug.record or "(class only; no public number confirmed)"
        lines.append(
            f"| {bug.name} | {record} | {bug.trigger} | `{bug.case}/{bug.check}` | "
            f"`{bug.model}` ({how(bug)}) "
            f"| {test} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print docs/audit.md's table")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown())
    else:
        for bug in CLASSES:
            print(f"{bug.name}: {command(bug)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
