"""The one catalogue of known bugs of speculative-decoding verifiers and drafters: the public bug
classes (each reported in an engine's tracker or a deployment's report) and the mutants (plausible
bugs for mutation testing, ``nox -s mutants``), as one record type, :class:`Bug`. Each bug but
the engine one is one flag of the one flagged verifier (:mod:`specproof.subjects.flagged`), a small
model of its mechanism (not the engine's code), with the case and row of the audit that catch it.

``python -m specproof.runners.bug_table --markdown`` prints docs/guide/auditing_a_verifier.md's
table of public classes. Each public model is importable (``specproof.subjects.bugs:MODEL``) and
killed by the default command ``specproof audit specproof.subjects.bugs:MODEL --signature
SIGNATURE`` (drafters: ``specproof audit specproof.subjects.examples:rejection_sample --signature
vllm --drafter specproof.subjects.bugs:MODEL``); ``tests/subjects/test_bug_classes.py`` runs the
catching case of each bug at the command's defaults, and the flag-free verifier on the same cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from specproof.audit.hunt import rounds_to_find
from specproof.audit.signatures import Signature, signature_named
from specproof.reference.filters import FilterOrder
from specproof.subjects import examples, flagged, sequence_examples
from specproof.subjects.flagged import CORRECT, BugFlags

HUNT_ROUNDS = 1 << 20
"""The rounds a hunt trigger runs (a bug firing at rate 2^-16 shows with probability
1 - e^-16), unless its rate asks for more."""
RARE_MISS = 1e-6
"""The chance a rare bug's hunt may miss it."""


@dataclass(frozen=True)
class Trigger:
    """Where the audit catches a bug: the case, the row (check) that fails there, and the
    settings the command needs (signature, the engine's filter order, the hunt's rounds)."""

    signature: Signature
    case: str
    check: str
    filter_order: FilterOrder | None = None
    rate: float | None = None
    """A rare bug's exact per-round rate of an impossible output on its hunt case."""

    @property
    def hunt_rounds(self) -> int:
        """The hunt's rounds: enough to show a bug of ``rate`` with probability 1 - 1e-6."""
        if self.rate is None:
            return HUNT_ROUNDS
        return rounds_to_find(self.rate, 1 - RARE_MISS)


@dataclass(frozen=True)
class PublicClass:
    """A bug's row in the README's table of public bug classes."""

    title: str
    trigger: str
    """The trigger as modelled, in words."""
    model: str
    """Attribute of this module: the model of the mechanism."""


@dataclass(frozen=True)
class Bug:
    name: str
    """The flag's name with dashes (``BugFlags.of(name)``), or the engine model's name."""
    breaks: str
    """What it breaks, in one line."""
    caught: Trigger | None
    """The case and row that must catch it; None for a mutant equivalent in law (exact TV 0 on
    every case: no row may catch it)."""
    seen: str = ""
    """Where it was seen publicly (repository and issue or pull-request number); "" for none
    confirmed."""
    public: PublicClass | None = None
    """Its row of the public bug-class table; None for a mutant only."""
    mutant: bool = False
    """A row of the mutation table (``make_verifier(name)``, vLLM's signature)."""
    subject: Literal["verifier", "drafter", "engine"] = "verifier"
    """What the flag is on: the verifier, the drafter behind the correct verifier, or (the
    whole-engine class) an Engine factory for ``specproof audit-engine``."""
    flags: BugFlags | None = None
    """The flags that produce it, where they are not the one named ``name``."""
    signatures: tuple[Signature, ...] = ("vllm", "vllm-logits", "flashinfer", "hf")
    """The signatures whose flagged verifier carries it (a drafter bug: any)."""

    @property
    def switched(self) -> BugFlags:
        """The flags that produce it (none for the engine class)."""
        if self.subject == "engine":
            return CORRECT
        return self.flags or BugFlags.of(self.name)


VLLM_ONLY: tuple[Signature, ...] = ("vllm", "vllm-logits")
"""Greedy rows, n-gram drafts, ragged rows and per-request streams exist in vLLM's signatures."""
LOGITS: tuple[Signature, ...] = ("vllm-logits", "hf")
"""Raw target logits with the request's filters."""


