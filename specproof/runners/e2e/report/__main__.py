"""Re-render benchmarks/e2e.md from an existing e2e.json (no measurement)."""

from __future__ import annotations

from pathlib import Path

from specproof.commands.command_rules import OneLineParser, json_object, output_path_problem
from specproof.runners.e2e.report.document import markdown
from specproof.sections import markers_problem, replace_section

SECTION = "e2e"


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(prog="python -m specproof.runners.e2e.report", description=__doc__)
    parser.add_argument("json_path", type=Path, nargs="?", default=Path("benchmarks/e2e.json"))
    parser.add_argument("--markdown", type=Path, default=Path("benchmarks/e2e.md"))
    args = parser.parse_args(argv)
    if problem := output_path_problem("--markdown", str(args.markdown)):
        parser.error(problem)
    if args.markdown.is_file() and (problem := markers_problem(args.markdown.read_text(), SECTION)):
        parser.error(f"--markdown {args.markdown}: {problem}")
    results = json_object(parser, args.json_path, "JSON_PATH", ("plan",))
    try:
        text = markdown(results)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        parser.error(
            f"JSON_PATH {args.json_path}: not an e2e run's results ({type(error).__name__}: "
            f"{error} is missing or malformed)"
        )
    replace_section(args.markdown, SECTION, text)


if __name__ == "__main__":
    main()
