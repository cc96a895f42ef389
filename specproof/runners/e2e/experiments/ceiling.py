"""The ceiling of block drafters, from samples of the target, beside DSpark and EAGLE-3.

    python -m specproof.runners.e2e.experiments.ceiling [--weights DIR] [--contexts N] [--samples N]
        [--threads N] [--seed N] [--out FILE] [--markdown FILE]

Definitions, per domain, temperature T and slot k = 1..K (K = 7, DSpark's gamma). A context c
is a held-out prompt (its last byte is x_0); y_1..y_K is the target's continuation of c at T;
p_k = p(. | c, y_<k) is the target's law at slot k, the law a draft at slot k is verified
against when drafts 1..k-1 were y_<k. A block drafter gives slot k a law q_k:

- vanilla Markov: q_k may depend on c, on k and on x_{k-1} (= y_{k-1}; x_0 at slot 1), and on
  nothing else the block drafted (DSpark with the release's vanilla Markov head is one);
- marginal: q_k may depend on c and k only (no intra-block dependence).

The acceptance of a drafter at slot k is the teacher-forced one,
A_k(q) = E_c E_{y_<k ~ target} [sum_x min(p_k(x), q_k(x))]: the probability that the draft at
slot k is accepted given that drafts 1..k-1 were accepted and equal to the target's own
continuation. The ceiling of a family at slot k is max over the family of A_k; since q_k may be
chosen separately for every (c, k) or (c, k, x_{k-1}), it is the mean over c of the best pooled
law's acceptance of each group (:mod:`specproof.e2e.evaluation.best_draft`, exact per group). No
capacity limit enters: the drafter may compute anything from what it sees, including the
target's own laws, so at slot 1 both ceilings are 1; below 1 at later slots is the information
the family cannot see.

It is estimated from ``samples`` continuations per context, two ways that bracket it in
expectation: in sample (fit and score on the same samples; at least the ceiling) and split
(cross-fitted: each sample scored under the law fitted on the other 7 of 8 folds; the
acceptance of actual drafters of the family, at most the ceiling). Each has a 95 % percentile
bootstrap interval over contexts (contexts resampled with their samples, 2,000 times, one set
of resamples for every column of a domain); the bracket from the split interval's low end to
the in-sample interval's high end covers the ceiling with probability about 0.95 or more
(each end misses with about 0.025, and each estimate's bias points outward).

Beside them, on the same contexts and samples: DSpark's and EAGLE-3's teacher-forced acceptance
A_k (each drafter's law at slot k given y_<k, as its drafting loop computes it) and their
conditional acceptance as decoded in the first round, P(draft k accepted | drafts 1..k-1
accepted), with the drafter's own drafts: E over target samples of
prod_{j<k} min(1, q_j(y_j) / p_j(y_j)) times the slot-k acceptance gives the probability that
drafts 1..k are all accepted (importance weighting), pooled over contexts as a ratio. Decoding
conditions on acceptance, which reweights the prefixes (towards those the drafter proposes
well), so this conditional acceptance is not bounded by the teacher-forced ceiling. And the
decoded per-slot conditional acceptance of both drafters
(:func:`specproof.e2e.evaluation.measurements.acceptance_counts`) over whole decodes of the same
prompts (``--new-tokens`` each, gamma = K, chunks of 4 prompts; bootstrap over chunks), whose
rounds after the first start from the decoders' own text.

At T = 0 the target's continuation is a function of the context, so a marginal drafter that
outputs it is accepted at every slot: both ceilings are exactly 1 and are not estimated. The
T = 0 rows give the drafters' agreement with the target's greedy continuation (teacher-forced,
argmax against argmax) and their decoded conditional acceptance.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specproof.commands.command_rules import (
    OneLineParser,
    integer_at_least,
    loaded,
    output_path_problem,
    write_result,
)
from specproof.e2e.data.corpora import load_corpora, prompts_from
from specproof.e2e.evaluation.best_draft import context_estimates, survival_weights
from specproof.e2e.evaluation.block_laws import dspark_block_laws, eagle_block_laws, sample_block
from specproof.e2e.evaluation.comparisons import Setting, speculative_decoder
from specproof.e2e.evaluation.measurements import acceptance_counts, batched
from specproof.e2e.evaluation.paired_runs import interleaved
from specproof.e2e.models.loading import SHIPPED_DIR, Models, load_models
from specproof.e2e.plans import FAST_VERIFY, SHIPPED
from specproof.reference.schedulers import FixedGamma
from specproof.runners.e2e.report.table import table

BOOTSTRAP_RESAMPLES = 2000
REQUESTS = 4
DRAFTERS = ("dspark", "eagle")
ESTIMATES = ("marginal_in_sample", "marginal_split", "markov_in_sample", "markov_split")


def sampled_columns(
    models: Models, context: Sequence[int], samples: int, temperature: float, seed: int
) -> dict[str, np.ndarray]:
    """Per-slot values [K] of one context: the ceiling estimates (T > 0 only), each drafter's
    teacher-forced acceptance and, for the first-round conditional acceptance, its
    P(drafts 1..k accepted) and P(drafts 1..k-1 accepted)."""
    gamma = models.dspark.gamma
    generator = torch.Generator().manual_seed(seed)
    count = samples if temperature > 0 else 1
    block = sample_block(models.target, context, count, gamma, temperature, generator)
    laws = block.laws.double().numpy()
    tokens = block.tokens.numpy()
    columns: dict[str, np.ndarray] = {}
    if temperature > 0:
        marginal, markov = context_estimates(laws, block.previous.numpy())
        columns.update(
            marginal_in_sample=marginal.in_sample,
            marginal_split=marginal.split,
            markov_in_sample=markov.in_sample,
            markov_split=markov.split,
        )
    drafts = {
        "dspark": dspark_block_laws(models.dspark, block, temperature),
        "eagle": eagle_block_laws(models.eagle, block, temperature),
    }
    for name, law in drafts.items():
        draft = law.double().numpy()
        if temperature > 0:
            accepted = np.minimum(laws, draft).sum(axis=-1)
            picked = np.take_along_axis(laws, tokens[..., None], axis=-1)[..., 0]
            drafted = np.take_along_axis(draft, tokens[..., None], axis=-1)[..., 0]
            ratios = np.minimum(1.0, drafted / picked)
        else:
            accepted = (draft.argmax(-1) == laws.argmax(-1)).astype(np.float64)
            ratios = accepted
        weights = survival_weights(ratios)
        columns[f"{name}_teacher_forced"] = accepted.mean(axis=0)
        columns[f"{name}_reach"] = (weights * accepted).mean(axis=0)
        columns[f"{name}_reach_before"] = weights.mean(axis=0)
    return columns


def percentile_interval(samples: np.ndarray) -> list[list[float]]:
    """95 % percentile intervals per column of [resamples, K]."""
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    return [[float(a), float(b)] for a, b in zip(low, high, strict=True)]


def mean_row(values: np.ndarray, picks: np.ndarray) -> dict[str, Any]:
    """Mean over units of [units, K] with its bootstrap interval over units."""
    return {
        "mean": [float(v) for v in values.mean(axis=0)],
        "interval": percentile_interval(values[picks].mean(axis=1)),
    }


def ratio_row(numerator: np.ndarray, denominator: np.ndarray, picks: np.ndarray) -> dict[str, Any]:
    """sum over units of numerator / denominator ([units, K] each), with its bootstrap interval."""
    with np.errstate(invalid="ignore", divide="ignore"):
        value = numerator.sum(axis=0) / denominator.sum(axis=0)
        resampled = numerator[picks].sum(axis=1) / denominator[picks].sum(axis=1)
    return {"mean": [float(v) for v in value], "interval": percentile_interval(resampled)}


def sampled_table(
    models: Models,
    contexts: Sequence[Sequence[int]],
    samples: int,
    temperature: float,
    seed: int,
    label: str,
) -> dict[str, Any]:
    started = time.perf_counter()
    per_context: dict[str, list[np.ndarray]] = {}
    for index, context in enumerate(contexts):
        for key, value in sampled_columns(
            models, context, samples, temperature, seed + index
        ).items():
            per_context.setdefault(key, []).append(value)
        if (index + 1) % 8 == 0 or index + 1 == len(contexts):
            print(
                f"  {label}: {index + 1}/{len(contexts)} contexts, "
                f"{time.perf_counter() - started:.0f}s",
                flush=True,
            )
    stacked = {key: np.stack(values) for key, values in per_context.items()}
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(contexts), (BOOTSTRAP_RESAMPLES, len(contexts)))
    table: dict[str, Any] = {}
    if temperature > 0:
        for key in ESTIMATES:
            table[key] = mean_row(stacked[key], picks)
        for family in ("marginal", "markov"):
            low = table[f"{family}_split"]["interval"]
            high = table[f"{family}_in_sample"]["interval"]
            table[f"{family}_bracket"] = [[lo[0], hi[1]] for lo, hi in zip(low, high, strict=True)]
    else:
        table["ceiling"] = "1 at every slot: the greedy continuation is a function of the context"
    for name in DRAFTERS:
        table[f"{name}_teacher_forced"] = mean_row(stacked[f"{name}_teacher_forced"], picks)
        table[f"{name}_first_round"] = ratio_row(
            stacked[f"{name}_reach"], stacked[f"{name}_reach_before"], picks
        )
    table["seconds"] = time.perf_counter() - started
    return table


def decoded_table(
    models: Models,
    contexts: Sequence[list[int]],
    new_tokens: int,
    temperature: float,
    seed: int,
) -> dict[str, Any]:
    """Per drafter: conditional acceptance per slot over whole decodes of the contexts."""
    gamma = models.dspark.gamma
    setting = Setting(new_tokens, FAST_VERIFY)
    chunks = batched(list(contexts), REQUESTS)
    runs = interleaved(
        {
            name: speculative_decoder(
                models.target,
                models.dspark if name == "dspark" else models.eagle,
                setting,
                temperature,
                FixedGamma(),
                seed,
            )
            for name in DRAFTERS
        },
        chunks,
        seed,
    )
    picks = np.random.default_rng(seed).integers(0, len(chunks), (BOOTSTRAP_RESAMPLES, len(chunks)))
    out: dict[str, Any] = {}
    for name, results in runs.items():
        counts = [acceptance_counts([result], gamma) for result in results]
        reached = np.array([c[0] for c in counts], dtype=np.float64)
        passed = np.array([c[1] for c in counts], dtype=np.float64)
        out[name] = {
            **ratio_row(passed, reached, picks),
            "reached": [int(v) for v in reached.sum(axis=0)],
        }
    out["chunks"] = len(chunks)
    return out


def ceiling_table(
    models: Models,
    contexts_per_domain: int,
    samples: int,
    new_tokens: int,
    seed: int,
    domains: Sequence[str] = ("code", "prose", "math"),
) -> dict[str, Any]:
    corpora = load_corpora()
    result: dict[str, Any] = {}
    for domain in domains:
        contexts = prompts_from(
            corpora[domain].stream("evaluation"), contexts_per_domain, SHIPPED.prompt_length, 1
        )
        for temperature in (1.0, 0.0):
            key = f"{domain}/T={temperature:g}"
            print(f"{key}:", flush=True)
            entry = sampled_table(models, contexts, samples, temperature, seed, key)
            entry["decoded"] = decoded_table(models, contexts, new_tokens, temperature, seed)
            result[key] = entry
    return result


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def cell(row: dict[str, Any], k: int) -> str:
    low, high = row["interval"][k]
    return f"{row['mean'][k]:.3f} [{low:.3f}, {high:.3f}]"


def markdown(result: dict[str, Any]) -> str:
    """The tables of ``benchmarks/ceiling.md``."""
    lines = [
        "# The block-drafter ceiling beside DSpark and EAGLE-3",
        "",
        f"`{result['command']}`: {result['contexts_per_domain']} held-out contexts per domain, "
        f"{result['samples_per_context']} target continuations of {result['slots']} bytes per "
        f"context at T = 1; decoded rows over {result['new_tokens']} new tokens per context "
        f"(gamma = {result['slots']}, chunks of {REQUESTS}); {result['seconds']:.0f} s, load "
        f"average {result['load_before']} before and {result['load_after']} after. Definitions "
        "in `specproof/runners/e2e/experiments/ceiling.py`. Each cell: estimate [95 % bootstrap "
        "interval]; "
        "a ceiling cell is split (lower) / in sample (upper) [bracket: split's low end, in-sample "
        "high end].",
        "",
    ]
    for key, entry in result["tables"].items():
        lines.append(f"## {key}")
        lines.append("")
        rows = []
        for k in range(result["slots"]):
            cells = [str(k + 1)]
            if "markov_split" in entry:
                for family in ("marginal", "markov"):
                    lo, hi = entry[f"{family}_bracket"][k]
                    cells.append(
                        f"{entry[f'{family}_split']['mean'][k]:.3f} / "
                        f"{entry[f'{family}_in_sample']['mean'][k]:.3f} [{lo:.3f}, {hi:.3f}]"
                    )
            else:
                cells.append("1")
            cells += [cell(entry[f"{name}_teacher_forced"], k) for name in DRAFTERS]
            cells += [cell(entry[f"{name}_first_round"], k) for name in DRAFTERS]
            cells += [cell(entry["decoded"][name], k) for name in DRAFTERS]
            rows.append(cells)
        if "markov_split" in entry:
            ceilings = ["marginal ceiling", "Markov ceiling"]
            forced = ["DSpark teacher-forced", "EAGLE-3 teacher-forced"]
        else:
            ceilings = ["ceiling"]
            forced = ["DSpark teacher-forced (greedy text)", "EAGLE-3 teacher-forced (greedy text)"]
        decoded = ["DSpark first round", "EAGLE-3 first round", "DSpark decoded", "EAGLE-3 decoded"]
        lines += table(["slot", *ceilings, *forced, *decoded], rows)
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog="python -m specproof.runners.e2e.experiments.ceiling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--weights", type=Path, default=SHIPPED_DIR)
    parser.add_argument(
        "--contexts", type=integer_at_least("--contexts", 2 * REQUESTS), default=32,
        help="held-out contexts per domain",
    )  # fmt: skip
    parser.add_argument(
        "--samples", type=integer_at_least("--samples", 2), default=128,
        help="target continuations per context at T = 1",
    )  # fmt: skip
    parser.add_argument(
        "--new-tokens", type=integer_at_least("--new-tokens", 1), default=SHIPPED.new_tokens
    )
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=2)
    parser.add_argument("--seed", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the tables here")
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--markdown", args.markdown)):
        if path is not None and (problem := output_path_problem(option, str(path))):
            parser.error(problem)
    torch.set_num_threads(args.threads)
    models = loaded(parser.prog, "--weights", lambda: load_models(args.weights))
    load_before = load_average()
    started = time.perf_counter()
    tables = ceiling_table(models, args.contexts, args.samples, args.new_tokens, args.seed)
    command = " ".join(
        [
            "python -m specproof.runners.e2e.experiments.ceiling",
            *(argv if argv is not None else sys.argv[1:]),
        ]
    )
    result = {
        "command": command,
        "weights": models.source,
        "contexts_per_domain": args.contexts,
        "samples_per_context": args.samples,
        "slots": models.dspark.gamma,
        "new_tokens": args.new_tokens,
        "prompt_length": SHIPPED.prompt_length,
        "threads": args.threads,
        "seed": args.seed,
        "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
        "seconds": time.perf_counter() - started,
        "load_before": load_before,
        "load_after": load_average(),
        "tables": tables,
    }
    write_result(result, args.out)
    if args.markdown is not None:
        args.markdown.write_text(markdown(result) + "\n")
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
