"""Batch-1 latency of every decoder, and the EAGLE-3 gamma that matches DSpark's drafting
time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specproof.reference.schedulers import Algorithm1, FixedGamma

from ..models.loading import Models
from ..plans import TEMPERATURES, Plan
from .comparisons import (
    Setting,
    drafting_ms,
    phase_breakdown,
    speculative_decoder,
    target_decoder,
    target_step_ms,
    with_gamma,
)
from .measurements import batched, summary
from .paired_runs import Decoder, interleaved, speed_entry


def measure_latency(
    models: Models,
    plan: Plan,
    setting: Setting,
    prompts: dict[str, list[list[int]]],
    sts_fits: dict[str, dict[str, Any]],
    sps_one: Callable[[int], float],
    eagle_gamma_matched: int,
    seed: int,
) -> dict[str, Any]:
    """Batch size 1: every decoder on every prompt, per domain and temperature."""
    gamma = plan.dspark.gamma
    target, dspark, eagle = models.target, models.dspark, models.eagle
    out: dict[str, Any] = {}
    for domain, domain_prompts in prompts.items():
        chunks = batched(domain_prompts[: plan.latency_prompts], 1)
        for temperature in TEMPERATURES:
            sts = sts_fits[f"{temperature:g}"]["temperatures"]
            decoders: dict[str, Decoder] = {
                "DSpark + Algorithm 1": speculative_decoder(
                    target, dspark, setting, temperature, Algorithm1(), seed, sps_one, sts
                ),
                f"DSpark, fixed gamma={gamma}": speculative_decoder(
                    target, dspark, setting, temperature, FixedGamma(), seed
                ),
                f"EAGLE-3, fixed gamma={gamma}": speculative_decoder(
                    target, eagle, setting, temperature, FixedGamma(), seed
                ),
                "target only": target_decoder(target, setting, temperature, seed + 1),
            }
            if eagle_gamma_matched != gamma:
                decoders[f"EAGLE-3, gamma={eagle_gamma_matched} (DSpark's drafting time)"] = (
                    speculative_decoder(
                        target,
                        with_gamma(eagle, eagle_gamma_matched),
                        setting,
                        temperature,
                        FixedGamma(),
                        seed,
                    )
                )
            key = f"{domain}/T={temperature:g}"
            runs = interleaved(decoders, chunks, seed + 7)
            rows: dict[str, Any] = {}
            for label, decoded in runs.items():
                speed = speed_entry(decoded, runs["target only"])
                if label == "target only":
                    rows[label] = {
                        "tau": 1.0,
                        **speed,
                        "step_ms": target_step_ms(decoded, setting.new_tokens),
                    }
                else:
                    rows[label] = {
                        **summary(decoded, gamma),
                        **speed,
                        "breakdown_ms": phase_breakdown(decoded),
                    }
            out[key] = rows
            print(
                f"B=1 {key}: "
                + ", ".join(
                    f"{k} tau {v['tau']:.2f} x{v['speed_vs_target']:.2f}" for k, v in rows.items()
                )
            )
    return out


def matched_eagle_gamma(
    models: Models, setting: Setting, chunks: Sequence[list[list[int]]], seed: int
) -> dict[str, Any]:
    """The EAGLE-3 gamma whose drafting time per round is closest to DSpark's block
    (batch 1, temperature 1, calibration prompts)."""
    gamma = models.dspark.gamma
    decoders = {
        "dspark": speculative_decoder(
            models.target, models.dspark, setting, 1.0, FixedGamma(), seed
        ),
        **{
            str(g): speculative_decoder(
                models.target, with_gamma(models.eagle, g), setting, 1.0, FixedGamma(), seed
            )
            for g in range(1, gamma + 1)
        },
    }
    runs = interleaved(decoders, chunks, seed)
    times = {name: drafting_ms(results) for name, results in runs.items()}
    eagle_times = {int(g): t for g, t in times.items() if g != "dspark"}
    best = min(eagle_times, key=lambda g: (abs(eagle_times[g] - times["dspark"]), -g))
    return {"gamma": best, "dspark_draft_ms": times["dspark"], "eagle_draft_ms": eagle_times}
