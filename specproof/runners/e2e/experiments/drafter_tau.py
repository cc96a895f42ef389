"""tau and per-slot acceptance of several DSpark drafters against the shipped EAGLE-3, on the
shipped target, decoded on the same prompts with the same seeds.

    python -m specproof.runners.e2e.experiments.drafter_tau LABEL=DIR [LABEL=DIR ...] [--weights
        DIR]
                                                   [--prompts N] [--threads N] [--out FILE]

Each DIR holds a ``dspark.safetensors`` trained on the target of ``--weights`` (default the
shipped folder; its ``target.safetensors``, when DIR has one, must be the same file), e.g. what
``python -m specproof.runners.e2e.sweep`` writes; ``--weights`` also gives the EAGLE-3 drafter.
The prompts, chunks, seeds and decoding settings are those of
``python -m specproof.runners.e2e.experiments.tau`` (so its shipped figures are reproduced by
``shipped=specproof/e2e/weights``). Per domain and temperature: each drafter's tau and its
per-chunk (emitted tokens, request-rounds), the paired DSpark - EAGLE-3 difference with the
95 % Student t-interval of the mean per-chunk tau difference and the two-sided paired t-test
(:func:`specproof.e2e.evaluation.chunk_intervals.paired_tau_difference`), Holm-corrected over
every drafter x domain x temperature of the run (``holm`` in the JSON), and each drafter's
conditional acceptance per slot, P(draft k accepted | drafts 1..k-1 accepted), with a
descriptive 95 % percentile bootstrap interval over chunks (not a test).
"""

from __future__ import annotations

import argparse
import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import (
    OneLineParser,
    integer_at_least,
    json_object,
    loaded,
    output_path_problem,
    write_result,
)
from specproof.e2e.data.corpora import load_corpora, prompts_from
from specproof.e2e.decoding.rounds import DecodeResult, Drafter
from specproof.e2e.evaluation.chunk_intervals import (
    TAU_INTERVAL,
    chunk_rows,
    holm_family,
    paired_tau_difference,
)
from specproof.e2e.evaluation.comparisons import Setting, speculative_decoder
from specproof.e2e.evaluation.measurements import acceptance_counts, batched, mean_accepted_length
from specproof.e2e.evaluation.paired_runs import interleaved
from specproof.e2e.models.loading import SHIPPED_DIR, load_dspark, load_eagle, load_target
from specproof.e2e.models.target import parameter_count
from specproof.e2e.plans import FAST_VERIFY, SHIPPED, TEMPERATURES
from specproof.reference.schedulers import FixedGamma

PROG = "python -m specproof.runners.e2e.experiments.drafter_tau"
EAGLE = "eagle3"
REQUESTS = 4
SEED = 1000
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the slot acceptance's descriptive interval."""
FAMILY = (
    "each DSpark drafter vs EAGLE-3 tau (paired t-test, two-sided), every drafter x domain x "
    "temperature of this run"
)


def slot_acceptance(
    results: Sequence[DecodeResult], gamma: int, resamples: int, seed: int
) -> dict[str, list[Any]]:
    """Conditional acceptance per slot over all chunks, with a 95 % percentile bootstrap
    interval over chunks (a resample's ratio is its summed passes over its summed reaches)."""
    counts = np.array([acceptance_counts([r], gamma) for r in results], dtype=np.float64)
    reached, passed = counts[:, 0], counts[:, 1]  # [chunks, gamma] each
    picks = np.random.default_rng(seed).integers(0, len(results), (resamples, len(results)))
    # A slot no resample reaches has no ratio (nan), and no interval.
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        point = passed.sum(0) / reached.sum(0)
        samples = passed[picks].sum(1) / reached[picks].sum(1)
        low, high = np.nanpercentile(samples, [2.5, 97.5], axis=0)
    return {
        "acceptance": [float(x) for x in point],
        "low": [float(x) for x in low],
        "high": [float(x) for x in high],
        "reached": [int(x) for x in reached.sum(0)],
    }


