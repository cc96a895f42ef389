"""The fixed-gamma evaluation table: per domain and temperature, DSpark and EAGLE-3 at the full
block against the target alone (tau, paired speed, phase breakdown), and DSpark's calibration
on the same decodes."""

from __future__ import annotations

from typing import Any

from specproof.reference.schedulers import FixedGamma

from ..models.loading import Models
from ..plans import TEMPERATURES, Plan
from .calibration import calibration_entry
from .comparisons import Setting, phase_breakdown, speculative_decoder, target_decoder
from .measurements import batched, summary, tokens_per_second
from .paired_runs import interleaved, speed_entry


def fixed_gamma_tables(
    models: Models,
    plan: Plan,
    setting: Setting,
    evaluation_prompts: dict[str, list[list[int]]],
    sts_fits: dict[str, dict[str, Any]],
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(evaluation rows, calibration entries), both keyed "domain/T=t"."""
    gamma = plan.dspark.gamma
    fixed = FixedGamma()
    evaluation: dict[str, Any] = {}
    calibration: dict[str, Any] = {}
    for domain, prompts in evaluation_prompts.items():
        chunks = batched(prompts[: plan.evaluation_prompts], plan.requests)
        for temperature in TEMPERATURES:
            key = f"{domain}/T={temperature:g}"
            runs = interleaved(
                {
                    name: speculative_decoder(
                        models.target, drafter, setting, temperature, fixed, seed + 200
                    )
                    for name, drafter in (("dspark", models.dspark), ("eagle", models.eagle))
                }
                | {"target": target_decoder(models.target, setting, temperature, seed + 300)},
                chunks,
                seed + 250,
            )
            row: dict[str, Any] = {
                name: {
                    **summary(runs[name], gamma),
                    **speed_entry(runs[name], runs["target"]),
                    "breakdown_ms": phase_breakdown(runs[name]),
                }
                for name in ("dspark", "eagle")
            }
            row["target_only_tokens_per_second"] = tokens_per_second(runs["target"])
            calibration[key] = calibration_entry(runs["dspark"], temperature, sts_fits)
            evaluation[key] = row
            print(
                f"{key}: DSpark tau {row['dspark']['tau']:.3f}, EAGLE tau {row['eagle']['tau']:.3f}"
            )
    return evaluation, calibration
