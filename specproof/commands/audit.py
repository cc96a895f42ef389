"""The ``specproof audit`` command: argument checks, import of the audited callable, report."""

from __future__ import annotations

import argparse
import sys

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.by_path import audit
from specproof.audit.cases import LARGE_VOCAB, LONG_LARGE_VOCAB, verifier_problems
from specproof.audit.guard import abandoned_calls
from specproof.audit.hunt import DEFAULT_BUDGET, excluded_rate
from specproof.audit.laws import check_enumerable
from specproof.audit.report import AuditReport, publish
from specproof.audit.requests import GREEDY_TEMPERATURE, LEGACY_GREEDY_TEMPERATURE
from specproof.audit.run import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    DEFAULT_TIMEOUT,
    DEFAULT_TOLERANCE,
    progress_bar,
)
from specproof.audit.settings import DEFAULT_MAX_BATCH, CallLimits, ErrorRates, HuntSettings
from specproof.audit.signatures import signature_names
from specproof.callables import load_callable
from specproof.commands.command_rules import (
    EXIT_STATUS_HELP,
    OneLineParser,
    internal_error,
    number_above,
    output_path_problem,
    rate_argument,
    seconds,
    seed_argument,
    tolerance_argument,
    usage_error,
)
from specproof.reference.filters import FILTER_ORDERS

PROG = "specproof audit"
QUICK_DELTA = 0.1
"""--quick's delta: n falls as 1/delta^2, so about a quarter of the default's rounds."""
QUICK_HUNT_SECONDS = 10.0
MARKERS = {"0": GREEDY_TEMPERATURE, "-1": LEGACY_GREEDY_TEMPERATURE}
MAX_VOCAB = 2**20
"""Largest --large-vocab / --long-vocab: above every real vocabulary (about 262k at most), and
its rows still fit in memory (10^9 would ask for some 30 GiB)."""


