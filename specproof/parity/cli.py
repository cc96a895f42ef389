"""The ``specproof parity-report`` command: audit a verifier or an engine, write report.md."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from specproof.audit.engine.audit import DEFAULT_TOKENS
from specproof.audit.signatures import signature_names
from specproof.command_rules import (
    OneLineParser,
    internal_error,
    output_path_problem,
    usage_error,
)
from specproof.testing.levels import DEFAULT_LEVEL, LEVELS

PROG = "specproof parity-report"
PLOT_CASE = "small-vocab"
REPORT = "report.md"


def parser() -> argparse.ArgumentParser:
    out = OneLineParser(
        prog=PROG,
        description=(
            "Audit a chain verifier (function level) or a whole engine (engine level) with the "
            "rows of `specproof audit` / `specproof audit-engine` and its must-fail twin, and "
            "write DIR/report.md for a pull request: the verdict on the first line, the exact "
            "command, versions, seed, alpha and power, the row table, and per position the "
            "observed token frequencies against the exact law with intervals (PNG plots when "
            "matplotlib is installed). Exit status 0: every row passed and the twin failed; "
            "1: a row failed or the twin passed; 2: usage error; 3: internal error; 4: "
            "inconclusive (no row failed, but the rows fall short of the stated power)."
        ),
    )
    subjects = out.add_subparsers(dest="subject", required=True, parser_class=OneLineParser)
    verifier = subjects.add_parser("verifier", help="a chain verifier (function level)")
    verifier.add_argument("path", metavar="MODULE:FN", help="the verifier")
    verifier.add_argument("--signature", choices=signature_names(), required=True)
    verifier.add_argument(
        "--cases", metavar="A,B", help="audit cases to run (default: the pytest plugin's)"
    )
    verifier.add_argument(
        "--plot-case", default=PLOT_CASE, help=f"case whose positions are shown ({PLOT_CASE})"
    )
    engine = subjects.add_parser("engine", help="a whole engine (engine level)")
    engine.add_argument("path", metavar="MODULE:FN", help="FN() returns an Engine")
    engine.add_argument(
        "--tokens",
        type=int,
        default=DEFAULT_TOKENS,
        help=f"new tokens per run ({DEFAULT_TOKENS})",
    )
    for sub in (verifier, engine):
        sub.add_argument("--out", metavar="DIR", required=True, help="folder for report.md")
        sub.add_argument("--level", choices=sorted(LEVELS), default=DEFAULT_LEVEL)
        sub.add_argument("--seed", type=int, default=0)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return usage_error(PROG, f"--out {out} exists and is not a folder")
    if args.subject == "engine" and not 1 <= args.tokens <= 64:
        return usage_error(PROG, f"--tokens must be in 1..64, got {args.tokens}")
    if not 0 <= args.seed < 2**62:
        return usage_error(PROG, f"--seed must be in 0..2^62, got {args.seed}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return usage_error(PROG, f"--out {out}: cannot be created ({error.strerror or error})")
    problem = output_path_problem("--out", str(out / REPORT))
    if problem:
        return usage_error(PROG, problem)
    from .run import engine_report, verifier_report

    command = "specproof parity-report " + shlex.join(argv)
    try:
        if args.subject == "verifier":
            cases = None if args.cases is None else tuple(args.cases.split(","))
            text, status = verifier_report(
                args.path, args.signature, out, command=command, level=args.level,
                seed=args.seed, cases=cases, plot_case=args.plot_case,
            )  # fmt: skip
        else:
            text, status = engine_report(
                args.path, out, command=command, level=args.level, seed=args.seed,
                tokens=args.tokens,
            )  # fmt: skip
    except ValueError as error:
        return usage_error(PROG, str(error))
    except Exception as error:
        return internal_error(PROG, error)
    (out / REPORT).write_text(text)
    print(text.splitlines()[0])
    print(f"wrote {out / REPORT}")
    return status
