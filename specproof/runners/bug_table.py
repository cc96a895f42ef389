"""The bug catalogue's public classes, each with the command that catches it; ``--markdown``
prints docs/guide/auditing_a_verifier.md's table of them.

    python -m specproof.runners.bug_table [--markdown]
"""

from __future__ import annotations

from specproof.commands.command_rules import OneLineParser
from specproof.subjects.bugs import CLASSES, command, markdown, public_class

PROG = "python -m specproof.runners.bug_table"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument(
        "--markdown", action="store_true", help="print docs/guide/auditing_a_verifier.md's table"
    )
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown())
    else:
        for known in CLASSES:
            print(f"{public_class(known).title}: {command(known)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
