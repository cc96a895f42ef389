"""The ``specproof audit-engine`` command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from specproof.audit.engine.audit import (
    DEFAULT_BINS,
    DEFAULT_DELTA,
    DEFAULT_TOKENS,
    ENGINE_TIMEOUT,
    MAX_EXACT_CELLS,
    audit_engine,
)
from specproof.audit.engine.runs import SetupError
from specproof.audit.engine.subject import Engine
from specproof.audit.guard import describe
from specproof.audit.report import publish
from specproof.audit.run import progress_bar
from specproof.audit.settings import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_TOLERANCE, ErrorRates
from specproof.callables import load_callable
from specproof.commands.command_rules import (
    EXIT_STATUS_HELP,
    OneLineParser,
    internal_error,
    number_above,
    output_path_problem,
    rate_argument,
    seconds,
    seed_argument,
    tolerance_argument,
    usage_error,
)

PROG = "specproof audit-engine"
DEFAULT_TIMEOUT = ENGINE_TIMEOUT
MAX_BINS = 1000
MAX_BINNED_CELLS = 256
"""The binned row's largest cell budget from the command (its second-token rows: one call)."""


def _bounded(name: str, low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{name} must be in {low}..{high}, got {text}")
        return value

    return parse


def _tokens(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ids like 1,2,3, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected non-negative ids, got {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    out = OneLineParser(
        prog=PROG,
        description=(
            "Audit a whole generate loop against the target's own law: run it many times and "
            "test the emitted tokens against target_probs, a plain teacher-forced pass. Rows: "
            "layout, support and greedy (exact, alpha = 0), exact (law of the first N tokens "
            "when V^N <= 64; exact-binned over the target's most probable tokens beyond) and "
            "pit (randomized probability integral transform, per position and pooled), each "
            "with false-fail rate alpha and power >= 1 - beta against TV >= "
            "delta, and coverage (draft lengths and accepted counts; warns, never fails). The "
            "subject's outputs are checked before any statistics (integer ids in the vocabulary, "
            "probability rows of one vocabulary); a subject that raises, returns the wrong "
            "thing or runs past --timeout fails a row of its own (generate, target_probs, "
            "timeout) after the rows already run. " + EXIT_STATUS_HELP
        ),
    )
    what = out.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--hf",
        metavar="MODULE:FN",
        help="FN() returns (target, assistant, generate kwargs) for transformers; audits "
        "target.generate(prompt, assistant_model=assistant, **kwargs) (assistant None: the "
        "target alone, or its MTP head with use_mtp=True)",
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
    out.add_argument(
        "--prompt",
        type=_tokens,
        default=(1, 2, 3),
        help="prompt ids (1,2,3), each in the target's vocabulary (checked before any run)",
    )
    out.add_argument(
        "--eos", type=_bounded("--eos", 0, 2**63 - 1), help="EOS id for --generate (default: none)"
    )
    out.add_argument("--greedy", action="store_true", help="--generate decodes greedily")
    out.add_argument(
        "--max-draft",
        type=number_above(int, "--max-draft"),
        help="--generate's longest draft, for coverage",
    )
    out.add_argument(
        "--tokens",
        type=number_above(int, "--tokens"),
        default=DEFAULT_TOKENS,
        help=f"new tokens per run (default {DEFAULT_TOKENS})",
    )
    out.add_argument(
        "--runs",
        type=number_above(int, "--runs"),
        help="runs (default: the n that powers every statistical row; 50 when greedy)",
    )
    out.add_argument("--alpha", type=rate_argument("alpha"), default=DEFAULT_ALPHA)
    out.add_argument("--beta", type=rate_argument("beta"), default=DEFAULT_BETA)
    out.add_argument("--delta", type=rate_argument("delta"), default=DEFAULT_DELTA)
    out.add_argument("--tolerance", type=tolerance_argument, default=DEFAULT_TOLERANCE)
    out.add_argument(
        "--bins",
        type=_bounded("--bins", 2, MAX_BINS),
        default=DEFAULT_BINS,
        help=f"PIT bins, 2..{MAX_BINS} (default {DEFAULT_BINS})",
    )
    out.add_argument(
        "--seed",
        type=seed_argument("--seed"),
        default=0,
        help="seed of run 0 (run i uses seed + i)",
    )
    out.add_argument(
        "--timeout",
        type=seconds("--timeout"),
        default=DEFAULT_TIMEOUT,
        help=f"seconds the audit may run; a call into the subject still running then fails "
        f"the timeout row (default {DEFAULT_TIMEOUT:g})",
    )
    out.add_argument(
        "--json", metavar="PATH", help="also write the report as JSON (checked before the run)"
    )
    out.add_argument(
        "--sequence",
        type=number_above(int, "--sequence"),
        metavar="TOKENS",
        help="also the sequence rows: the law of the stopping time and the mean emitted length "
        "over separate runs of TOKENS new tokens (64 or more; the engine's EOS ends a run), "
        "against as many runs drawn from the target; their layout is checked first. TOKENS x "
        "--tolerance must stay below --delta, and the runs must fit in 4 GiB (checked before "
        "any run)",
    )
    out.add_argument(
        "--binned-cells",
        type=_bounded("--binned-cells", 0, MAX_BINNED_CELLS),
        default=MAX_EXACT_CELLS,
        metavar="CELLS",
        help="cells of the exact-binned row where V^N > 64: the target's most probable first "
        f"two tokens and 'other' bins (default {MAX_EXACT_CELLS}; 0: no such row; at most "
        f"{MAX_BINNED_CELLS})",
    )
    out.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    return out


def load_engine(args: argparse.Namespace) -> Engine:
    """The engine the arguments name; ValueError (a usage error) names the argument."""
    if args.hf:
        from specproof.adapters.hf import hf_engine

        setup: Any = _made(args.hf, "--hf")
        if not isinstance(setup, tuple | list) or len(setup) != 3:
            raise ValueError(
                f"--hf {args.hf} returned {type(setup).__name__}, not (target, assistant, "
                "generate kwargs)"
            )
        target, assistant, kwargs = setup
        problem = hf_setup_problem(target, assistant, kwargs)
        if problem:
            raise ValueError(f"--hf {args.hf} returned {problem}")
        try:
            return hf_engine(target, assistant, kwargs, prompt=args.prompt, name=args.hf)
        except (AttributeError, TypeError, ValueError, KeyError) as error:
            raise ValueError(
                f"--hf {args.hf}: its models cannot be driven: {type(error).__name__}: "
                f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            ) from error
    if args.engine:
        engine = _made(args.engine, "--engine")
        if not isinstance(engine, Engine):
            raise ValueError(
                f"--engine {args.engine} returned {type(engine).__name__}, not an Engine"
            )
        if isinstance(engine.batch, bool) or not isinstance(engine.batch, int) or engine.batch < 1:
            raise ValueError(
                f"--engine {args.engine} returned an Engine with batch={engine.batch!r}: "
                "batch must be a positive integer"
            )
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


def hf_setup_problem(target: Any, assistant: Any, kwargs: Any) -> str | None:
    """What is wrong with ``--hf``'s (target, assistant, generate kwargs), or None: the
    target must be a generative transformers model (``generate`` and a
    ``generation_config``), the assistant a transformers model (callable, with a ``config``:
    a DFlash drafter has no ``generate`` of its own)."""

    def not_a_model(model: Any) -> bool:
        return not (callable(getattr(model, "generate", None)) and callable(model)) or (
            getattr(model, "generation_config", None) is None
        )

    def not_an_assistant(model: Any) -> bool:
        return not callable(model) or getattr(model, "config", None) is None

    if not_a_model(target):
        return f"a target of type {type(target).__name__}, not a transformers model"
    if assistant is not None and not_an_assistant(assistant):
        return f"an assistant of type {type(assistant).__name__}, not a transformers model"
    if not isinstance(kwargs, Mapping):
        return f"generate kwargs of type {type(kwargs).__name__}, not a dict"
    return None


def _made(path: str, option: str) -> Any:
    """FN() for ``--hf``/``--engine``; its failure is a usage error naming the option."""
    make = load_callable(path)
    try:
        return make()
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a raise or sys.exit while building: the user's code
        raise ValueError(f"{option} {path}() raised {describe(error)}") from error


def setup_option(args: argparse.Namespace, error: SetupError) -> str:
    """The option a :class:`SetupError` is about, as the user gave it."""
    given = {
        "prompt": "--prompt",
        "eos": "--eos",
        "tokens": "--tokens (or --runs)",
        "sequence": f"--sequence {args.sequence}",
        "binned_cells": f"--binned-cells {args.binned_cells}",
    }
    if error.argument == "binned_cells":
        return given["binned_cells"]
    if args.engine:
        return f"--engine {args.engine}"
    if args.hf and error.argument == "eos":
        return f"--hf {args.hf} (its generation config's EOS)"
    return given.get(error.argument, f"--{error.argument}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.delta <= args.tolerance:
        return usage_error(PROG, "--delta must exceed --tolerance")
    # Made once here; the sizing, the sequence check and every row receive this same object.
    rates = ErrorRates(args.alpha, args.beta, args.delta, args.tolerance)
    if args.json and (problem := output_path_problem("--json", args.json)):
        return usage_error(PROG, problem)
    if args.sequence:
        from specproof.audit.engine.sequence import sequence_problem

        reason = sequence_problem(args.sequence, rates)
        if reason:
            return usage_error(PROG, f"--sequence {args.sequence}: {reason}")
    import torch

    torch.set_num_threads(1)
    try:
        engine = load_engine(args)
    except (ImportError, ValueError) as error:
        return usage_error(PROG, str(error))
    try:
        report = audit_engine(
            engine,
            num_new_tokens=args.tokens,
            runs=args.runs,
            rates=rates,
            bins=args.bins,
            seed=args.seed,
            bars=None if args.quiet else progress_bar(),
            sequence_tokens=args.sequence,
            timeout=args.timeout,
            binned_cells=args.binned_cells,
        )
    except SetupError as error:
        return usage_error(PROG, f"{setup_option(args, error)}: {error}")
    except (Exception, SystemExit) as error:  # a SystemExit here escaped the guard: our bug
        return internal_error(PROG, error)
    return publish(PROG, report, args.json)
