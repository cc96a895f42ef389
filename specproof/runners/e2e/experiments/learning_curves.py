"""Learning curves: tau of DSpark, DFlash and EAGLE-3 on the sub-word target against training
steps, for several training seeds, resumable.

    python -m specproof.runners.e2e.experiments.learning_curves --weights DIR --out DIR
        [--plan full|smoke] [--drafters dspark dflash eagle3] [--seeds S ...]
        [--steps N ...] [--prompts N] [--threads N]                (nox -s train-subword)

``--weights`` holds the sub-word target (``python -m specproof.runners.e2e.train_subword_target``).
Each drafter x seed trains on the same windows (the seed picks the windows, the anchors and the
initialisation) with a cosine schedule over the largest step count; at each of ``--steps`` it
saves a checkpoint (``OUT/checkpoints/DRAFTER-seedS.pt``, the latest only), then decodes the
held-out evaluation prompts of every domain at every temperature of the plan (fixed gamma, the
same prompts, chunks and decoding seeds for every drafter and step) and stores, per chunk, the
(emitted tokens, request-rounds) pair, with the 95 % Student t-interval of the mean per-chunk
tau (:func:`specproof.stats.intervals.t_interval`). Once every seed has a step, the paired
differences DSpark - EAGLE-3 and DSpark - DFlash at that step are added (chunk rows summed over
seeds, then the t-interval and two-sided paired t-test of the mean per-chunk tau difference),
Holm-corrected over every such comparison of the run. ``OUT/learning_curves.json`` is rewritten
after each measurement and ``OUT/learning_curves.png`` drawn at the end (matplotlib).

A rerun with the same arguments continues: measured steps are kept, a drafter resumes from its
checkpoint, so an interruption loses at most the training since the last checkpoint; the
resumed run trains the same weights as an uninterrupted one (see
:mod:`specproof.e2e.training.resumable`). Runs of some drafters or seeds may be made by
separate invocations into the same ``--out`` (``nox -s train-subword`` gives each drafter x seed
a fresh process: a DSpark step timed after another model in one process took twice as long);
the decoding settings must match, and the comparisons cover the seeds measured for both
drafters of a pair.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from specproof.commands.command_rules import OneLineParser, integer_at_least, loaded
from specproof.e2e.data.corpora import DOMAIN_WEIGHTS, WindowSampler, load_corpora, prompts_from
from specproof.e2e.decoding.rounds import Drafter
from specproof.e2e.evaluation.chunk_intervals import (
    TAU_INTERVAL,
    chunk_rows,
    chunk_tau,
    holm_family,
    paired_tau_difference,
)
from specproof.e2e.evaluation.comparisons import Setting, speculative_decoder
from specproof.e2e.evaluation.measurements import batched
from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter
from specproof.e2e.models.eagle import EagleConfig, EagleDrafter
from specproof.e2e.models.loading import load_target
from specproof.e2e.models.target import FrozenTarget, parameter_count
from specproof.e2e.plans import FAST_VERIFY, SUBWORD_PLANS, SubwordPlan
from specproof.e2e.training.loops import (
    BatchSource,
    Log,
    TrainSettings,
    dspark_step,
    eagle_step,
    freeze,
)
from specproof.e2e.training.resumable import (
    load_checkpoint,
    make_optimizer,
    save_checkpoint,
    train_steps,
)
from specproof.reference.schedulers import FixedGamma
from specproof.stats.intervals import t_interval

PROG = "python -m specproof.runners.e2e.experiments.learning_curves"
DRAFTERS = ("dspark", "dflash", "eagle3")
RESULT_FILE = "learning_curves.json"
PLOT_FILE = "learning_curves.png"
DECODE_SEED = 1000
COMPARISONS = (("dspark", "eagle3"), ("dspark", "dflash"))
FAMILY = (
    "DSpark - EAGLE-3 and DSpark - DFlash tau (paired t-test, two-sided), every step x domain x "
    "temperature of this run measured for all seeds"
)


class CurvePlan(Protocol):
    """What the curves read of a plan (:class:`specproof.e2e.plans.SubwordPlan` or
    :class:`specproof.e2e.plans.SmolLM2Plan`)."""

    @property
    def dspark(self) -> DSparkConfig: ...
    @property
    def dflash(self) -> DSparkConfig: ...
    @property
    def eagle(self) -> EagleConfig: ...
    @property
    def drafter_batch(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def anchors_per_window(self) -> int: ...
    @property
    def drafter_lr(self) -> float: ...
    @property
    def warmup_steps(self) -> int: ...
    @property
    def new_tokens(self) -> int: ...
    @property
    def requests_per_chunk(self) -> int: ...
    @property
    def temperatures(self) -> tuple[float, ...]: ...


Windows = Callable[[int], tuple[BatchSource, dict[str, torch.Generator]]]
"""A seed to a training batch source and the generators it draws from (saved in checkpoints)."""


def stream_windows(train: Mapping[str, np.ndarray]) -> Windows:
    """Windows from per-domain streams mixed by the training weights."""

    def make(seed: int) -> tuple[BatchSource, dict[str, torch.Generator]]:
        sampler = WindowSampler(dict(train), DOMAIN_WEIGHTS, seed)
        return sampler, {"windows": sampler.generator}

    return make


@dataclass(frozen=True)
class CurveData:
    """Training streams per domain (token ids) and held-out prompts per domain; ``windows``
    replaces the streams' sampler when given."""

    train: Mapping[str, np.ndarray]
    prompts: Mapping[str, list[list[int]]]
    windows: Windows | None = field(default=None)

    def sampler(self, seed: int) -> tuple[BatchSource, dict[str, torch.Generator]]:
        return (self.windows or stream_windows(self.train))(seed)