def _vllm(case: str, check: str) -> Trigger:
    return Trigger("vllm", case, check)


BUGS: tuple[Bug, ...] = (
    # The public bug classes, in the README table's order.
    Bug(
        "mixed-generator-noise",
        "unseeded rows of a batch with seeded ones draw their correction by argmax over NaN",
        _vllm("requests", "support"),
        "vllm-project/vllm PR 10863 (Dec 2024)",
        PublicClass(
            "mixed seeded/unseeded batch",
            "a batch mixing requests with and without their own generator: the unseeded rows' "
            "exponential noise is never filled in (modelled as zeros: residual / 0, argmax)",
            "mixed_generator_noise",
        ),
        signatures=VLLM_ONLY,
    ),
    Bug(
        "params-at-bonus-only",
        "verified positions read softmax(raw logits), not the request's filtered law",
        Trigger("vllm-logits", "requests", "support"),
        "vllm-project/vllm issue 9834 (fixed by PR 10198, Nov 2024)",
        PublicClass(
            "request parameters only at the bonus position",
            "raw target logits: temperature, top-k and top-p applied to the bonus token but not "
            "at the verified positions",
            "params_at_bonus_only",
        ),
        signatures=("vllm-logits",),
    ),
    Bug(
        "top-p-all-or-nothing",
        "top-p dropped for the whole batch unless every random request sets it",
        Trigger("vllm-logits", "requests", "support"),
        "",
        PublicClass(
            "top-p on some rows only",
            "top-p skipped unless every random request in the batch sets it",
            "top_p_all_or_nothing",
        ),
        signatures=("vllm-logits",),
    ),
    Bug(
        "sequential-filters",
        "top-k, renormalise, then top-p where the engine cuts both on the full law",
        Trigger("vllm-logits", "filters-order", "round", filter_order="joint"),
        "sgl-project/sglang PR 36173 (closed unmerged; the review of PR 37667 finds it still "
        "present)",
        PublicClass(
            "top-k and top-p combined in another order than the engine samples",
            "speculative verification applies top-k, renormalises, then top-p, while the "
            "engine's regular sampler cuts both on the full law: where both bind, the verified "
            "law is not the law sampled without speculation (audited with the engine's order, "
            "--filter-order joint)",
            "sequential_filters",
        ),
        flags=BugFlags(filter_order="vllm"),
        signatures=LOGITS,
    ),
    Bug(
        "min-p-skipped",
        "min-p never applied at the verified positions",
        Trigger("vllm-logits", "filters-min-p", "support"),
        "vllm-project/vllm issue 42744 (min-p and logit bias; logit bias is not modelled here)",
        PublicClass(
            "min-p skipped at verified positions",
            "raw target logits: min-p applied by the sampler to the bonus token but never at the "
            "verified positions",
            "min_p_skipped",
        ),
        signatures=LOGITS,
    ),
    Bug(
        "greedy-marker-minus-one",
        "greedy rows marked temperature 0 verified by rejection sampling",
        _vllm("mixed", "round"),
        "vllm-project/vllm PR 27077 (Oct 2025; vllm-ascend PRs 5418, 5423 followed it)",
        PublicClass(
            "old greedy marker",
            "greedy requests read as temperature == -1 while the engine marks them 0: greedy "
            "rows verified by rejection sampling",
            "greedy_marker_minus_one",
        ),
        signatures=VLLM_ONLY,
    ),
    Bug(
        "identical-streams",
        "every call restarts the same random stream",
        _vllm("calls", "unseeded"),
        "warpfront/hipfire PR 627 (Aug 2026); NVIDIA/TensorRT-LLM issue 19487 (Sep 2026: "
        "serial unseeded requests return identical samples)",
        PublicClass(
            "identical streams on serial calls",
            "every call restarts the same random stream: unseeded repeated requests return "
            "identical samples",
            "identical_streams",
        ),
        signatures=VLLM_ONLY,
    ),
    Bug(
        "request-seed-ignored",
        "a request's own seed ignored: its draws come from the engine's one stream",
        _vllm("calls", "repeat"),
        "NVIDIA/TensorRT-LLM PR 17599 (Aug 2026: SamplingParams.seed ignored on the one-model "
        "speculative path)",
        PublicClass(
            "per-request seed ignored",
            "every request draws from the engine's one random stream whatever seed it carries "
            "(the global torch generator): a seeded request does not reproduce",
            "request_seed_ignored",
        ),
        signatures=VLLM_ONLY,
    ),
    Bug(
        "uniform-grid-le",
        "a 2^-16-grid uniform compared with <=: an exact 0 accepts a draft with p = 0",
        _vllm("zero-target-draft", "hunt"),
        "vllm-project/vllm PR 23803 (float32 uniform, rate 2^-24)",
        PublicClass(
            "uniform exactly 0 with <=",
            "u * q <= p with a uniform that can be exactly 0 accepts a draft of target "
            "probability 0 (modelled on a 2^-16 grid so the test is fast; the float32 mutant is "
            "specproof.subjects.mutants.verifier:mutant_uniform_float32_le)",
            "uniform_grid_le",
        ),
    ),
    Bug(
        "relaxed-from-3-drafts",
        "acceptance min(1, 2p/q) for requests with 3 or more drafts",
        _vllm("long", "round"),
        "",
        PublicClass(
            "a rule switched on from 3 drafts",
            "a looser acceptance (min(1, 2p/q)) for requests with 3 or more drafts",
            "relaxed_from_3_drafts",
        ),
    ),
    Bug(
        "shared-uniform",
        "one uniform per request for every position",
        Trigger("flashinfer", "small-vocab", "round"),
        "flashinfer-ai/flashinfer PR 424 (Aug 2024: 'use unique uniform samples')",
        PublicClass(
            "a reused coin",
            "one uniform per request for every position's acceptance test",
            "shared_coin",
        ),
        mutant=True,
    ),
    Bug(
        "position-zero-rows",
        "every position reads the target and draft rows of position 0",
        Trigger("flashinfer", "small-vocab", "round"),
        "flashinfer-ai/flashinfer PR 425 (Aug 2024: a correctness fix of the speculative "
        "sampling kernels; that this was its mechanism is not confirmed here)",
        PublicClass(
            "rows of position 0 at every position",
            "every position reads the target and draft rows of position 0",
            "position_zero_rows",
        ),
    ),
    Bug(
        "residual-from-p",
        "correction token drawn from p instead of norm(max(p - q, 0))",
        Trigger("flashinfer", "small-vocab", "round"),
        "SafeAILab/EAGLE PR 47 (Mar 2024: a non-greedy sampling bug; that this was its "
        "mechanism is not confirmed here)",
        PublicClass(
            "residual drawn from p",
            "the token after a rejection drawn from p instead of norm(max(p - q, 0))",
            "residual_from_p",
        ),
        mutant=True,
    ),
    Bug(
        "bonus-wrong-row",
        "bonus token drawn from the last draft's target row, not the next",
        Trigger("flashinfer", "p-equals-q", "round"),
        "",
        PublicClass(
            "bonus from the wrong row",
            "after full acceptance the bonus token drawn from the last draft's target row",
            "bonus_from_last_draft_row",
        ),
        mutant=True,
    ),
    Bug(
        "always-greedy",
        "every row verified by argmax whatever its temperature",
        _vllm("small-vocab", "round"),
        "sgl-project/sglang PRs 31214 (ROCm) and 32495 (NPU), 2026",
        PublicClass(
            "always-greedy verification on some devices",
            "every row verified by argmax whatever its temperature",
            "always_greedy",
        ),
    ),
    Bug(
        "nan-target-emits-vocab-size",
        "an all-NaN target row at a rejection emits id vocab_size",
        _vllm("nonfinite", "target-all-nan"),
        "vllm-project/vllm issue 53029",
        PublicClass(
            "all-NaN target row: id == vocab_size",
            "an all-NaN target row at a rejected position: the search for the recovered token "
            "finds no maximum and returns its initial index, vocab_size (robustness row, not a "
            "law row)",
            "nan_target_emits_vocab_size",
        ),
    ),
    Bug(
        "nan-draft-recovers-rejected",
        "an all-NaN draft row recovers the draft just rejected",
        _vllm("nonfinite", "draft-all-nan"),
        "vllm-project/vllm PR 41834 (a review comment)",
        PublicClass(
            "all-NaN draft row: the rejected draft recovered",
            "an all-NaN draft row: the token recovered after the rejection is the draft just "
            "rejected (robustness row, not a law row)",
            "nan_draft_recovers_rejected",
        ),
    ),
    Bug(
        "draft-bf16-logits",
        "drafts drawn from bf16 logits while q is reported in float32",
        _vllm("fidelity-T0.7", "row"),
        "deepseek-ai/DeepSpec issue 31 (Jun 2026)",
        PublicClass(
            "drafts from bf16 logits, q in float32",
            "tokens drawn from softmax(bf16 logits / T) in bf16 while q is the float32 softmax",
            "bf16_draft",
        ),
        subject="drafter",
    ),
    Bug(
        "draft-greedy-report-softmax",
        "drafter takes the argmax while reporting the softmax as q",
        _vllm("small-vocab", "tokens"),
        "huggingface/transformers issue 32867 (fixed in 4.45)",
        PublicClass(
            "greedy drafts, softmax reported",
            "the drafter takes the argmax while reporting its softmax as q",
            "greedy_draft_softmax",
        ),
        mutant=True,
        subject="drafter",
    ),
    Bug(
        "sequence-drift",
        "1.5 % more mass on EOS at every position: generations end early",
        _vllm("sequence (64 tokens)", "stop"),
        "DSpark deployment report (median reasoning length 28k tokens with speculation, 57k or "
        "more without)",
        PublicClass(
            "generations that end early, a little at every position",
            "an engine whose speculative path puts 1.5 % more mass on EOS at every position (TV "
            "0.015 per position, below the per-position rows' delta): the median stopping time "
            "falls from 28 to 17 tokens",
            "sequence_drift",
        ),
        subject="engine",
        signatures=(),
    ),
    # The mutants that are no public class, in the mutation table's order.
    Bug(
        "residual-abs",
        "correction token drawn from norm(|p - q|)",
        _vllm("small-vocab", "support"),
        mutant=True,
    ),
    Bug(
        "residual-softmax-clamp",
        "correction token drawn from softmax(max(p - q, 0))",
        _vllm("small-vocab", "support"),
        "HF transformers PR 28508",
        mutant=True,
    ),
    Bug(
        "residual-unnormalised",
        "max(p - q, 0) sampled without renormalisation",
        _vllm("small-vocab", "support"),
        mutant=True,
    ),
    Bug(
        "residual-wrong-position",
        "correction from the residual one position later",
        _vllm("small-vocab", "round"),
        mutant=True,
    ),
    Bug(
        "residual-reuses-uniform",
        "correction drawn with the rejected test's uniform",
        _vllm("small-vocab", "round"),
        mutant=True,
    ),
    Bug(
        "ratio-swapped",
        "accept with probability min(1, q/p)",
        _vllm("small-vocab", "round"),
        mutant=True,
    ),
    Bug(
        "threshold-eps",
        "accept when u < p/q + 0.02",
        _vllm("one-hot-target", "support"),
        mutant=True,
    ),
    Bug(
        "threshold-tiny-eps",
        "accept when u < p/q + 1e-6",
        Trigger("vllm", "zero-target-draft", "hunt", rate=1e-6),
        mutant=True,
    ),
    Bug(
        "no-uniform", "accept exactly when q(x) <= p(x)", _vllm("small-vocab", "round"), mutant=True
    ),
    Bug(
        "uniform-float32-le",
        "float32 uniform and u q <= p: an exact 0.0 accepts a draft with p = 0",
        Trigger("vllm", "zero-target-draft", "hunt", rate=2.0**-24),
        "vLLM PR 23803",
        mutant=True,
    ),
    Bug(
        "uniform-bf16",
        "acceptance uniform rounded to bfloat16 (can round to 1.0)",
        _vllm("p-equals-q", "support"),
        mutant=True,
    ),
    Bug(
        "q-bf16",
        "q rounded to bfloat16 inside the verifier",
        _vllm("p-equals-q", "support"),
        mutant=True,
    ),
    Bug(
        "q-top-k",
        "q renormalised over its top 2 tokens inside the verifier",
        _vllm("small-vocab", "support"),
        mutant=True,
    ),
    Bug(
        "p-tempered",
        "temperature 1/2 applied to the target side only",
        _vllm("small-vocab", "round"),
        mutant=True,
    ),
    Bug(
        "independent-acceptance",
        "accepted count = number of accepted positions, not a prefix",
        _vllm("small-vocab", "round"),
        mutant=True,
    ),
    Bug(
        "last-draft-skipped",
        "ragged length off by one: the last draft is never verified",
        _vllm("small-vocab", "support"),
        mutant=True,
    ),
    Bug(
        "greedy-as-random",
        "greedy rows verified by rejection sampling (temperature ignored)",
        _vllm("greedy", "support"),
        mutant=True,
        signatures=VLLM_ONLY,
    ),
    Bug(
        "greedy-tie-last",
        "greedy argmax ties broken to the highest id",
        _vllm("greedy-ties", "support"),
        mutant=True,
        signatures=VLLM_ONLY,
    ),
    Bug(
        "ngram-q-uniform",
        "draft_probs=None read as a uniform q instead of one-hot",
        _vllm("one-hot-draft", "round"),
        mutant=True,
        signatures=VLLM_ONLY,
    ),
    Bug(
        "zero-length-dropped",
        "rows with zero drafts emit nothing",
        _vllm("ragged", "layout"),
        mutant=True,
        signatures=VLLM_ONLY,
    ),
    Bug(
        "drop-correction",
        "no correction token after a rejection",
        _vllm("small-vocab", "layout"),
        mutant=True,
    ),
    Bug(
        "padding-zero",
        "unused positions padded with token 0 instead of -1",
        _vllm("small-vocab", "layout"),
        mutant=True,
    ),
    Bug(
        "pq-fallback-draft",
        "an empty residual (p == q) emits the rejected draft",
        None,
        mutant=True,
    ),
    Bug(
        "residual-by-acceptance",
        "residual normalised by 1 - sum min(p, q), not its sum",
        None,
        mutant=True,
    ),
    Bug(
        "draft-top-k-report-raw",
        "drafter samples top-2 while reporting the raw softmax",
        _vllm("small-vocab", "tokens"),
        mutant=True,
        subject="drafter",
    ),
    # Neither public nor a mutant: the bug the large-vocab-long case's position rows exist for.
    Bug(
        "residual-lagged-from-3",
        "from output position 3 on, the correction drawn from the previous position's residual",
        _vllm("large-vocab-long", "position 3"),
    ),
    # Neither public nor a mutant: another engine's filter order where the engine keeps vLLM's.
    Bug(
        "min-p-after-top-p",
        "min-p applied after top-p (transformers' order) where the engine applies it first",
        Trigger("vllm-logits", "filters-min-p-top-p", "support"),
        flags=BugFlags(filter_order="sequential"),
        signatures=("vllm-logits",),
    ),
    Bug(
        "min-p-before-temperature",
        "min-p applied before the temperature (llama.cpp's order) where the engine applies "
        "it after",
        Trigger("vllm-logits", "filters-min-p-temperature", "support"),
        flags=BugFlags(filter_order="llama.cpp"),
        signatures=("vllm-logits",),
    ),
)

