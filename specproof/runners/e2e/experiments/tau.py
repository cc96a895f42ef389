"""tau of both drafters at the full block, per domain and temperature, for one set of weights:
the comparison the drafters' training length is judged by, without the speed tables.

    python -m specproof.runners.e2e.experiments.tau [--weights DIR] [--prompts N] [--threads N]
        [--out FILE]

Every drafter decodes the same held-out prompts (chunks of ``requests``) with the same seeds.
Each row stores every chunk's (emitted tokens, request-rounds) per drafter; the DSpark -
EAGLE-3 difference is pooled (ratio of totals) and carries the 95 % Student t-interval of the
mean per-chunk tau difference and the two-sided paired t-test's p-value
(:func:`specproof.e2e.evaluation.chunk_intervals.paired_tau_difference`); the p-values of all
domain x temperature rows of the run are Holm-corrected as one family (``holm`` in the JSON).
Both drafters decode at their trained gamma: no gamma is selected on these chunks.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import (
    OneLineParser,
    loaded,
    output_path_problem,
    write_result,
)
from specproof.e2e.data.corpora import load_corpora, prompts_from
from specproof.e2e.evaluation.agreement import teacher_forced_score
from specproof.e2e.evaluation.chunk_intervals import (
    TAU_INTERVAL,
    chunk_rows,
    holm_family,
    paired_tau_difference,
)
from specproof.e2e.evaluation.comparisons import Setting, speculative_decoder
from specproof.e2e.evaluation.measurements import batched, mean_accepted_length
from specproof.e2e.evaluation.paired_runs import interleaved
from specproof.e2e.models.loading import SHIPPED_DIR, Models, load_models
from specproof.e2e.plans import FAST_VERIFY, SHIPPED, TEMPERATURES
from specproof.reference.schedulers import FixedGamma

TAU_FAMILY = (
    "DSpark vs EAGLE-3 tau (paired t-test, two-sided), every domain x temperature of this run"
)


def tau_table(
    models: Models,
    prompts: int,
    requests: int = 4,
    new_tokens: int = SHIPPED.new_tokens,
    seed: int = 1000,
) -> dict[str, Any]:
    """Per "domain/T=t": both drafters' tau and the paired DSpark - EAGLE-3 difference; and
    DSpark's teacher-forced tau proxy per domain
    (:func:`specproof.e2e.evaluation.agreement.teacher_forced_score`)."""
    if prompts < 2 * requests:
        raise ValueError(f"need at least two chunks: prompts >= {2 * requests}")
    setting = Setting(new_tokens, FAST_VERIFY)
    table: dict[str, Any] = {}
    for domain, corpus in load_corpora().items():
        domain_prompts = prompts_from(
            corpus.stream("evaluation"), prompts, SHIPPED.prompt_length, 1
        )
        chunks = batched(domain_prompts, requests)
        for temperature in TEMPERATURES:
            runs = interleaved(
                {
                    name: speculative_decoder(
                        models.target, drafter, setting, temperature, FixedGamma(), seed
                    )
                    for name, drafter in (("dspark", models.dspark), ("eagle", models.eagle))
                },
                chunks,
                seed,
            )
            rows = {
                name: np.array([r.accepted_totals for r in results], dtype=np.float64)
                for name, results in runs.items()
            }
            key = f"{domain}/T={temperature:g}"
            table[key] = {
                **{name: mean_accepted_length(results) for name, results in runs.items()},
                "dspark_minus_eagle": paired_tau_difference(rows["dspark"], rows["eagle"]),
                "chunks": len(chunks),
                "by_chunk": {name: chunk_rows(values) for name, values in rows.items()},
            }
            print(f"{key}: {table[key]}", flush=True)
    proxy = teacher_forced_score(models.dspark)
    p_values = {key: row["dspark_minus_eagle"]["p_value_two_sided"] for key, row in table.items()}
    return {
        "tau": table,
        "interval": TAU_INTERVAL,
        "by_chunk": "per drafter, one [emitted tokens, request-rounds] per chunk",
        "holm": holm_family(p_values, TAU_FAMILY),
        "dspark_teacher_forced_proxy": {k: v["tau_proxy"] for k, v in proxy.items()},
        "prompts_per_domain": prompts,
        "requests_per_chunk": requests,
        "new_tokens": new_tokens,
        "drafter_steps": {name: models.training[name]["steps"] for name in ("dspark", "eagle")},
    }


DOCS_ROWS = ("code/T=1", "prose/T=1", "math/T=1", "code/T=0", "prose/T=0", "math/T=0")


def verdict_table(result: dict[str, Any]) -> str:
    """The markdown table docs/results/e2e_drafters.md quotes from a run's JSON: per row both taus,
    the pooled difference, its t-interval, the Holm-adjusted p-value and the verdict at alpha."""
    holm = result["holm"]
    lines = [
        "| domain / T | DSpark | EAGLE-3 | DSpark - EAGLE-3 (pooled) | 95 % t-interval "
        "| Holm-adjusted p | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in DOCS_ROWS:
        row = result["tau"][key]
        difference = row["dspark_minus_eagle"]
        low, high = difference["interval_95"]
        if not holm["rejected"][key]:
            verdict = "no difference shown"
        else:
            verdict = "DSpark below" if difference["difference"] < 0 else "DSpark above"
        domain, temperature = key.split("/T=")
        lines.append(
            f"| {domain}, T = {temperature} | {row['dspark']:.2f} | {row['eagle']:.2f} "
            f"| {difference['difference']:+.2f} | [{low:+.2f}, {high:+.2f}] "
            f"| {holm['adjusted'][key]:.2g} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.experiments.tau",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR)
    parser.add_argument("--prompts", type=int, default=32, help="held-out prompts per domain")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.prompts < 8:
        parser.error("--prompts must be at least 8 (two chunks of 4)")
    if args.out is not None and (problem := output_path_problem("--out", str(args.out))):
        parser.error(problem)
    torch.set_num_threads(args.threads)
    models = loaded(parser.prog, "--weights", lambda: load_models(args.weights))
    result = tau_table(models, args.prompts)
    print(write_result(result, args.out))
    return result


if __name__ == "__main__":
    main()
