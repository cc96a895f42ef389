"""specproof: exact losslessness checks for speculative decoders.

specproof matrix   decode the built-in models with every verification rule and scheduler and
                   print each output law's exact TV distance from the target's law
specproof audit    run your own verifier or scheduler against exact laws (see
                   `specproof audit --help`)
specproof audit-engine
                   run a whole generate loop (HF transformers' assisted generation, or your
                   own) against the target's law (see `specproof audit-engine --help`);
                   `specproof audit-engine ENGINE --model PATH` audits an installed engine in
                   place on your model (see `specproof audit-engine ENGINE --help`)
specproof engines  list the engines the audit knows, what each drafts with, and whether it is
                   installed here
specproof golden   write the golden law vectors of chain verification and their JSON Schema
specproof parity-report
                   audit a verifier or an engine and write report.md with plots for a pull
                   request (see `specproof parity-report --help`)
"""

from __future__ import annotations

import argparse
import json
import sys

from specproof.commands.command_rules import (
    INTERNAL_ERROR,
    PASSED,
    OneLineParser,
    end_process,
    internal_error,
    output_path_problem,
    usage_error,
    write_report,
)

PROG = "specproof"


def _matrix(args: argparse.Namespace) -> int:
    if args.json and (problem := output_path_problem("--json", args.json)):
        return usage_error(f"{PROG} matrix", problem)
    from specproof.matrix import compute_matrix, render, stderr_progress, to_json

    try:
        matrix = compute_matrix(progress=None if args.quiet else stderr_progress)
    except Exception as error:
        return internal_error(f"{PROG} matrix", error)
    print(render(matrix))
    if args.json:
        text = json.dumps(to_json(matrix), indent=2) + "\n"
        if write_report(f"{PROG} matrix", args.json, text) is not None:
            return INTERNAL_ERROR
        print(f"wrote {args.json}")
    return PASSED


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` names and return its exit status. Without ``argv`` (run as the
    program) the command line is ``sys.argv`` and the process ends here with that status
    (:func:`specproof.commands.command_rules.end_process`): never a signal, never a wait on a thread
    the audited subject left running."""
    if argv is not None:
        return _run(list(argv))
    try:
        status = _run(sys.argv[1:])
    except SystemExit as done:  # argparse's --help and usage errors
        status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except KeyboardInterrupt:
        status = 130
    except Exception as error:
        status = internal_error(PROG, error)
    end_process(status)


def _run(argv: list[str]) -> int:
    parser = OneLineParser(
        prog="specproof", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    matrix = commands.add_parser(
        "matrix",
        help="exact TV from the target law, rule x scheduler",
        description=(
            "Decode the built-in two-request case (V = 3, gamma = 3, N = 3, bigram target, "
            "prefix-dependent drafter confidences, jagged SPS curve) with the chain, greedy, "
            "tree, SpecInfer and block rules under every scheduler; compute each decoder's "
            "exact joint law of the first N tokens with rational arithmetic and print its "
            "total-variation distance from the target's own law ('exact' means exactly 0). "
            "Also prints Appendix A's first-token laws with and without the break."
        ),
    )
    matrix.add_argument("--json", metavar="PATH", help="also write the matrix as JSON")
    matrix.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    commands.add_parser(
        "audit", help="audit a verifier or scheduler (see `specproof audit --help`)", add_help=False
    )
    commands.add_parser(
        "audit-engine",
        help="audit a whole generate loop (see `specproof audit-engine --help`)",
        add_help=False,
    )
    commands.add_parser("engines", help="the engines the audit knows", add_help=False)
    commands.add_parser("golden", help="write the golden law vectors", add_help=False)
    commands.add_parser(
        "parity-report", help="write a parity report for a pull request", add_help=False
    )
    if argv and argv[0] == "golden":
        from specproof.commands.golden import main as golden_main

        return int(golden_main(argv[1:]))
    if argv and argv[0] == "parity-report":
        from specproof.commands.parity_report import main as parity_main

        return int(parity_main(argv[1:]))
    if argv and argv[0] == "engines":
        from specproof.commands.engines import list_main

        return list_main(argv[1:])
    if argv and argv[0] == "audit-engine" and len(argv) > 1 and not argv[1].startswith("-"):
        from specproof.commands.engines import audit_main

        return audit_main(argv[1:])
    if argv and argv[0] == "audit-engine":
        from specproof.commands.audit_engine import main as engine_main

        return int(engine_main(argv[1:]))
    if argv and argv[0] == "audit":
        from specproof.commands.audit import main as audit_main

        return int(audit_main(argv[1:]))
    args = parser.parse_args(argv)
    return _matrix(args)


if __name__ == "__main__":
    main()
