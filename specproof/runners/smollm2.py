"""Fetch SmolLM2-135M-Instruct (once, into the cache) and print its audit model as JSON;
``--acceptance`` also prints each candidate drafter's expected acceptance per position.

    python -m specproof.runners.smollm2 [--cache DIR] [--acceptance]
"""

from __future__ import annotations

import sys
from pathlib import Path

from specproof.commands.command_rules import FOLDER, OneLineParser
from specproof.exit_status import USAGE_ERROR
from specproof.models.smollm2 import MissingExtra, acceptance, smollm2

PROG = "python -m specproof.runners.smollm2"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache",
        type=Path,
        metavar=FOLDER,
        help="cache folder (default $SPECPROOF_CACHE, else ~/.cache/specproof)",
    )
    parser.add_argument("--acceptance", action="store_true", help="also print each candidate "
                        "drafter's expected acceptance per position (about a minute)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        model = smollm2(args.cache, say=lambda text: print(text, file=sys.stderr, flush=True))
    except MissingExtra as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return USAGE_ERROR
    print(model.to_json())
    if args.acceptance:
        for name, values in acceptance(model).items():
            print(f"{name:>10}: {' '.join(f'{v:.3f}' for v in values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
