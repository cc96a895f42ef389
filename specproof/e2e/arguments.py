"""Argument checks shared by the e2e commands: numbers in range (one line naming the argument,
exit 2, before any work), weights loaded up front so a bad file is a usage error that names
it rather than a traceback after the work, and a command's JSON result written to ``--out``."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from specproof.command_rules import USAGE_ERROR, usage_error

T = TypeVar("T")


def integer_at_least(name: str, low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{name} must be at least {low}, got {text}")
        return value

    return parse


def number_in(name: str, low: float, high: float) -> Callable[[str], float]:
    """A finite number with low < value <= high."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not (math.isfinite(value) and low < value <= high):
            raise argparse.ArgumentTypeError(f"{name} must be in ({low:g}, {high:g}], got {text}")
        return value

    return parse


def loaded(prog: str, option: str, load: Callable[[], T]) -> T:
    """``load()``; a missing or bad weights file (ValueError, OSError) exits 2 with one line
    naming ``option`` and the file."""
    try:
        return load()
    except (ValueError, OSError) as error:
        usage_error(prog, f"{option}: {error}")
        raise SystemExit(USAGE_ERROR) from None


def write_result(result: dict[str, Any], out: Path | None) -> str:
    """``result`` as indented JSON, written to ``out`` when one is given; the text is returned."""
    text = json.dumps(result, indent=1) + "\n"
    if out is not None:
        out.write_text(text)
    return text


def json_object(
    parser: argparse.ArgumentParser, path: Path, what: str, keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The JSON object in ``path``; otherwise a usage error (one line, exit 2) naming ``what``
    and the file: missing, unreadable, not JSON, not an object, or without one of ``keys``."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"{what}: cannot read {path}: {getattr(error, 'strerror', None) or error}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        parser.error(f"{what}: {path} is not JSON ({error.msg}, line {error.lineno})")
    if not isinstance(value, dict):
        parser.error(f"{what}: {path} holds a JSON {type(value).__name__}, not an object")
    missing = [key for key in keys if key not in value]
    if missing:
        parser.error(f"{what}: {path} has no {', '.join(repr(k) for k in missing)}")
    return value
