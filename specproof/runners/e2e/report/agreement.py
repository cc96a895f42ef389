"""The table of teacher-forced drafter agreement on real and on the target's greedy text."""

from __future__ import annotations

from typing import Any

from specproof.runners.e2e.report.table import table


def agreement_section(results: dict[str, Any]) -> list[str]:
    agreement = results.get("agreement")
    if not agreement:
        return []
    some = next(iter(agreement.values()))
    lines = [
        "### The drafters on real text and on the target's greedy text",
        "",
        f"Teacher-forced, {some['windows']} held-out windows of {some['width']} bytes per "
        f"domain, scored past the first {some['prefix']} bytes: on the real text, and on the "
        "target's greedy continuation of the same first bytes (the text temperature-0 decoding "
        "produces). 'argmax' is how often the drafter's most likely token is the target's "
        "(the acceptance rate of a greedy draft at temperature 0); 'overlap' is "
        "sum_v min(p, q) (the acceptance probability of a sampled draft at temperature 1). "
        "DSpark is scored at every block slot k with the text's own x_{k-1}; the EAGLE-3 "
        "drafter at its first draft only (later ones read its own predicted features).",
        "",
    ]
    rows = []
    for domain, entry in agreement.items():
        for text in ("real", "greedy"):
            for name, label in (("dspark", "DSpark"), ("eagle", "EAGLE-3")):
                scores = entry[text][name]
                rows.append(
                    [
                        f"{domain}/{text}",
                        label,
                        " ".join(f"{x:.2f}" for x in scores["argmax_agreement"]),
                        " ".join(f"{x:.2f}" for x in scores["overlap"]),
                    ]
                )
    lines += table(["text", "drafter", "argmax, k = 1..", "overlap, k = 1.."], rows)
    return lines