CLASSES: tuple[Bug, ...] = tuple(bug for bug in BUGS if bug.public)
"""The public bug classes, in the README table's order."""
MUTANTS: tuple[Bug, ...] = tuple(bug for bug in BUGS if bug.mutant)
"""The mutation table's rows."""
SAMPLE = ("bonus-wrong-row", "residual-softmax-clamp", "pq-fallback-draft")
"""The mutants the default test session runs (one per kind of verdict)."""


def bug(name: str) -> Bug:
    """The catalogue's record of this name."""
    for known in BUGS:
        if known.name == name:
            return known
    raise KeyError(f"no bug named {name!r} in the catalogue")


def mutant(name: str) -> Bug:
    """The mutant of this name."""
    found = bug(name)
    if not found.mutant:
        raise KeyError(f"{name!r} is in the catalogue but is no mutant")
    return found


def subject(known: Bug, flags: BugFlags | None = None) -> Callable[..., Any]:
    """What the audit runs for ``known`` at its trigger: the flagged verifier (or drafter, or
    engine) with its flags, or with ``flags`` instead (CORRECT: its flag-free counterpart)."""
    if known.subject == "engine":
        return sequence_examples.drift_mutant if flags is None else sequence_examples.long_engine
    switched = known.switched if flags is None else flags
    name = known.public.model if known.public else known.name.replace("-", "_")
    if known.subject == "drafter":
        return flagged.drafter(switched, name)
    assert known.caught is not None, known.name
    signature = signature_named(known.caught.signature)
    return flagged.verifier_for(signature, switched, known.caught.filter_order, name)


