"""The ``specproof audit-engine`` command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..cli import _positive, _rate, _tolerance, load_callable
from ..run import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_TOLERANCE, progress_bar
from .audit import DEFAULT_BINS, DEFAULT_DELTA, audit_engine
from .subject import Engine

DEFAULT_TOKENS = 4


def _tokens(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ids like 1,2,3, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected non-negative ids, got {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(
        prog="specproof audit-engine",
        description=(
            "Audit a whole generate loop against the target's own law: run it many times and "
            "test the emitted tokens against target_probs, a plain teacher-forced pass. Rows: "
            "layout, support and greedy (exact, alpha = 0), exact (law of the first N tokens "
            "when V^N <= 64) and pit (randomized probability integral transform, per position "
            "and pooled), each with false-fail rate alpha and power >= 1 - beta against TV >= "
            "delta, and coverage (draft lengths and accepted counts; warns, never fails). Exit "
            "status: 0 every row passes, 1 a row fails, 2 usage error."
        ),
    )
    what = out.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--hf",
        metavar="MODULE:FN",
        help="FN() returns (target, assistant, generate kwargs) for transformers; audits "
        "target.generate(prompt, assistant_model=assistant, **kwargs) (assistant None: the "
        "target alone)",
    )
    what.add_argument(
        "--generate",
        metavar="MODULE:FN",
        help="generate(prompt, num_new_tokens, seed) -> tokens (EOS ends the list); needs "
        "--target-probs",
    )
    what.add_argument(
        "--engine", metavar="MODULE:FN", help="FN() returns a specproof.audit.engine.Engine"
    )
    out.add_argument(
        "--target-probs",
        metavar="MODULE:FN",
        help="target_probs(sequences [B, L] int64) -> [B, L, V]: the processed law of the token "
        "after each prefix, from a plain teacher-forced pass",
    )
    out.add_argument("--prompt", type=_tokens, default=(1, 2, 3), help="prompt ids (1,2,3)")
    out.add_argument("--eos", type=int, help="EOS id for --generate (default: none)")
    out.add_argument("--greedy", action="store_true", help="--generate decodes greedily")
    out.add_argument("--max-draft", type=int, help="--generate's longest draft, for coverage")
    out.add_argument(
        "--tokens",
        type=_positive(int, "--tokens"),
        default=DEFAULT_TOKENS,
        help=f"new tokens per run (default {DEFAULT_TOKENS})",
    )
    out.add_argument(
        "--runs",
        type=_positive(int, "--runs"),
        help="runs (default: the n that powers every statistical row; 50 when greedy)",
    )
    out.add_argument("--alpha", type=_rate("alpha"), default=DEFAULT_ALPHA)
    out.add_argument("--beta", type=_rate("beta"), default=DEFAULT_BETA)
    out.add_argument("--delta", type=_rate("delta"), default=DEFAULT_DELTA)
    out.add_argument("--tolerance", type=_tolerance, default=DEFAULT_TOLERANCE)
    out.add_argument(
        "--bins", type=_positive(int, "--bins", 1), default=DEFAULT_BINS, help="PIT bins"
    )
    out.add_argument(
        "--sequence",
        type=_positive(int, "--sequence"),
        metavar="TOKENS",
        help="also the sequence rows: the law of the stopping time and the mean emitted length "
        "over separate runs of TOKENS new tokens (64 or more; the engine's EOS ends a run), "
        "against as many runs drawn from the target",
    )
    out.add_argument("--seed", type=int, default=0, help="seed of run 0 (run i uses seed + i)")
    out.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    out.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    return out


def load_engine(args: argparse.Namespace) -> Engine:
    if args.hf:
        from .hf import hf_engine

        setup: Any = load_callable(args.hf)()
        target, assistant, kwargs = setup
        return hf_engine(target, assistant, kwargs, prompt=args.prompt, name=args.hf)
    if args.engine:
        engine = load_callable(args.engine)()
        if not isinstance(engine, Engine):
            raise ValueError(f"{args.engine} returned {type(engine).__name__}, not an Engine")
        return engine
    if not args.target_probs:
        raise ValueError("--generate needs --target-probs")
    return Engine(
        name=args.generate,
        generate=load_callable(args.generate),
        target_probs=load_callable(args.target_probs),
        prompt=args.prompt,
        eos=args.eos,
        greedy=args.greedy,
        max_draft=args.max_draft,
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.json and not Path(args.json).resolve().parent.is_dir():
        print(f"specproof audit-engine: --json {args.json}: no such folder", file=sys.stderr)
        return 2
    if args.delta <= args.tolerance:
        print("specproof audit-engine: --delta must exceed --tolerance", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)
    try:
        engine = load_engine(args)
        report = audit_engine(
            engine,
            num_new_tokens=args.tokens,
            runs=args.runs,
            alpha=args.alpha,
            beta=args.beta,
            delta=args.delta,
            tolerance=args.tolerance,
            bins=args.bins,
            seed=args.seed,
            bars=None if args.quiet else progress_bar(),
            sequence_tokens=args.sequence,
        )
    except (ImportError, ValueError) as error:
        print(f"specproof audit-engine: {error}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if report.passed else 1