def comparison(
    target: Any,
    drafters: dict[str, Drafter],
    prompts: int,
    new_tokens: int = SHIPPED.new_tokens,
) -> dict[str, Any]:
    """Per "domain/T=t": every drafter's tau and slot acceptance, and each DSpark drafter's
    paired difference to :data:`EAGLE`."""
    setting = Setting(new_tokens, FAST_VERIFY)
    gamma = SHIPPED.dspark.gamma
    table: dict[str, Any] = {}
    for domain, corpus in load_corpora().items():
        chunks = batched(
            prompts_from(corpus.stream("evaluation"), prompts, SHIPPED.prompt_length, 1),
            REQUESTS,
        )
        for temperature in TEMPERATURES:
            decoders = {
                name: speculative_decoder(target, drafter, setting, temperature, FixedGamma(), SEED)
                for name, drafter in drafters.items()
            }
            runs = interleaved(decoders, chunks, SEED)
            rows = {
                name: np.array([r.accepted_totals for r in results], dtype=np.float64)
                for name, results in runs.items()
            }
            key = f"{domain}/T={temperature:g}"
            table[key] = {
                "tau": {name: mean_accepted_length(results) for name, results in runs.items()},
                "minus_eagle3": {
                    name: paired_tau_difference(rows[name], rows[EAGLE])
                    for name in drafters
                    if name != EAGLE
                },
                "slot_acceptance": {
                    name: slot_acceptance(results, gamma, BOOTSTRAP_RESAMPLES, SEED)
                    for name, results in runs.items()
                },
                "chunks": len(chunks),
                "by_chunk": {name: chunk_rows(values) for name, values in rows.items()},
            }
            shown = " ".join(f"{n}={t:.2f}" for n, t in table[key]["tau"].items())
            print(f"{key}: tau {shown}", flush=True)
    return table


def parse_labelled(text: str) -> tuple[str, Path]:
    label, sep, folder = text.partition("=")
    if not sep or not label or not folder:
        raise argparse.ArgumentTypeError(f"expected LABEL=DIR, got {text!r}")
    if label == EAGLE:
        raise argparse.ArgumentTypeError(f"the label {EAGLE!r} is the baseline's")
    return label, Path(folder)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("drafters", type=parse_labelled, nargs="+", metavar="LABEL=DIR")
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR)
    parser.add_argument("--prompts", type=integer_at_least("--prompts", 2 * REQUESTS), default=32)
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    args = parser.parse_args(argv)
    labels = [label for label, _ in args.drafters]
    if len(set(labels)) != len(labels):
        parser.error("each LABEL may be given once")
    if args.out is not None and (problem := output_path_problem("--out", str(args.out))):
        parser.error(problem)
    trainings: dict[str, dict[str, Any]] = {}
    for label, folder in args.drafters:
        report = folder / "training.json"
        report_json = json_object(parser, report, label) if report.is_file() else {}
        training = report_json.get("training", {})
        if not isinstance(training, dict) or not isinstance(training.get("dspark", {}), dict):
            parser.error(f"{label}: {report}: 'training' is not an object of objects")
        trainings[label] = training
    reference = args.weights / "target.safetensors"
    for label, folder in args.drafters:
        copy = folder / "target.safetensors"
        if copy.is_file() and reference.is_file() and copy.read_bytes() != reference.read_bytes():
            parser.error(f"{label}={folder}: its target.safetensors is not {reference}")
    torch.set_num_threads(args.threads)
    target = loaded(PROG, "--weights", lambda: load_target(args.weights))
    drafters: dict[str, Drafter] = {}
    described: dict[str, Any] = {}
    for label, folder in args.drafters:
        dspark = loaded(PROG, label, functools.partial(load_dspark, folder, target))
        drafters[label] = dspark
        steps = trainings[label].get("dspark", {}).get("steps")
        described[label] = {
            "folder": str(folder),
            "config": dspark.config.as_dict(),
            "parameters": parameter_count(dspark),
            "training_steps": steps,
        }
    eagle = loaded(PROG, "--weights", lambda: load_eagle(args.weights, target))
    drafters[EAGLE] = eagle
    described[EAGLE] = {
        "folder": str(args.weights),
        "config": eagle.config.as_dict(),
        "parameters": parameter_count(eagle),
    }
    table = comparison(target, drafters, args.prompts)
    result = {
        "drafters": described,
        "table": table,
        "interval": TAU_INTERVAL,
        "by_chunk": "per drafter, one [emitted tokens, request-rounds] per chunk",
        "holm": holm_family(
            {
                f"{label} - {EAGLE} {key}": difference["p_value_two_sided"]
                for key, row in table.items()
                for label, difference in row["minus_eagle3"].items()
            },
            FAMILY,
        ),
        "prompts_per_domain": args.prompts,
        "requests_per_chunk": REQUESTS,
        "new_tokens": SHIPPED.new_tokens,
        "gamma": SHIPPED.dspark.gamma,
        "command": PROG,
    }
    print(write_result(result, args.out))
    return result


if __name__ == "__main__":
    main()