# The public classes' models, importable as ``specproof.subjects.bugs:MODEL``.
mixed_generator_noise = subject(bug("mixed-generator-noise"))
params_at_bonus_only = subject(bug("params-at-bonus-only"))
top_p_all_or_nothing = subject(bug("top-p-all-or-nothing"))
sequential_filters = subject(bug("sequential-filters"))
min_p_skipped = subject(bug("min-p-skipped"))
greedy_marker_minus_one = subject(bug("greedy-marker-minus-one"))
identical_streams = subject(bug("identical-streams"))
request_seed_ignored = subject(bug("request-seed-ignored"))
uniform_grid_le = subject(bug("uniform-grid-le"))
relaxed_from_3_drafts = subject(bug("relaxed-from-3-drafts"))
shared_coin = subject(bug("shared-uniform"))
position_zero_rows = subject(bug("position-zero-rows"))
residual_from_p = subject(bug("residual-from-p"))
bonus_from_last_draft_row = subject(bug("bonus-wrong-row"))
always_greedy = subject(bug("always-greedy"))
nan_target_emits_vocab_size = subject(bug("nan-target-emits-vocab-size"))
nan_draft_recovers_rejected = subject(bug("nan-draft-recovers-rejected"))
bf16_draft = subject(bug("draft-bf16-logits"))
greedy_draft_softmax = subject(bug("draft-greedy-report-softmax"))
sequence_drift = subject(bug("sequence-drift"))


