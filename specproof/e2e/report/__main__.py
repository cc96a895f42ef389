"""Re-render the "e2e" section of BENCHMARKS.md from an existing e2e.json (no measurement)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specproof.sections import replace_section

from .document import markdown


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json_path", type=Path, nargs="?", default=Path("benchmarks/e2e.json"))
    parser.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"))
    args = parser.parse_args(argv)
    results = json.loads(args.json_path.read_text())
    replace_section(args.markdown, "e2e", markdown(results))


if __name__ == "__main__":
    main()
