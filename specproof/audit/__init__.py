"""specproof.audit: run a battery against a user's chain verifier or scheduler.

Verifiers (FlashInfer's ``chain_speculative_sampling`` or vLLM's ``rejection_sample`` signature)
are sampled on table problems and tested against the target's exact law with
:func:`specproof.stats.goodness_of_fit`: every statistical row states its n, TV estimate,
rejection bound, alpha (false-fail rate) and the power 1 - beta against TV >= delta. Schedulers
(the reference's public signature ``schedule(confidences, sps) -> list[int]``) are checked
exactly: the reference's exact output law must equal the target law, TV = 0.

Command: ``specproof audit module:function --signature flashinfer|vllm`` or
``specproof audit module:function --scheduler``; exit status 0 only if every case passes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specproof.reference import (
    BlockRule,
    Case,
    ChainRule,
    SpecInferRule,
    VerificationRule,
    distance_from_target,
)
from specproof.stats import (
    EXACT_CELLS,
    HashPartition,
    goodness_of_fit,
    required_samples,
)

from .cases import LARGE_VOCAB, scheduler_cases, verifier_problems
from .harness import (
    Signature,
    TableProblem,
    Verifier,
    VerifierError,
    exact_length_law,
    exact_output_law,
    observed_classes,
    sample_rounds,
    verifier_round,
)

__all__ = [
    "AuditReport",
    "CaseResult",
    "audit",
    "audit_scheduler",
    "audit_verifier",
    "load_callable",
    "main",
]

DEFAULT_ALPHA = 1e-6
DEFAULT_BETA = 1e-4
DEFAULT_DELTA = 0.05
DEFAULT_TOLERANCE = 1e-4
"""TV a correct float32 verifier may differ by (rounding in its sums and draws)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CaseResult:
    """One row of the audit table. ``n`` is None for exact-law rows (no sampling)."""

    case: str
    check: str
    n: int | None
    tv_estimate: float
    bound: float
    alpha: float
    beta: float | None
    delta: float | None
    verdict: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


@dataclass
class AuditReport:
    subject: str
    kind: str
    results: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    def table(self) -> str:
        header = ("case", "check", "n", "TV estimate", "bound", "alpha", "verdict")
        rows = [
            (
                r.case,
                r.check,
                "exact" if r.n is None else str(r.n),
                f"{r.tv_estimate:.4g}",
                f"{r.bound:.4g}",
                f"{r.alpha:g}",
                r.verdict,
            )
            for r in self.results
        ]
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
        lines = [
            "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
            "  ".join("-" * w for w in widths),
        ]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
        notes = [f"  {r.detail}" for r in self.results if not r.passed and r.detail]
        statistical = [r for r in self.results if r.n is not None and r.beta is not None]
        footer = []
        if statistical:
            r = statistical[0]
            footer.append(
                f"statistical rows: false-fail rate <= alpha each; n gives power >= "
                f"1 - beta = {1 - (r.beta or 0):g} against TV >= delta = {r.delta:g}"
            )
        verdict = "PASS" if self.passed else "FAIL"
        footer.append(f"{self.kind} {self.subject}: {verdict} ({self.seconds:.1f} s)")
        return "\n".join(lines + notes + footer)

    def as_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "passed": self.passed,
            "seconds": self.seconds,
            "results": [{**asdict(r), "passed": r.passed} for r in self.results],
        }


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__)


# Verifiers --------------------------------------------------------------------------------


def _token_partition(law: dict[tuple[int, ...], float], seed: int) -> HashPartition | None:
    return None if len(law) <= EXACT_CELLS else HashPartition(8, salt=seed)


def audit_verifier(
    fn: Verifier,
    signature: Signature,
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    delta: float = DEFAULT_DELTA,
    tolerance: float = DEFAULT_TOLERANCE,
    seed: int = 0,
    problems: Sequence[TableProblem] | None = None,
    subject: str = "",
    progress: Progress | None = None,
) -> AuditReport:
    """Sample ``fn`` on every problem; test the completed tokens' law and the emitted-length law.

    Each problem draws the n that :func:`specproof.stats.required_samples` gives for the
    larger of its two tests, so each row has false-fail rate <= alpha and power >= 1 - beta
    against a TV discrepancy >= delta in the law it tests.
    """
    start = time.perf_counter()
    report = AuditReport(subject or _name(fn), f"{signature} verifier")
    if problems is None:
        problems = verifier_problems(seed)
    for problem in problems:
        if problem.ragged and signature == "flashinfer":
            continue
        tokens_law = exact_output_law(problem)
        length_law = exact_length_law(problem)
        partition = _token_partition(tokens_law, seed)
        token_cells = len(partition.law(tokens_law) if partition else tokens_law)
        extra = 1 if tolerance > 0 else 0
        n = max(
            required_samples(delta, alpha, beta, token_cells + extra, tolerance),
            required_samples(delta, alpha, beta, len(length_law) + extra, tolerance),
        )
        if progress:
            progress(f"{problem.name}: {n} rounds ({problem.description})")
        try:
            sampled = sample_rounds(problem, verifier_round(fn, signature), n, seed)
        except VerifierError as error:
            report.results.append(
                CaseResult(
                    problem.name,
                    "structure",
                    n,
                    1.0,
                    0.0,
                    alpha,
                    beta,
                    delta,
                    "FAIL",
                    f"{problem.name}/structure: {error}",
                )
            )
            continue
        except Exception as error:  # a crash is a failed case, reported with its message
            report.results.append(
                CaseResult(
                    problem.name,
                    "runs",
                    n,
                    1.0,
                    0.0,
                    alpha,
                    beta,
                    delta,
                    "FAIL",
                    f"{type(error).__name__}: {error}",
                )
            )
            continue
        checks = (
            ("tokens", observed_classes(problem, sampled.outputs), tokens_law, partition),
            ("length", [int(v) for v in sampled.lengths], length_law, None),
        )
        for check, samples, law, part in checks:
            fit = goodness_of_fit(
                samples,
                law,
                alpha=alpha,
                beta=beta,
                delta=delta,
                tolerance=tolerance,
                partition=part,
                name=f"{problem.name}/{check}",
            )
            report.results.append(
                CaseResult(
                    problem.name,
                    check,
                    fit.n,
                    fit.tv_estimate,
                    fit.bound,
                    alpha,
                    beta,
                    delta,
                    fit.verdict,
                    fit.describe(),
                )
            )
    report.seconds = time.perf_counter() - start
    return report


