"""docs/reference/commands.md names every option each ``specproof`` command takes, and
docs/reference/engines.md lists exactly the registered engines: when a command gains an option
or the registry an engine, the reference page fails here until it says so."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from specproof.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
COMMANDS_PAGE = ROOT / "docs" / "reference" / "commands.md"
ENGINES_PAGE = ROOT / "docs" / "reference" / "engines.md"
OPTION = re.compile(r"^  (?:-\w, )?(--[a-z][a-z-]*)", flags=re.MULTILINE)
"""An option as argparse's help lists it: two spaces in, short form first if any."""
COMMANDS = {
    "specproof matrix": ["matrix"],
    "specproof audit": ["audit"],
    "specproof audit-engine": ["audit-engine"],
    "specproof audit-engine ENGINE --model": ["audit-engine", "hf"],
    "specproof engines": ["engines"],
    "specproof golden": ["golden"],
    "specproof parity-report": ["parity-report", "verifier"],
}


def help_text(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0, argv
    return out.getvalue()


def section(text: str, heading: str) -> str:
    """The body of ``## heading`` up to the next ``## ``."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    bodies = dict(zip(parts[1::2], parts[2::2], strict=True))
    assert heading in bodies, f"commands.md has no section '## {heading}'"
    return bodies[heading]


@pytest.mark.parametrize("heading", COMMANDS)
def test_every_option_of_a_command_is_on_the_page(heading: str) -> None:
    argv = COMMANDS[heading]
    options = set(OPTION.findall(help_text(argv))) - {"--help"}
    if argv[0] == "parity-report":
        options |= set(OPTION.findall(help_text(["parity-report", "engine"]))) - {"--help"}
    body = section(COMMANDS_PAGE.read_text(), heading)
    assert options, heading
    missing = sorted(option for option in options if f"`{option}" not in body)
    assert not missing, f"commands.md, '{heading}' does not name {missing}"


def test_the_engines_page_lists_the_registry() -> None:
    from specproof.adapters.registry import engine_names

    listed = re.findall(r"^\| `([^`]+)` \|", ENGINES_PAGE.read_text(), flags=re.MULTILINE)
    assert sorted(listed) == sorted(engine_names())


def test_a_missing_option_is_caught() -> None:
    page = "## specproof matrix\n\n| `--json PATH` | ... |\n\n## next\n"
    body = section(page, "specproof matrix")
    assert "`--json" in body and "`--quiet" not in body
