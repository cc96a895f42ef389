"""STS's two claims, judged position by position on a run's held-out ECE check.

    python -m specproof.runners.e2e.experiments.sts_claims [--json FILE]

Reads ``sts_held_out`` of a run's JSON (``python -m specproof.runners.e2e.run``; by default the
committed ``benchmarks/e2e.json``): per decoding temperature and position k, the held-out ECE
of a_k before and after STS and the 95 % paired percentile bootstrap interval of the change
(after - before; :func:`specproof.e2e.evaluation.calibration.ece_change_by_position`). The
claims:

- T = 1, non-inferior: the change is below ``MARGIN`` (0.01) at every position, shown when the
  interval's upper end is below the margin;
- T = 0, lower at positions 2-7: shown when the interval's upper end is below 0.

Each position's check is a one-sided test at about 0.025 (the upper end of a two-sided 95 %
interval; bootstrap, so approximate), none corrected for the positions. Its power is given
from the normal approximation with the standard error read off the interval (width / 3.92):
at T = 1 against no change, P(pass) = Phi(margin / se - 1.96); at T = 0 against a true fall of
``FALL`` (0.01), Phi(0.01 / se - 1.96).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specproof.commands.command_rules import OneLineParser, json_object

MARGIN = 0.01
FALL = 0.01
LOWER_POSITIONS = range(2, 8)
DEFAULT_JSON = Path(__file__).resolve().parents[4] / "benchmarks" / "e2e.json"


def normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def power(row: dict[str, float], distance: float) -> float:
    """P(the interval's upper end falls below ``distance`` above the truth), normal
    approximation with the interval's standard error."""
    se = (row["change_high"] - row["change_low"]) / 3.92
    return 1.0 if se == 0 else normal_cdf(distance / se - 1.96)


ROW_KEYS = ("position", "change", "change_low", "change_high")


def held_out_problem(held_out: Any) -> str | None:
    """What keeps :func:`judged` from reading ``held_out``, or None."""
    if not isinstance(held_out, dict):
        return f"is a JSON {type(held_out).__name__}, not an object"
    for temperature in ("1", "0"):
        entry = held_out.get(temperature)
        if not isinstance(entry, dict) or "blocks" not in entry:
            return f"has no {temperature!r} entry with 'blocks' and 'by_position'"
        rows = entry.get("by_position")
        if not isinstance(rows, list):
            return f"[{temperature!r}] has no 'by_position' list"
        for i, row in enumerate(rows):
            missing = [k for k in ROW_KEYS if not isinstance(row, dict) or k not in row]
            if missing:
                return f"[{temperature!r}].by_position[{i}] has no {', '.join(missing)}"
            if not all(isinstance(row[k], int | float) for k in ROW_KEYS):
                return f"[{temperature!r}].by_position[{i}] holds a value that is not a number"
    return None


def judged(held_out: dict[str, Any]) -> dict[str, Any]:
    """Per position, pass or not, for the T = 1 and the T = 0 claim."""
    hot = [
        {
            "position": row["position"],
            "change": row["change"],
            "upper": row["change_high"],
            "pass": row["change_high"] < MARGIN,
            "power_at_no_change": power(row, MARGIN),
        }
        for row in held_out["1"]["by_position"]
    ]
    greedy = [
        {
            "position": row["position"],
            "change": row["change"],
            "upper": row["change_high"],
            "pass": row["change_high"] < 0,
            "power_at_fall": power(row, FALL),
        }
        for row in held_out["0"]["by_position"]
        if row["position"] in LOWER_POSITIONS
    ]
    return {
        "T=1 non-inferior": {
            "margin": MARGIN,
            "blocks": held_out["1"]["blocks"],
            "by_position": hot,
            "every_position": all(r["pass"] for r in hot),
        },
        "T=0 lower at 2-7": {
            "fall_for_power": FALL,
            "blocks": held_out["0"]["blocks"],
            "by_position": greedy,
            "every_position": all(r["pass"] for r in greedy),
        },
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.experiments.sts_claims",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="a run's JSON")
    args = parser.parse_args(argv)
    held_out = json_object(parser, args.json, "--json", ("sts_held_out",))["sts_held_out"]
    if problem := held_out_problem(held_out):
        parser.error(f"--json: {args.json}: sts_held_out {problem}")
    result = judged(held_out)
    for claim, entry in result.items():
        shown = [r["position"] for r in entry["by_position"] if r["pass"]]
        verdict = "shown at every position" if entry["every_position"] else f"shown at {shown}"
        print(f"{claim} ({entry['blocks']} held-out blocks): {verdict}")
        for row in entry["by_position"]:
            power_key = "power_at_no_change" if "power_at_no_change" in row else "power_at_fall"
            print(
                f"  k={row['position']}: change {row['change']:+.4f}, upper {row['upper']:+.4f}"
                f" -> {'pass' if row['pass'] else 'not shown'} (power {row[power_key]:.2f})"
            )
    return result


if __name__ == "__main__":
    main()
