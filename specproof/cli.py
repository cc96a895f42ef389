"""specproof: exact losslessness checks for speculative decoders.

specproof matrix   decode the built-in models with every verification rule and scheduler and
                   print each output law's exact TV distance from the target's law
specproof audit    run your own verifier or scheduler against exact laws (see
                   `specproof audit --help`)
specproof audit-engine
                   run a whole generate loop (HF transformers' assisted generation, or your
                   own) against the target's law (see `specproof audit-engine --help`)
specproof golden   write the golden law vectors of chain verification and their JSON Schema
specproof parity-report
                   audit a verifier or an engine and write report.md with plots for a pull
                   request (see `specproof parity-report --help`)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _matrix(args: argparse.Namespace) -> int:
    from specproof.matrix import compute_matrix, render, stderr_progress, to_json

    matrix = compute_matrix(progress=None if args.quiet else stderr_progress)
    print(render(matrix))
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(matrix), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
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
    commands.add_parser("golden", help="write the golden law vectors", add_help=False)
    commands.add_parser(
        "parity-report", help="write a parity report for a pull request", add_help=False
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "golden":
        from specproof.golden.cli import main as golden_main

        return int(golden_main(argv[1:]))
    if argv and argv[0] == "parity-report":
        from specproof.parity.cli import main as parity_main

        return int(parity_main(argv[1:]))
    if argv and argv[0] == "audit-engine":
        from specproof.audit.engine.cli import main as engine_main

        return int(engine_main(argv[1:]))
    if argv and argv[0] == "audit":
        from specproof.audit import main as audit_main

        return int(audit_main(argv[1:]))
    args = parser.parse_args(argv)
    return _matrix(args)


if __name__ == "__main__":
    sys.exit(main())