def catching_rows(known: Bug, seed: int = 0, flags: BugFlags | None = None) -> list[Any]:
    """The rows of the catching case, as the default command computes them (same seed,
    alpha, beta, delta, tolerance; a hunt case at the trigger's rounds), for the bug's subject
    (or, with ``flags``, the same subject with those flags instead: CORRECT for its flag-free
    counterpart)."""
    from specproof.audit.audit_settings import AuditSettings
    from specproof.audit.calls import audit_calls
    from specproof.audit.cases import calls_problem, verifier_problems
    from specproof.audit.drafters import fidelity_rates, fidelity_rows
    from specproof.audit.hunt import hunt_case, hunt_cases
    from specproof.audit.nonfinite import nonfinite_rows
    from specproof.audit.run import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_DELTA, audit_verifier
    from specproof.audit.settings import ErrorRates, HuntSettings

    trigger = known.caught
    if trigger is None:
        raise ValueError(f"{known.name} is equivalent in law: no row catches it")
    model = subject(known, flags)
    alpha, beta = DEFAULT_ALPHA, DEFAULT_BETA
    if known.subject == "engine":
        return _sequence_rows(model, seed)
    signature = trigger.signature
    if trigger.check == "hunt":
        case = next(c for c in hunt_cases() if c.name == trigger.case)
        hunt = HuntSettings(trigger.hunt_rounds, batch=1 << 16)
        return [hunt_case(model, case, AuditSettings.of(signature, seed=seed, hunt=hunt))]
    if trigger.case == "nonfinite":
        return nonfinite_rows(model, AuditSettings.of(signature, seed=seed))
    if trigger.case == "calls":
        rates = ErrorRates(alpha, beta, DEFAULT_DELTA)
        settings = AuditSettings.of(signature, rates=rates, seed=seed)
        return audit_calls(model, calls_problem(settings.signature, seed), settings)
    if trigger.case.startswith("fidelity"):
        temperature = float(trigger.case.removeprefix("fidelity-T"))
        rates = fidelity_rates(ErrorRates(alpha, beta))
        return fidelity_rows(model, rates=rates, seed=seed, temperatures=(temperature,))
    order = trigger.filter_order or signature_named(signature).default_filter_order
    problems = verifier_problems(seed, filter_order=order)
    problem = next(p for p in problems if p.name == trigger.case)
    drafted = known.subject == "drafter"
    fn, drafter = (examples.rejection_sample, model) if drafted else (model, None)
    report = audit_verifier(
        fn,
        signature,
        problems=[problem],
        drafter=drafter,
        calls=False,
        seed=seed,
        alpha=alpha,
        beta=beta,
        delta=DEFAULT_DELTA,
    )
    return report.results


