"""Re-measure the acceptance rows that docs/results/engine_audit.md quotes for HF transformers.

    python -m specproof.runners.acceptance_rows tiny [--runs 100]     # tiny seeded models
    python -m specproof.runners.acceptance_rows smollm2 [--runs 20]   # SmolLM2-135M (minutes)

``tiny``: the correct assisted sampling of ``specproof.subjects.tiny`` and the two planted
verifiers of ``specproof.subjects.hf_mutants.ACCEPTANCE_MUTANTS`` (4 tokens, alpha 1e-3,
delta 0.3). ``smollm2``: the registered ``hf`` engine's configurations with a drafter model on
SmolLM2-135M-Instruct (``python -m specproof.runners.smollm2`` fetches it; ``--cache`` as
there). Prints each engine's acceptance row, verdict and seconds.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from pathlib import Path

import torch

from specproof.audit.engine import Engine, audit_engine

ALPHA = 1e-3
DELTA = 0.3


def show(name: str, build: Callable[[], Engine], runs: int, tokens: int) -> None:
    started = time.perf_counter()
    report = audit_engine(build(), runs=runs, alpha=ALPHA, delta=DELTA, num_new_tokens=tokens)
    rows = [r for r in report.results if r.check == "acceptance"]
    summary = f"{rows[0].verdict}: {rows[0].summary}" if rows else "no acceptance row"
    seconds = time.perf_counter() - started
    print(f"{name}: audit {report.verdict}; acceptance {summary} ({seconds:.1f} s)", flush=True)


def tiny_engine(setup: Callable[[], tuple[object, object, dict[str, object]]], name: str) -> Engine:
    from specproof.adapters.hf import hf_engine

    return hf_engine(*setup(), name=name)


def tiny_rows(runs: int) -> None:
    from specproof.subjects import hf_mutants, tiny

    setups = {"correct (T = 1)": tiny.sample_t1, **hf_mutants.ACCEPTANCE_MUTANTS}
    for name, setup in setups.items():
        show(name, functools.partial(tiny_engine, setup, name), runs, 4)


def smollm2_rows(runs: int, cache: Path | None) -> None:
    from specproof.adapters import hf_assisted
    from specproof.models.smollm2 import smollm2

    model = smollm2(cache)
    for config in hf_assisted.configurations(model):
        if config.drafter in ("draft", "target") and config.sampling.get("do_sample"):
            build = lambda config=config: hf_assisted.assisted_engine(config, model)  # noqa: E731
            show(config.name, build, runs, config.tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=("tiny", "smollm2"))
    parser.add_argument("--runs", type=int, help="runs per engine (tiny 100, smollm2 20)")
    parser.add_argument("--cache", type=Path, help="SmolLM2's cache folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.model == "tiny":
        tiny_rows(args.runs or 100)
    else:
        smollm2_rows(args.runs or 20, args.cache)


if __name__ == "__main__":
    main()
