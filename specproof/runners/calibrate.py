"""``python -m specproof.runners.calibrate`` (``nox -s calibration``): the observed false-fail rate
and power of :func:`specproof.stats.goodness_of_fit` on multinomial laws, the reference decoder and
the audit's example verifier, beside alpha and 1 - beta (:mod:`specproof.stats.calibrate`).
Writes ``benchmarks/calibration.json`` and ``benchmarks/calibration.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import asdict
from pathlib import Path

from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import previous_token_case, verifier_problems
from specproof.audit.problems import exact_output_law
from specproof.audit.rounds import sample_rounds, verifier_round
from specproof.reference import Algorithm1, GlobalSearch, exact_law, reference_law, sample
from specproof.stats.calibrate import (
    ALPHA,
    BETA,
    Draw,
    Law,
    Measurement,
    markdown,
    measure,
    multinomial,
    shifted,
)
from specproof.subjects import examples

OUTPUT = Path("benchmarks")


def reference_draw(scheduler_name: str) -> tuple[Draw, Law, Law]:
    """The reference's seeded sampler on the previous-token case (chain rule)."""
    case = previous_token_case()
    scheduler = Algorithm1() if scheduler_name == "algorithm1" else GlobalSearch()
    decoder = case.decoder(scheduler)

    def draw(n: int, seed: int) -> Counter[Hashable]:
        base = 10**7 * (seed + 1)
        return Counter(
            sample(decoder, case.prompts, case.num_tokens, source=base + i) for i in range(n)
        )

    truth = dict(exact_law(decoder, case.prompts, case.num_tokens))
    null = dict(reference_law(decoder, case.prompts, case.num_tokens))
    return draw, truth, null


def verifier_draw(biased: bool) -> tuple[Draw, Law]:
    """The torch FlashInfer-signature example verifier on the audit's small-vocab problem."""
    problem = next(p for p in verifier_problems(0, large_vocab=64) if p.name == "small-vocab")
    fn = (
        examples.biased_chain_speculative_sampling
        if biased
        else examples.chain_speculative_sampling
    )
    round_fn = verifier_round(fn, AuditSettings.of("flashinfer"))

    def draw(n: int, seed: int) -> Counter[Hashable]:
        outputs = sample_rounds(problem, round_fn, n, seed=10**6 + seed).outputs
        return Counter(int(row[0]) for row in outputs)  # first token: V cells

    first: Law = {}
    for key, mass in exact_output_law(problem).items():
        first[key[0]] = float(first.get(key[0], 0.0)) + mass
    return draw, first


def run(runs: int, progress: Callable[[str], None]) -> list[Measurement]:
    out: list[Measurement] = []
    for cells, delta in [(4, 0.1), (10, 0.1), (32, 0.1)]:
        law: Law = {i: (i + 1) / (cells * (cells + 1) / 2) for i in range(cells)}
        name = f"multinomial, {cells} cells"
        out.append(measure(name, "false-fail", multinomial(law), law, law, delta, runs, progress))
        biased = shifted(law, delta)
        out.append(measure(name, "power", multinomial(biased), biased, law, delta, runs, progress))
    reference_runs = max(50, runs // 10)
    draw, truth, null = reference_draw("algorithm1")
    out.append(
        measure(
            "reference sampler, chain + algorithm1",
            "false-fail",
            draw,
            truth,
            null,
            0.15,
            reference_runs,
            progress,
            tolerance=1e-12,
        )
    )
    draw, truth, null = reference_draw("global-search")
    out.append(
        measure(
            "reference sampler, chain + global search",
            "power",
            draw,
            truth,
            null,
            0.15,
            reference_runs,
            progress,
            tolerance=1e-12,
        )
    )
    draw, law = verifier_draw(biased=False)
    out.append(
        measure(
            "torch chain verifier (FlashInfer signature)",
            "false-fail",
            draw,
            law,
            law,
            0.1,
            max(50, runs // 4),
            progress,
            tolerance=1e-4,
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specproof.runners.calibrate", description=__doc__
    )
    parser.add_argument("--runs", type=int, default=2000, help="seeds per multinomial row")
    parser.add_argument("--out", type=Path, default=OUTPUT, help="folder for the results")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    start = time.perf_counter()
    results = run(args.runs, progress)
    seconds = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "alpha": ALPHA,
        "beta": BETA,
        "seconds": seconds,
        "results": [{**asdict(r), "consistent": r.consistent} for r in results],
    }
    (args.out / "calibration.json").write_text(json.dumps(payload, indent=2) + "\n")
    text = markdown(results, seconds)
    (args.out / "calibration.md").write_text(text)
    print(text)
    return 0 if all(r.consistent for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