def make_drafter(name: str, target: FrozenTarget, plan: CurvePlan, seed: int) -> Drafter:
    torch.manual_seed(seed)
    if name == "eagle3":
        return EagleDrafter(target, plan.eagle)
    return DSparkDrafter(target, plan.dspark if name == "dspark" else plan.dflash)


def drafter_gamma(plan: CurvePlan) -> int:
    gammas = {plan.dspark.gamma, plan.dflash.gamma, plan.eagle.gamma}
    if len(gammas) != 1:
        raise ValueError(f"the drafters of a plan share gamma, got {sorted(gammas)}")
    return gammas.pop()


@torch.no_grad()
def measure_tau(
    target: FrozenTarget, drafter: Drafter, data: CurveData, plan: CurvePlan
) -> dict[str, Any]:
    """Per "domain/T=t": per-chunk (emitted, rounds), pooled tau and the t-interval of the
    mean per-chunk tau."""
    setting = Setting(plan.new_tokens, FAST_VERIFY)
    table: dict[str, Any] = {}
    for domain in sorted(data.prompts):
        chunks = batched(data.prompts[domain], plan.requests_per_chunk)
        for temperature in plan.temperatures:
            decode = speculative_decoder(
                target, drafter, setting, temperature, FixedGamma(), DECODE_SEED
            )
            rows = np.array(
                [decode(chunk, index).accepted_totals for index, chunk in enumerate(chunks)],
                dtype=np.float64,
            )
            interval = t_interval(chunk_tau(rows), 0.95)
            table[f"{domain}/T={temperature:g}"] = {
                "tau": float(rows[:, 0].sum() / rows[:, 1].sum()),
                "mean_chunk_tau": interval.estimate,
                "interval_95": [interval.low, interval.high],
                "by_chunk": chunk_rows(rows),
            }
    return table


def run_key(drafter: str, seed: int) -> str:
    return f"{drafter}/seed{seed}"


def train_curve(
    name: str,
    seed: int,
    target: FrozenTarget,
    data: CurveData,
    plan: CurvePlan,
    steps: Sequence[int],
    out: Path,
    result: dict[str, Any],
    log: Log,
) -> None:
    """One drafter x seed: train to each step count in turn, checkpoint, measure, write."""
    runs = result.setdefault("runs", {})
    record = runs.setdefault(run_key(name, seed), {"checkpoints": {}})
    measured = record["checkpoints"]
    if all(str(s) in measured for s in steps):
        return
    drafter = make_drafter(name, target, plan, seed)
    assert isinstance(drafter, torch.nn.Module)
    record["parameters"] = parameter_count(drafter)
    settings = TrainSettings(
        seconds=0.0,
        batch_size=plan.drafter_batch,
        window=plan.window,
        lr=plan.drafter_lr,
        warmup_steps=plan.warmup_steps,
        steps=max(steps),
        log_every_seconds=30.0,
    )
    sampler, generators = data.sampler(seed)
    anchors = torch.Generator().manual_seed(seed + 1)
    if isinstance(drafter, EagleDrafter):
        step_fn = eagle_step(drafter, sampler, settings)
    else:
        assert isinstance(drafter, DSparkDrafter)
        step_fn = dspark_step(drafter, sampler, settings, plan.anchors_per_window, anchors)
    optimizer = make_optimizer(drafter, settings)
    generators = {**generators, "anchors": anchors}
    checkpoint = out / "checkpoints" / f"{name}-seed{seed}.pt"
    done = 0
    if checkpoint.is_file():
        done, _ = load_checkpoint(checkpoint, drafter, optimizer, generators)
        log(f"[{run_key(name, seed)}] resumed at step {done} from {checkpoint}")
    for stop in sorted(steps):
        if str(stop) in measured:
            continue
        if stop < done:
            raise ValueError(
                f"{checkpoint} is at step {done}, past the unmeasured step {stop}: remove it "
                "to retrain, or measure only later steps"
            )
        stretch = train_steps(
            run_key(name, seed), drafter, optimizer, settings, step_fn, done, stop, log
        )
        if stop > done:
            save_checkpoint(checkpoint, stop, drafter, optimizer, generators)
            done = stop
        began = time.perf_counter()
        tau = measure_tau(target, drafter, data, plan)
        measured[str(stop)] = {
            "tau": tau,
            "training": stretch,
            "measure_seconds": time.perf_counter() - began,
        }
        shown = " ".join(f"{key}={row['tau']:.3f}" for key, row in tau.items())
        log(f"[{run_key(name, seed)}] step {stop}: tau {shown}")
        write_json(out / RESULT_FILE, result)


