"""Sequential Temperature Scaling in a run: fitted on decodes of the calibration prompts, then
checked on decodes of other, held-out prompts, position by position."""

from __future__ import annotations

from typing import Any

from specproof.reference.schedulers import FixedGamma

from ..decoding.rounds import DecodeResult
from ..models.loading import Models
from ..plans import TEMPERATURES
from .calibration import ece_change_by_position, fit_sts
from .comparisons import Setting, speculative_decoder
from .measurements import batched, confidence_records


def decode_blocks(
    models: Models,
    setting: Setting,
    temperature: float,
    prompts: dict[str, list[list[int]]],
    requests: int,
    seed: int,
) -> list[DecodeResult]:
    """Decode every prompt with DSpark at fixed gamma, ``requests`` prompts per chunk."""
    decode = speculative_decoder(
        models.target, models.dspark, setting, temperature, FixedGamma(), seed
    )
    return [
        decode(chunk, i)
        for domain_prompts in prompts.values()
        for i, chunk in enumerate(batched(domain_prompts, requests))
    ]


def fit_sts_by_temperature(
    models: Models,
    setting: Setting,
    prompts: dict[str, list[list[int]]],
    requests: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """One STS fit per decoding temperature, on the blocks of all domains pooled."""
    fits: dict[str, dict[str, Any]] = {}
    for temperature in TEMPERATURES:
        runs = decode_blocks(models, setting, temperature, prompts, requests, seed)
        logits, accepted = confidence_records(runs)
        fitted = fit_sts(logits, accepted)
        fits[f"{temperature:g}"] = {"temperatures": fitted, "blocks": len(accepted)}
        print(f"STS temperatures fitted at T={temperature:g}: {[round(t, 3) for t in fitted]}")
    return fits


def held_out_check(
    models: Models,
    setting: Setting,
    prompts: dict[str, list[list[int]]],
    requests: int,
    fits: dict[str, dict[str, Any]],
    seed: int,
) -> dict[str, Any]:
    """Per-position ECE before and after each temperature's own fit, on held-out prompts'
    blocks (all domains pooled), with paired bootstrap intervals of the change."""
    out: dict[str, Any] = {}
    for temperature in TEMPERATURES:
        key = f"{temperature:g}"
        runs = decode_blocks(models, setting, temperature, prompts, requests, seed)
        logits, accepted = confidence_records(runs)
        rows = ece_change_by_position(logits, accepted, fits[key]["temperatures"], seed=seed)
        out[key] = {
            "blocks": len(accepted),
            "by_position": rows,
            "lower_everywhere": all(r["change"] < 0 for r in rows),
            "shown_lower_everywhere": all(r["change_high"] < 0 for r in rows),
        }
        print(
            f"held-out ECE at T={key} ({len(accepted)} blocks), before -> after: "
            + ", ".join(f"{r['ece_before']:.3f}->{r['ece_after']:.3f}" for r in rows)
        )
    return out
