"""Measure the test's error rates instead of assuming them.

``python -m specproof.stats.calibrate`` runs :func:`~specproof.stats.goodness_of_fit` many times
with independent seeds (a) on correct samplers, reporting the observed false-fail rate beside
alpha, and (b) on biased samplers at a known TV, reporting the observed power beside 1 - beta.
It uses alpha = beta = 0.05 (not the suite's 1e-6) so that rates are measurable with a few
thousand runs; the bounds are conservative, so the observed false-fail rate sits below alpha.
Writes ``calibration/calibration.json`` and ``calibration/CALIBRATION.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from .bounds import required_samples
from .gof import Mass, exact_tv, goodness_of_fit

ALPHA = 0.05
BETA = 0.05
OUTPUT = Path("calibration")

Law = dict[Hashable, Mass]
Draw = Callable[[int, int], Counter[Hashable]]
"""(n, seed) -> counts of n independent draws."""


@dataclass(frozen=True)
class Measurement:
    sampler: str
    kind: str  # "false-fail" (correct sampler) or "power" (biased sampler)
    exact_tv: float
    delta: float
    n: int
    runs: int
    rejections: int
    rate: float
    interval: tuple[float, float]  # 95 % Clopper-Pearson interval of the rate
    nominal: float  # alpha for false-fail rows, 1 - beta for power rows
    seconds: float

    @property
    def consistent(self) -> bool:
        """Observed false-fail <= alpha, or observed power >= 1 - beta, within the interval."""
        if self.kind == "false-fail":
            return self.interval[0] <= self.nominal
        return self.interval[1] >= self.nominal


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else scipy_stats.beta.ppf(tail, successes, trials - successes + 1)
    high = (
        1.0
        if successes == trials
        else scipy_stats.beta.ppf(1 - tail, successes + 1, trials - successes)
    )
    return float(low), float(high)


def measure(
    sampler: str,
    kind: str,
    draw: Draw,
    truth: Law,
    null: Law,
    delta: float,
    runs: int,
    progress: Callable[[str], None],
    tolerance: float = 0.0,
) -> Measurement:
    cells = sum(1 for m in null.values() if m > 0) + (1 if tolerance > 0 else 0)
    n = required_samples(delta, ALPHA, BETA, cells, tolerance)
    start = time.perf_counter()
    rejections = 0
    for run in range(runs):
        fit = goodness_of_fit(
            draw(n, run), null, alpha=ALPHA, beta=BETA, delta=delta, tolerance=tolerance
        )
        rejections += fit.rejected
        if (run + 1) % max(1, runs // 5) == 0:
            progress(f"{sampler} [{kind}]: {run + 1}/{runs} runs, {rejections} rejections")
    nominal = ALPHA if kind == "false-fail" else 1 - BETA
    return Measurement(
        sampler,
        kind,
        exact_tv(truth, null),
        delta,
        n,
        runs,
        rejections,
        rejections / runs,
        clopper_pearson(rejections, runs),
        nominal,
        time.perf_counter() - start,
    )


# Samplers ----------------------------------------------------------------------------------


def multinomial(law: Law) -> Draw:
    keys = list(law)
    masses = np.array([float(law[k]) for k in keys])

    def draw(n: int, seed: int) -> Counter[Hashable]:
        counts = np.random.default_rng([seed, 7]).multinomial(n, masses / masses.sum())
        return Counter({k: int(c) for k, c in zip(keys, counts, strict=True) if c})

    return draw


def shifted(law: Law, delta: float) -> Law:
    """Add ``delta`` to the lightest cell, scaling the others down: a law at TV exactly delta."""
    floats = {k: float(m) for k, m in law.items()}
    light = min(floats, key=lambda k: floats[k])
    scale = (1 - floats[light] - delta) / (1 - floats[light])
    out: Law = {k: m * scale for k, m in floats.items()}
    out[light] = floats[light] + delta
    return out


def reference_draw(scheduler_name: str) -> tuple[Draw, Law, Law]:
    """The reference's seeded sampler on the previous-token case (chain rule)."""
    from specproof.audit.cases import previous_token_case
    from specproof.reference import Algorithm1, GlobalSearch, exact_law, reference_law, sample

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
    from specproof.audit import examples
    from specproof.audit.cases import verifier_problems
    from specproof.audit.harness import exact_output_law, sample_rounds, verifier_round

    problem = next(p for p in verifier_problems(0, large_vocab=64) if p.name == "small-vocab")
    fn = (
        examples.biased_chain_speculative_sampling
        if biased
        else examples.chain_speculative_sampling
    )
    round_fn = verifier_round(fn, "flashinfer")

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


def markdown(results: list[Measurement], seconds: float) -> str:
    lines = [
        "# Calibration of specproof.stats",
        "",
        f"Each row runs `goodness_of_fit` on independent seeds at alpha = {ALPHA} and "
        f"beta = {BETA} (the suite uses alpha = 1e-6; these larger rates make the observed "
        "frequencies measurable). n is `required_samples(delta, alpha, beta, cells)`. "
        "False-fail rows sample a correct sampler (its observed rate should be <= alpha); power "
        "rows sample a biased one at the stated exact TV (observed power should be >= 1 - beta). "
        "Intervals are 95 % Clopper-Pearson.",
        "",
        "| sampler | kind | exact TV | delta | n | runs | observed | 95 % interval | nominal "
        "| ok |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        nominal = (
            f"alpha = {r.nominal:g}" if r.kind == "false-fail" else f"1 - beta = {r.nominal:g}"
        )
        lines.append(
            f"| {r.sampler} | {r.kind} | {r.exact_tv:.4g} | {r.delta:g} | {r.n} | {r.runs} | "
            f"{r.rate:.4f} | [{r.interval[0]:.4f}, {r.interval[1]:.4f}] | {nominal} | "
            f"{'yes' if r.consistent else 'NO'} |"
        )
    lines += ["", f"Total time {seconds:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specproof.stats.calibrate", description=__doc__
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
    (args.out / "CALIBRATION.md").write_text(text)
    print(text)
    return 0 if all(r.consistent for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