def parser() -> argparse.ArgumentParser:
    out = OneLineParser(
        prog=PROG,
        description=(
            "Audit a chain verifier or drafter (sampled, tested against exact laws from the "
            "reference) or a scheduler (exact laws). MODULE:FN is imported from the current "
            "directory first, as `python -m` would, then from sys.path (PYTHONPATH). "
            + EXIT_STATUS_HELP
        ),
    )
    out.add_argument("target", help="the verifier or scheduler to audit, as module:function")
    kind = out.add_mutually_exclusive_group(required=True)
    kind.add_argument(
        "--signature",
        choices=signature_names(),
        help="audit a verifier with FlashInfer's chain_speculative_sampling, vLLM's "
        "rejection_sample (target probabilities), vllm-logits (the same with raw target logits: "
        "the verifier applies each request's temperature, top-k and top-p), or the batch-1 "
        "logits signature hf(draft_tokens [1, n], draft_logits [1, n, V], target_logits "
        "[1, n + 1, V], temperature) -> tokens [1, m]",
    )
    kind.add_argument(
        "--scheduler",
        action="store_true",
        help="audit a scheduler schedule(confidences, sps) -> list[int], exactly",
    )
    out.add_argument(
        "--drafter",
        metavar="MODULE:FN",
        help="audit this drafting function draft(logits [B, V], temperature) -> (tokens [B], "
        "probs [B, V]) against the probabilities it reports, verified by TARGET",
    )
    out.add_argument(
        "--hunt",
        type=number_above(int, "--hunt"),
        metavar="N",
        help="run N rounds of each rare-event case (where any bug shows as an impossible "
        "output) instead of the default time budget; reports the rate it excludes",
    )
    out.add_argument(
        "--hunt-seconds",
        type=seconds("--hunt-seconds"),
        default=None,
        metavar="S",
        help=f"seconds per rare-event case of the hunt a verifier audit runs by default "
        f"(default {DEFAULT_BUDGET:g}); the report states the rate each case excludes",
    )
    out.add_argument(
        "--no-hunt", action="store_true", help="skip the rare-event hunt (statistical rows only)"
    )
    out.add_argument(
        "--greedy-marker",
        choices=tuple(MARKERS),
        default="0",
        help="temperature that marks greedy requests in vLLM's metadata: 0 (vLLM since PR "
        "27077, October 2025; default) or -1 (older releases)",
    )
    out.add_argument(
        "--json", metavar="PATH", help="also write the report as JSON (folder must exist)"
    )
    out.add_argument(
        "--alpha",
        type=rate_argument("alpha"),
        default=DEFAULT_ALPHA,
        help=f"false-fail rate of each statistical row (default {DEFAULT_ALPHA:g})",
    )
    out.add_argument(
        "--beta",
        type=rate_argument("beta"),
        default=DEFAULT_BETA,
        help=f"miss rate of each row against TV >= delta (default {DEFAULT_BETA:g})",
    )
    out.add_argument(
        "--delta",
        type=rate_argument("delta"),
        default=None,
        help=f"smallest TV distance each row must detect; n grows as 1/delta^2 "
        f"(default {DEFAULT_DELTA:g}; {QUICK_DELTA:g} with --quick)",
    )
    out.add_argument(
        "--quick",
        action="store_true",
        help=f"a shorter audit of a verifier, about a quarter of the default's rounds: every "
        f"statistical row powered against TV >= {QUICK_DELTA:g} instead of {DEFAULT_DELTA:g}, "
        f"and the hunt run {QUICK_HUNT_SECONDS:g} s per case; the report lists what it "
        "leaves out",
    )
    out.add_argument(
        "--tolerance",
        type=tolerance_argument,
        default=DEFAULT_TOLERANCE,
        help=f"TV a correct float32 verifier may differ by (default {DEFAULT_TOLERANCE:g})",
    )
    out.add_argument(
        "--filter-order",
        choices=FILTER_ORDERS,
        help="the engine's order of temperature, min-p, top-k and top-p: vllm (temperature, "
        "min-p, top-k, top-p), sequential (HF: temperature, top-k, top-p, min-p), joint "
        "(top-k and top-p on the same law: FlashInfer, SGLang) or llama.cpp (every cut before "
        "the temperature); default: the signature's engine's",
    )
    out.add_argument(
        "--seed",
        type=seed_argument("--seed"),
        default=0,
        help="seed of the battery and the rounds (0..2^62)",
    )
    out.add_argument(
        "--large-vocab",
        type=number_above(int, "--large-vocab", 1, MAX_VOCAB),
        default=LARGE_VOCAB,
        help=f"vocabulary of the large-vocabulary case (default {LARGE_VOCAB})",
    )
    out.add_argument(
        "--long-vocab",
        type=number_above(int, "--long-vocab", 1, MAX_VOCAB),
        default=LONG_LARGE_VOCAB,
        help="vocabulary of the large-vocab-long case (drafts 0..8), at most --large-vocab "
        f"(default {LONG_LARGE_VOCAB})",
    )
    out.add_argument(
        "--timeout",
        type=seconds("--timeout"),
        default=DEFAULT_TIMEOUT,
        help=f"seconds one case may run before it fails as timed out (default {DEFAULT_TIMEOUT:g})",
    )
    out.add_argument(
        "--max-batch",
        type=number_above(int, "--max-batch"),
        default=DEFAULT_MAX_BATCH,
        help="most requests in one call of the verifier; more rounds take more calls "
        f"(default {DEFAULT_MAX_BATCH}, the order of an engine's batch)",
    )
    out.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return out


def settle_presets(args: argparse.Namespace) -> None:
    """--delta and --hunt-seconds: as given, else the --quick or the default values."""
    if args.delta is None:
        args.delta = QUICK_DELTA if args.quick else DEFAULT_DELTA
    if args.hunt_seconds is None:
        args.hunt_seconds = QUICK_HUNT_SECONDS if args.quick else DEFAULT_BUDGET