def comparisons(result: dict[str, Any], steps: Sequence[int]) -> None:
    """Paired DSpark - EAGLE-3 and DSpark - DFlash at every step that every seed in ``result``
    measured for both drafters, with Holm's correction over them (added to ``result``)."""
    runs = result.get("runs", {})
    seeds = sorted({int(key.rpartition("/seed")[2]) for key in runs})
    table: dict[str, Any] = {}
    for first, second in COMPARISONS:
        for step in steps:
            rows: dict[str, list[dict[str, Any]]] = {}
            for drafter in (first, second):
                keys = [run_key(drafter, s) for s in seeds]
                points = [runs.get(k, {}).get("checkpoints", {}).get(str(step)) for k in keys]
                if any(p is None for p in points):
                    break
                rows[drafter] = [p["tau"] for p in points if p is not None]
            if len(rows) < 2:
                continue
            for cell in rows[first][0]:
                summed = {
                    drafter: np.sum([np.array(t[cell]["by_chunk"]) for t in rows[drafter]], axis=0)
                    for drafter in (first, second)
                }
                label = f"{first} - {second} step {step} {cell}"
                table[label] = paired_tau_difference(summed[first], summed[second])
    result["comparisons"] = table
    p_values = {label: row["p_value_two_sided"] for label, row in table.items()}
    result["holm"] = holm_family(p_values, FAMILY) if p_values else None


