"""The ``specproof golden`` command: write the golden law vectors and their schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

from specproof.commands.command_rules import OneLineParser, output_path_problem, usage_error
from specproof.golden.schema import golden_schema
from specproof.golden.vectors import VERSION, golden_vectors

PROG = "specproof golden"
VECTORS = "chain_vectors.json"
SCHEMA = "chain_vectors.schema.json"


SCALAR_LIST = re.compile(r"\[\s*([^\[\]{}]*?)\s*\]", re.S)


def dumps(document: object) -> str:
    """Indented JSON with every list of scalars on one line (a row reads as a row)."""
    text = json.dumps(document, indent=1)
    return SCALAR_LIST.sub(lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def write_golden(out: Path) -> list[Path]:
    """Write the vectors and the schema into ``out`` (created if missing)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / VECTORS, out / SCHEMA]
    written[0].write_text(dumps(golden_vectors()))
    written[1].write_text(dumps(golden_schema()))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog=PROG,
        description=(
            f"Write the golden law vectors (version {VERSION}) of chain verification and their "
            "JSON Schema into DIR: boundary cases with the exact law of one round and the exact "
            "outputs for injected uniforms, computed by the reference."
        ),
    )
    parser.add_argument("--out", metavar="DIR", required=True, help="folder to write into")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return usage_error(PROG, f"--out {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return usage_error(PROG, f"--out {out}: cannot be created ({error.strerror or error})")
    for name in (VECTORS, SCHEMA):
        problem = output_path_problem("--out", str(out / name))
        if problem:
            return usage_error(PROG, problem)
    for path in write_golden(out):
        print(f"wrote {path}")
    return 0
