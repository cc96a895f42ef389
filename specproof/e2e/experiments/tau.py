"""tau of both drafters at the full block, per domain and temperature, for one set of weights:
the comparison the drafters' training length is judged by, without the speed tables.

    python -m specproof.e2e.experiments.tau [--weights DIR] [--prompts N] [--threads N] [--out FILE]

Every drafter decodes the same held-out prompts (chunks of ``requests``) with the same seeds.
The DSpark - EAGLE-3 difference carries a 95 % percentile bootstrap interval over chunks
(paired: one resample of chunks serves both drafters; tau of a resample is its emitted
tokens over its request-rounds).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.command_rules import OneLineParser, output_path_problem
from specproof.reference.schedulers import FixedGamma

from ..arguments import loaded, write_result
from ..data.corpora import load_corpora, prompts_from
from ..evaluation.agreement import teacher_forced_score
from ..evaluation.comparisons import Setting, speculative_decoder
from ..evaluation.measurements import batched, mean_accepted_length
from ..evaluation.paired_runs import interleaved
from ..models.loading import SHIPPED_DIR, Models, load_models
from ..plans import FAST_VERIFY, SHIPPED, TEMPERATURES

BOOTSTRAP_RESAMPLES = 2000


def paired_difference(
    first: np.ndarray, second: np.ndarray, resamples: int, seed: int
) -> dict[str, float]:
    """tau(first) - tau(second) with a 95 % percentile bootstrap interval over chunks; each
    argument is [chunks, 2] of (emitted, rounds)."""
    if first.shape != second.shape or first.ndim != 2 or len(first) < 2:
        raise ValueError("need matching [chunks >= 2, 2] arrays of (emitted, rounds)")
    picks = np.random.default_rng(seed).integers(0, len(first), (resamples, len(first)))

    def tau(rows: np.ndarray) -> np.ndarray:
        totals = rows.sum(axis=-2)
        return totals[..., 0] / totals[..., 1]

    samples = tau(first[picks]) - tau(second[picks])
    low, high = np.percentile(samples, [2.5, 97.5])
    return {"difference": float(tau(first) - tau(second)), "low": float(low), "high": float(high)}


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
                "dspark_minus_eagle": paired_difference(
                    rows["dspark"], rows["eagle"], BOOTSTRAP_RESAMPLES, seed
                ),
                "chunks": len(chunks),
            }
            print(f"{key}: {table[key]}", flush=True)
    proxy = teacher_forced_score(models.dspark)
    return {
        "tau": table,
        "dspark_teacher_forced_proxy": {k: v["tau_proxy"] for k, v in proxy.items()},
        "prompts_per_domain": prompts,
        "requests_per_chunk": requests,
        "new_tokens": new_tokens,
        "drafter_steps": {name: models.training[name]["steps"] for name in ("dspark", "eagle")},
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.e2e.experiments.tau",
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