# Schedulers -------------------------------------------------------------------------------


def default_rules() -> list[VerificationRule]:
    return [ChainRule(), SpecInferRule(2), BlockRule()]


def audit_scheduler(
    fn: Callable[..., list[int]],
    *,
    cases: Sequence[Case] | None = None,
    rules: Sequence[VerificationRule] | None = None,
    subject: str = "",
    progress: Progress | None = None,
) -> AuditReport:
    """Exact law of the reference decoder with ``fn`` as scheduler, for every case x rule; a
    case passes only if the output law equals the target law exactly (TV = 0)."""
    start = time.perf_counter()
    report = AuditReport(subject or _name(fn), "scheduler")
    for case in cases if cases is not None else scheduler_cases():
        for rule in rules if rules is not None else default_rules():
            if progress:
                progress(f"{case.name} x {rule.name}: exact law")
            try:
                tv = distance_from_target(case.decoder(fn, rule), case.prompts, case.num_tokens)
            except Exception as error:
                report.results.append(
                    CaseResult(
                        case.name,
                        rule.name,
                        None,
                        1.0,
                        0.0,
                        0.0,
                        None,
                        None,
                        "FAIL",
                        f"{case.name}/{rule.name}: {type(error).__name__}: {error}",
                    )
                )
                continue
            detail = f"{case.name}/{rule.name}: exact TV from the target law = {tv} (lossy)"
            report.results.append(
                CaseResult(
                    case.name,
                    rule.name,
                    None,
                    float(tv),
                    0.0,
                    0.0,
                    None,
                    None,
                    "pass" if tv == 0 else "FAIL",
                    detail,
                )
            )
    report.seconds = time.perf_counter() - start
    return report


# Entry points -----------------------------------------------------------------------------


def load_callable(path: str) -> Callable[..., Any]:
    """Import ``module:function`` (the function may be a dotted attribute path)."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"expected module:function, got {path!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{path} is not callable")
    return target


def audit(
    path: str,
    *,
    signature: Signature | None = None,
    scheduler: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> AuditReport:
    """Audit the callable at ``path`` as a verifier (``signature``) or as a scheduler."""
    if (signature is None) == (not scheduler):
        raise ValueError("give exactly one of signature= (a verifier) or scheduler=True")
    fn = load_callable(path)
    if scheduler:
        return audit_scheduler(fn, subject=path, progress=progress, **options)
    assert signature is not None
    return audit_verifier(fn, signature, subject=path, progress=progress, **options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="specproof audit",
        description="Audit a chain verifier (statistically) or a scheduler (exactly).",
    )
    parser.add_argument("target", help="import path module:function")
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--signature", choices=["flashinfer", "vllm"], help="verifier signature")
    kind.add_argument("--scheduler", action="store_true", help="a scheduler callable")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA, help="false-fail rate per row"
    )
    parser.add_argument("--beta", type=float, default=DEFAULT_BETA, help="miss rate at delta")
    parser.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="TV to detect")
    parser.add_argument(
        "--tolerance", type=float, default=DEFAULT_TOLERANCE, help="TV allowed for float rounding"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--large-vocab",
        type=int,
        default=LARGE_VOCAB,
        help="vocabulary of the large-vocabulary case",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    options: dict[str, Any] = {}
    if args.signature:
        options = {
            "alpha": args.alpha,
            "beta": args.beta,
            "delta": args.delta,
            "tolerance": args.tolerance,
            "seed": args.seed,
            "problems": verifier_problems(args.seed, args.large_vocab),
        }
    try:
        report = audit(
            args.target,
            signature=args.signature,
            scheduler=args.scheduler,
            progress=None if args.quiet else progress,
            **options,
        )
    except (ImportError, AttributeError, ValueError) as error:
        print(f"specproof audit: {error}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if report.passed else 1