def write_json(path: Path, result: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(partial, path)


def plot(result: dict[str, Any], path: Path) -> str:
    """tau against steps, one panel per domain/temperature, one line per drafter (mean over
    seeds), each seed a dot. Returns what was done."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    runs = result.get("runs", {})
    cells = sorted({c for r in runs.values() for p in r["checkpoints"].values() for c in p["tau"]})
    if not cells:
        return "nothing measured: no plot"
    figure, axes = plt.subplots(1, len(cells), figsize=(3.2 * len(cells), 3.0), squeeze=False)
    for axis, cell in zip(axes[0], cells, strict=True):
        for drafter in DRAFTERS:
            points: dict[int, list[float]] = {}
            for key, run in runs.items():
                if key.split("/")[0] != drafter:
                    continue
                for step, point in run["checkpoints"].items():
                    points.setdefault(int(step), []).append(point["tau"][cell]["tau"])
            if not points:
                continue
            xs = sorted(points)
            line = axis.plot(xs, [float(np.mean(points[x])) for x in xs], marker="o", label=drafter)
            for x in xs:
                axis.scatter([x] * len(points[x]), points[x], s=8, color=line[0].get_color())
        axis.set_xscale("log", base=2)
        axis.set_title(cell, fontsize=9)
        axis.set_xlabel("training steps")
    axes[0][0].set_ylabel("tau (tokens per round)")
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return f"plotted {path}"


def run_curves(
    target: FrozenTarget,
    data: CurveData,
    plan: CurvePlan,
    drafters: Sequence[str],
    seeds: Sequence[int],
    steps: Sequence[int],
    out: Path,
    log: Log = print,
) -> dict[str, Any]:
    """Every drafter x seed to every step (resuming what ``out`` holds); the JSON result."""
    freeze(target)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULT_FILE
    result: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    settings = {
        "gamma": drafter_gamma(plan),
        "new_tokens": plan.new_tokens,
        "requests_per_chunk": plan.requests_per_chunk,
        "prompts_per_domain": {d: len(p) for d, p in sorted(data.prompts.items())},
        "temperatures": list(plan.temperatures),
        "schedule_steps": max(steps),
        "training": {
            "dspark": plan.dspark.as_dict(),
            "dflash": plan.dflash.as_dict(),
            "eagle3": plan.eagle.as_dict(),
            "drafter_batch": plan.drafter_batch,
            "window": plan.window,
            "anchors_per_window": plan.anchors_per_window,
            "drafter_lr": plan.drafter_lr,
            "warmup_steps": plan.warmup_steps,
        },
    }
    recorded = result.get("settings")
    if recorded is not None and any(recorded.get(k) != v for k, v in settings.items()):
        raise ValueError(f"{path} was measured with other settings; use another --out")
    result["settings"] = settings
    result["target_parameters"] = parameter_count(target)
    result["interval"] = "95 % Student t-interval of the mean per-chunk tau (per run, per step)"
    result["comparison_interval"] = TAU_INTERVAL
    result["by_chunk"] = "one [emitted tokens, request-rounds] per chunk"
    for name in drafters:
        for seed in seeds:
            train_curve(name, seed, target, data, plan, steps, out, result, log)
    comparisons(result, steps)
    write_json(path, result)
    log(plot(result, out / PLOT_FILE))
    return result


def curve_data(plan: SubwordPlan, prompts: int) -> CurveData:
    """The corpora under the committed sub-word tokenizer: training streams and held-out
    evaluation prompts (``prompts`` per domain)."""
    from specproof.e2e.data.subword import SubwordTokenizer

    tokenizer = SubwordTokenizer()
    corpora = load_corpora()
    return CurveData(
        train={d: tokenizer.stream(c, "train") for d, c in corpora.items()},
        prompts={
            d: prompts_from(
                tokenizer.stream(c, "evaluation"),
                prompts,
                plan.prompt_length,
                1,
                tokenizer.line_end_ids,
            )
            for d, c in corpora.items()
        },
    )


def add_run_arguments(parser: argparse.ArgumentParser, threads: int) -> None:
    """--drafters, --seeds, --steps, --prompts and --threads of a curves command."""
    parser.add_argument("--drafters", nargs="+", choices=DRAFTERS, default=list(DRAFTERS))
    parser.add_argument("--seeds", nargs="+", type=integer_at_least("--seeds", 0), default=None)
    parser.add_argument("--steps", nargs="+", type=integer_at_least("--steps", 1), default=None)
    parser.add_argument("--prompts", type=integer_at_least("--prompts", 2), default=None)
    parser.add_argument("--threads", type=integer_at_least("--threads", 1), default=threads)


class PlanDefaults(Protocol):
    @property
    def seeds(self) -> tuple[int, ...]: ...
    @property
    def checkpoints(self) -> tuple[int, ...]: ...
    @property
    def prompts_per_domain(self) -> int: ...
    @property
    def requests_per_chunk(self) -> int: ...


def run_arguments(
    parser: argparse.ArgumentParser, args: argparse.Namespace, plan: PlanDefaults
) -> tuple[list[int], list[int], int]:
    """(seeds, steps, prompts per domain) from the arguments or the plan; a repeated seed, too
    few prompts for two chunks or an ``--out`` that is a file end the command (exit 2)."""
    seeds: list[int] = args.seeds or list(plan.seeds)
    steps = sorted(set(args.steps or plan.checkpoints))
    if len(set(seeds)) != len(seeds):
        parser.error("argument --seeds: each seed may be given once")
    prompts: int = args.prompts or plan.prompts_per_domain
    if prompts < 2 * plan.requests_per_chunk:
        parser.error(f"argument --prompts: at least {2 * plan.requests_per_chunk} (two chunks)")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"argument --out: {args.out} is not a folder")
    return seeds, steps, prompts


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--weights", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--plan", choices=sorted(SUBWORD_PLANS), default="full")
    add_run_arguments(parser, threads=1)
    args = parser.parse_args(argv)
    plan = SUBWORD_PLANS[args.plan]
    seeds, steps, prompts = run_arguments(parser, args, plan)
    torch.set_num_threads(args.threads)
    target = loaded(PROG, "--weights", lambda: load_target(args.weights))
    if target.config.vocab != plan.target.vocab:
        parser.error(
            f"argument --weights: its target has vocabulary {target.config.vocab}, the "
            f"{args.plan} sub-word plan {plan.target.vocab}"
        )
    return run_curves(
        target, curve_data(plan, prompts), plan, args.drafters, seeds, steps, args.out
    )


if __name__ == "__main__":
    main()