def excluded_notes(args: argparse.Namespace, report: AuditReport) -> list[str]:
    """What the run left out because a preset or its time budget was the limit."""
    notes = []
    if args.quick and args.delta > DEFAULT_DELTA:
        notes.append(
            f"--quick: statistical rows are powered (>= {1 - args.beta:g}) against TV >= "
            f"{args.delta:g}, not the default {DEFAULT_DELTA:g}: a discrepancy of TV between "
            f"{DEFAULT_DELTA:g} and {args.delta:g} has no stated power and may pass; run "
            "without --quick to test it"
        )
    hunted = [r for r in report.results if r.check == "hunt" and r.passed and r.n]
    if hunted and not args.hunt:
        rounds = min(r.n or 0 for r in hunted)
        notes.append(
            f"hunt: its time budget ({args.hunt_seconds:g} s per case) was the limit: "
            f"{rounds} rounds in the shortest case, so per-round rates below "
            f"{excluded_rate(rounds):.3g} were not excluded (--hunt N or --hunt-seconds S)"
        )
    return notes


def usage_problem(args: argparse.Namespace) -> str | None:
    """The first usage error in ``args`` (one line naming the argument), or None."""
    if args.quick and not args.signature:
        return "--quick applies to verifiers"
    if args.scheduler and (args.drafter or args.hunt):
        return "--drafter and --hunt apply to verifiers"
    if args.hunt and args.no_hunt:
        return "--hunt and --no-hunt exclude each other"
    if args.delta <= args.tolerance:
        return "--delta must exceed --tolerance"
    if args.json:
        return output_path_problem("--json", args.json)
    return None


def settings_of(args: argparse.Namespace) -> AuditSettings:
    """The one :class:`AuditSettings` of a verifier audit's arguments (after
    :func:`settle_presets`): every row of the battery and of the hunt reads this value."""
    hunt = None
    if not (args.drafter or args.no_hunt):
        hunt = (
            HuntSettings(rounds=args.hunt) if args.hunt else HuntSettings(budget=args.hunt_seconds)
        )
    return AuditSettings.of(
        args.signature,
        rates=ErrorRates(args.alpha, args.beta, args.delta, args.tolerance),
        limits=CallLimits(args.max_batch, args.timeout),
        seed=args.seed,
        marker=MARKERS[args.greedy_marker],
        filter_order=args.filter_order,
        hunt=hunt,
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settle_presets(args)
    problem = usage_problem(args)
    if problem:
        return usage_error(PROG, problem)
    try:
        load_callable(args.target)
        if args.drafter:
            load_callable(args.drafter)
        settings = settings_of(args) if args.signature else None
        problems = (
            verifier_problems(args.seed, args.large_vocab, args.long_vocab, settings.order)
            if settings
            else []
        )
        for case in problems:
            check_enumerable(case)
    except (ImportError, ValueError) as error:
        return usage_error(PROG, str(error))

    def lines(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    progress = None if args.quiet else lines
    bars = None if args.quiet else progress_bar()
    try:
        if settings is None:
            report = audit(args.target, scheduler=True, progress=progress, timeout=args.timeout)
        else:
            report = audit(
                args.target,
                settings=settings,
                drafter=args.drafter,
                progress=progress,
                problems=problems,
                bars=bars,
            )
        hunting = settings is not None and settings.hunt is not None
        if hunting and abandoned_calls():
            hunting = False
            report.notes.append("hunt: not run (a call of the verifier is still running)")
        if hunting:
            from specproof.audit.hunt import hunt_verifier

            assert settings is not None
            hunted = hunt_verifier(load_callable(args.target), settings, bars=bars)
            report.results += hunted.results
            report.notes += hunted.notes
            report.seconds += hunted.seconds
    except (Exception, SystemExit) as error:  # a SystemExit here escaped the guard: our bug
        return internal_error(PROG, error)
    report.notes += excluded_notes(args, report) if args.signature else []
    return publish(PROG, report, args.json)
