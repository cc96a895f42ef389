"""The binned law of the first tokens (``exact-binned``) is the exact law pushed through its
cells, keeps the most probable cells within its budget, handles EOS as the exact law does, and
runs only where the exact row does not.

The exact law (:func:`first_tokens_law`, enumerating every prefix) is the definition the
binned masses are checked against; those assertions are exact (float sums to 1e-12). The audit
runs at the end use alpha = 1e-6 per row (a correct engine fails a row with probability at
most 1e-6; seeds fixed).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
import torch

from specproof.audit.engine import Engine, audit_engine
from specproof.audit.engine.audit import MAX_EXACT_CELLS
from specproof.audit.engine.binned import MIN_CELL_MASS, OTHER, binned_law
from specproof.audit.engine.laws import first_tokens_law
from specproof.audit.engine.rows import first_tokens
from specproof.audit.engine.runs import SetupError
from specproof.audit.settings import ErrorRates
from specproof.stats import power_lower_bound

VOCAB = 90
"""Past the exact row's budget (V > 64) yet small enough to enumerate V^2 = 8,100 pairs."""


def table(seed: int, zeros: float = 0.0) -> torch.Tensor:
    """TABLE[a]: a Zipf-like law of the token after a, its ranks shuffled per row."""
    gen = torch.Generator().manual_seed(seed)
    weights = torch.arange(1, VOCAB + 1, dtype=torch.float64) ** -1.3
    rows = torch.stack([weights[torch.randperm(VOCAB, generator=gen)] for _ in range(VOCAB)])
    rows[torch.rand(rows.shape, generator=gen) < zeros] = 0.0
    return (rows / rows.sum(-1, keepdim=True)).to(torch.float32)


def probs_of(rows: torch.Tensor):  # type: ignore[no-untyped-def]
    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        return rows[sequences]

    return target_probs


@pytest.mark.parametrize(("tokens", "eos"), [(1, frozenset()), (2, frozenset()),
                                             (2, frozenset({4, 17}))])  # fmt: skip
@pytest.mark.parametrize("cells", [2, 12, MAX_EXACT_CELLS])
def test_binned_masses_are_the_exact_law_pushed_through_the_cells(
    tokens: int, eos: frozenset[int], cells: int
) -> None:
    rows = table(1, zeros=0.2)
    target = probs_of(rows)
    prompt = (3,)
    if eos:  # make the EOS ids probable enough to be kept as first tokens
        rows[3, sorted(eos)] = rows[3].max()
        rows[3] /= rows[3].sum()
    binned = binned_law(target, prompt, tokens, eos, cells)
    exact = first_tokens_law(target, prompt, tokens, eos)
    pushed: dict[tuple[int | str, ...], float] = defaultdict(float)
    for head, mass in exact.items():
        pushed[binned.cell(head)] += mass
    positive = {c: m for c, m in pushed.items() if m > 1e-15}
    assert set(positive) == set(binned.law)
    for cell, mass in binned.law.items():
        assert mass == pytest.approx(positive[cell], abs=1e-12), cell
    assert 2 <= binned.cells <= cells
    assert math.fsum(binned.law.values()) == pytest.approx(1, abs=1e-12)
    kept = {c: m for c, m in binned.law.items() if c[-1] != OTHER}
    assert all(m >= MIN_CELL_MASS for m in kept.values())
    # The most probable cells: no cell left in an "other" bin outweighs a kept one whose
    # parent's bin it could have been split from (a kept first token's continuation, or a
    # first token), with budget spent.
    if binned.cells == cells and kept:
        lightest = min(kept.values())
        first = rows[3].double().numpy()
        for a in range(VOCAB):
            if a not in binned.kept:
                assert first[a] <= lightest + 1e-15, a
    if eos & set(binned.kept):
        assert all((e,) in binned.law for e in eos & set(binned.kept))


def test_a_run_maps_to_its_cell_as_the_exact_row_cuts_it() -> None:
    binned = binned_law(probs_of(table(2)), (5,), 2, frozenset({7}), MAX_EXACT_CELLS)
    a = next(t for t, seconds in binned.kept.items() if seconds)
    b = min(binned.kept[a])
    other = next(t for t in range(VOCAB) if t not in binned.kept)
    assert binned.cell(first_tokens((a, b, 1, 2), 2, frozenset({7}))) == (a, b)
    unkept = next(t for t in range(VOCAB) if t not in binned.kept[a])
    assert binned.cell(first_tokens((a, unkept, 1), 2, frozenset({7}))) == (a, OTHER)
    assert binned.cell(first_tokens((other, b), 2, frozenset({7}))) == (OTHER,)


def sampler(rows: torch.Tensor, eos: int | None, temperature: float = 1.0):  # type: ignore[no-untyped-def]
    def generate(prompt, num_new_tokens: int, seed: int) -> list[int]:  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(seed)
        out: list[int] = []
        last = prompt[-1]
        while len(out) < num_new_tokens:
            row = rows[last].double().numpy() ** (1 / temperature)
            last = int(rng.choice(VOCAB, p=row / row.sum()))
            out.append(last)
            if last == eos:
                break
        return out

    return generate