def _sequence_rows(engine: Callable[..., Any], seed: int) -> list[Any]:
    """The sequence rows of ``specproof audit-engine --sequence 64`` at its defaults."""
    import torch

    from specproof.audit.engine.audit import DEFAULT_DELTA as ENGINE_DELTA
    from specproof.audit.engine.sequence import SEQUENCE_TOKENS, sequence_rates, timed_sequence_rows
    from specproof.audit.settings import ErrorRates

    rates = sequence_rates(ErrorRates(delta=ENGINE_DELTA), SEQUENCE_TOKENS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the command does: tiny tensors, many calls
    try:
        rows, _ = timed_sequence_rows(engine(), SEQUENCE_TOKENS, rates=rates, seed=seed)
    finally:
        torch.set_num_threads(threads)
    return list(rows)


def public_class(known: Bug) -> PublicClass:
    if known.public is None:
        raise ValueError(f"{known.name} is no public bug class")
    return known.public


def command(known: Bug) -> str:
    """The default command that kills the public class's model."""
    path = f"specproof.subjects.bugs:{public_class(known).model}"
    if known.subject == "engine":
        return f"specproof audit-engine --engine {path} --sequence 64"
    if known.subject == "drafter":
        return (
            f"specproof audit specproof.subjects.examples:rejection_sample --signature vllm "
            f"--drafter {path}"
        )
    assert known.caught is not None
    order = known.caught.filter_order
    option = f" --filter-order {order}" if order else ""
    return f"specproof audit {path} --signature {known.caught.signature}{option}"


def how(known: Bug) -> str:
    """The options the model is audited with, for the table."""
    if known.subject == "engine":
        return "`specproof audit-engine --engine`, `--sequence 64`"
    assert known.caught is not None
    drafter = ", drafter" if known.subject == "drafter" else ""
    order = known.caught.filter_order
    option = f", `--filter-order {order}`" if order else ""
    return f"`--signature {known.caught.signature}`{drafter}{option}"


def markdown() -> str:
    """The README's table of the public bug classes."""
    lines = [
        "| bug class | public record | trigger (modelled) | caught by | model | test |",
        "|---|---|---|---|---|---|",
    ]
    for known in CLASSES:
        public, caught = public_class(known), known.caught
        assert caught is not None
        test = f"`tests/subjects/test_bug_classes.py::test_bug_class_is_caught[{public.model}]`"
        record = known.seen or "(class only; no public number confirmed)"
        lines.append(
            f"| {public.title} | {record} | {public.trigger} | `{caught.case}/{caught.check}` | "
            f"`{public.model}` ({how(known)}) "
            f"| {test} |"
        )
    return "\n".join(lines)
