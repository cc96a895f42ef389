"""The ``specproof parity-report`` command: audit a verifier or an engine, write report.md."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from specproof.audit.engine.audit import DEFAULT_TOKENS, ENGINE_TIMEOUT
from specproof.audit.engine.runs import SetupError
from specproof.audit.settings import DEFAULT_MAX_BATCH, DEFAULT_TIMEOUT
from specproof.audit.signatures import signature_names
from specproof.commands.command_rules import (
    OneLineParser,
    internal_error,
    output_path_problem,
    positive_whole_number,
    seconds,
    seed_argument,
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
            "matplotlib is installed). Every call of the subject goes through the audit's "
            "guard: a subject (or engine factory) that raises, exits or runs past --timeout "
            "fails a row, and the report is still written. Exit status 0: every row passed and "
            "the twin failed; 1: a row failed, or the twin passed or could not run; 2: usage "
            "error (one line, before any work); 3: internal error; 4: inconclusive (no row "
            "failed, but the rows fall short of the stated power)."
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
    verifier.add_argument(
        "--timeout",
        type=seconds("--timeout"),
        default=DEFAULT_TIMEOUT,
        help=f"seconds one case may run before it fails as timed out ({DEFAULT_TIMEOUT:g})",
    )
    verifier.add_argument(
        "--max-batch",
        type=positive_whole_number("--max-batch"),
        default=DEFAULT_MAX_BATCH,
        help=f"most requests in one call of the verifier ({DEFAULT_MAX_BATCH})",
    )
    engine = subjects.add_parser("engine", help="a whole engine (engine level)")
    engine.add_argument("path", metavar="MODULE:FN", help="FN() returns an Engine")
    engine.add_argument(
        "--tokens",
        type=int,
        default=DEFAULT_TOKENS,
        help=f"new tokens per run ({DEFAULT_TOKENS})",
    )
    engine.add_argument(
        "--timeout",
        type=seconds("--timeout"),
        default=ENGINE_TIMEOUT,
        help="seconds the factory, each engine audit and the redraw may each run before the "
        f"call still running fails the timeout row ({ENGINE_TIMEOUT:g})",
    )
    for sub in (verifier, engine):
        sub.add_argument("--out", metavar="DIR", required=True, help="folder for report.md")
        sub.add_argument("--level", choices=sorted(LEVELS), default=DEFAULT_LEVEL)
        sub.add_argument("--seed", type=seed_argument("--seed"), default=0, help="0..2^62")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return usage_error(PROG, f"--out {out} exists and is not a folder")
    if args.subject == "engine" and not 1 <= args.tokens <= 64:
        return usage_error(PROG, f"--tokens must be in 1..64, got {args.tokens}")
    cases = None
    if args.subject == "verifier" and args.cases is not None:
        cases = tuple(args.cases.split(","))
        if "" in cases:
            return usage_error(PROG, f"--cases has an empty name: {args.cases!r}")
    from specproof.parity.run import (
        EngineRequest,
        VerifierRequest,
        prepare_engine_report,
        prepare_verifier_report,
    )

    command = "specproof parity-report " + shlex.join(argv)
    try:  # every argument checked (the subject imported, not yet called) before any work
        if args.subject == "verifier":
            request = VerifierRequest(
                args.path, args.signature, args.level, args.seed, cases, args.plot_case,
                args.timeout, args.max_batch,
            )  # fmt: skip
            work = prepare_verifier_report(request, out, command=command)
        else:
            engine = EngineRequest(args.path, args.level, args.seed, args.tokens, args.timeout)
            work = prepare_engine_report(engine, out, command=command)
    except ValueError as error:
        return usage_error(PROG, str(error))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return usage_error(PROG, f"--out {out}: cannot be created ({error.strerror or error})")
    problem = output_path_problem("--out", str(out / REPORT))
    if problem:
        return usage_error(PROG, problem)
    try:
        text, status = work()
    except SetupError as error:  # the engine's prompt or EOS does not fit its target
        return usage_error(PROG, str(error))
    except Exception as error:  # the subject's failures are rows: this is specproof's own
        return internal_error(PROG, error)
    (out / REPORT).write_text(text)
    print(text.splitlines()[0])
    print(f"wrote {out / REPORT}")
    return status