def test_the_binned_row_runs_where_the_exact_row_does_not_and_sizes_n() -> None:
    """At V = 90 the exact row is out (90 > 64) and the binned row runs, named with its cells;
    the default n is the one that powers a row of that many cells (alpha = 1e-6, power 0.9999
    against TV 0.3), larger than the PIT rows' alone."""
    rows = table(3)
    engine = Engine("v90", sampler(rows, eos=None), probs_of(rows), (1,))
    report = audit_engine(engine, delta=0.3, seed=1)
    checks = [r.check for r in report.results]
    binned = next(r for r in report.results if r.check.startswith("exact-binned(N=2: "))
    assert not any(c.startswith("exact(") for c in checks), checks
    assert binned.passed and report.passed, report.table()
    cells = int(binned.check.split(": ")[1].split(" ")[0])
    assert 10 < cells <= MAX_EXACT_CELLS
    pit = next(r for r in report.results if r.check == "pit@1")
    assert binned.power >= 0.9999 and binned.n > 1.2 * pit_runs(), (binned.n, pit.n)
    assert "'other' bins holding mass" in binned.summary


def pit_runs() -> int:
    from specproof.audit.run import rounds_needed

    return rounds_needed([dict.fromkeys(range(10), 0.1)], ErrorRates(delta=0.3))


def power_against(n: int, null: dict, alternative: dict, rates: ErrorRates) -> float:  # type: ignore[type-arg]
    """The power of a goodness-of-fit row of n draws against one known alternative law: it
    rejects once the count in A* = {alternative > null} reaches the row's threshold."""
    above = [c for c in alternative if alternative[c] > null.get(c, 0.0)]
    masses = [m for m in null.values() if m > 0] + ([0.0] if rates.tolerance > 0 else [])
    return power_lower_bound(
        n,
        masses,
        sum(null.get(c, 0.0) for c in above),
        sum(alternative[c] for c in above),
        rates.alpha,
        rates.tolerance,
    )


def test_tempering_fails_the_binned_row() -> None:
    """Sampling at T = 1.3 against the T = 1 table. The binned law of the tempered engine is
    computed here from the table (TV 0.22 from the target's in the binned cells), and the
    binned row (false-fail rate alpha = 1e-6) has power > 0.999 against it at the n that
    delta = 0.2 asks."""
    rows = table(3)
    target = probs_of(rows)
    engine = Engine("v90 hot", sampler(rows, eos=None, temperature=1.3), target, (1,))
    report = audit_engine(engine, delta=0.2, seed=2)
    row = next(r for r in report.results if r.check.startswith("exact-binned"))
    law = binned_law(target, (1,), 2, frozenset(), MAX_EXACT_CELLS)
    hot = rows.double() ** (1 / 1.3)
    hot = hot / hot.sum(-1, keepdim=True)
    alternative: dict[tuple[int | str, ...], float] = defaultdict(float)
    for a in range(VOCAB):
        for b in range(VOCAB):
            alternative[law.cell((a, b))] += float(hot[1, a] * hot[a, b])
    tv = 0.5 * sum(abs(alternative[c] - law.law.get(c, 0.0)) for c in alternative)
    assert tv > 0.2, tv
    assert power_against(row.n, law.law, alternative, ErrorRates(delta=0.2)) > 0.999
    assert row.verdict == "FAIL", report.table()


def test_a_budget_of_one_cell_is_refused() -> None:
    rows = table(3)
    engine = Engine("v90", sampler(rows, eos=None), probs_of(rows), (1,))
    with pytest.raises(SetupError, match="at least 2 cells"):
        audit_engine(engine, binned_cells=1)
    report = audit_engine(engine, binned_cells=0, runs=50)
    assert not any(r.check.startswith("exact-binned") for r in report.results)


def test_the_command_passes_its_cell_budget_and_names_it_when_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specproof.commands import audit_engine as cli

    engine = ["--engine", "specproof.subjects.sequence_examples:long_engine", "--quiet"]
    seen: list[int] = []
    real = cli.audit_engine

    def audit(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        seen.append(int(kwargs["binned_cells"]))  # type: ignore[call-overload]
        return real(*args, **{**kwargs, "runs": 20})  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "audit_engine", audit)
    cli.main([*engine, "--binned-cells", "0"])
    cli.main(engine)
    assert seen == [0, MAX_EXACT_CELLS]
    assert cli.main([*engine, "--binned-cells", "1"]) == 2
    assert "--binned-cells 1: the binned row needs 0 or at least 2 cells" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        cli.main([*engine, "--binned-cells", "257"])
    assert refused.value.code == 2
    assert "--binned-cells must be in 0..256" in capsys.readouterr().err


def test_a_binned_law_too_large_to_hold_is_refused_before_its_call() -> None:
    """63 second-token rows after an 8-token prompt at V = 2^20 would take about 6.4 GiB."""

    def refuse(sequences: torch.Tensor) -> torch.Tensor:
        if sequences.shape[0] > 1:
            raise AssertionError("the binned law's call was made")
        return torch.full((*sequences.shape, 2**20), 2.0**-20)

    engine = Engine("huge", sampler(table(3), eos=None), refuse, tuple(range(8)))
    with pytest.raises(
        SetupError, match=r"binned row's 63 second-token rows at V = 1048576 need 6\.4"
    ):
        audit_engine(engine, runs=1)
