"""The audit's value objects: an out-of-range rate or limit is refused when made, naming the
field, and a command makes each value once and hands that same object to every row."""

from __future__ import annotations

import math
from typing import Any

import pytest

from specproof.audit import calls, hunt, run
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.report import AuditReport, exact_row
from specproof.audit.settings import DEFAULT_RATES, CallLimits, ErrorRates, HuntSettings, settled
from specproof.audit.signatures import signature_named
from specproof.commands.audit import main


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"beta": -0.1}, "beta"),
        ({"beta": math.nan}, "beta"),
        ({"delta": 1.5}, "delta"),
        ({"tolerance": -1e-4}, "tolerance"),
        ({"delta": 0.05, "tolerance": 0.05}, "delta must exceed tolerance"),
        ({"alpha": True}, "alpha"),
    ],
)
def test_an_out_of_range_rate_is_refused_naming_its_field(
    fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        ErrorRates(**fields)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"max_batch": 0}, "max_batch"),
        ({"max_batch": 2.5}, "max_batch"),
        ({"timeout": 0.0}, "timeout"),
        ({"timeout": math.nan}, "timeout"),
    ],
)
def test_an_out_of_range_limit_is_refused_naming_its_field(
    fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        CallLimits(**fields)


def test_the_defaults_are_the_documented_ones() -> None:
    assert (ErrorRates().alpha, ErrorRates().beta, ErrorRates().delta) == (1e-6, 1e-4, 0.05)
    assert ErrorRates().tolerance == 1e-4
    assert (CallLimits().max_batch, CallLimits().timeout) == (1024, 600.0)


def test_settled_takes_the_value_or_the_loose_keywords_never_both() -> None:
    rates = ErrorRates(delta=0.2)
    assert settled(rates, DEFAULT_RATES, alpha=None) is rates
    assert settled(None, DEFAULT_RATES, delta=0.2, beta=None) == rates
    with pytest.raises(TypeError, match="alpha="):
        settled(rates, DEFAULT_RATES, alpha=1e-3)


def test_the_command_makes_one_settings_value_for_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every row function (battery rounds, calls, non-finite, hunt) receives the very
    AuditSettings the command made from its flags (the battery its rates and limits, the same
    objects); the rows are stubbed, so nothing is sampled."""
    seen: list[tuple[str, Any]] = []
    real_filter_round = run.filter_round

    def rounds(fn: Any, settings: AuditSettings, drafter: Any = None) -> Any:
        seen.append(("rounds", settings))
        return real_filter_round(fn, settings, drafter)

    def battery(*args: Any, rates: ErrorRates, limits: CallLimits, **kwargs: Any) -> list:
        seen.extend([("battery rates", rates), ("battery limits", limits)])
        return [exact_row("stub", "layout", 0, "pass", "stubbed")]

    def calls_rows(fn: Any, problem: Any, settings: AuditSettings) -> list:
        seen.append(("calls", settings))
        return []

    def nonfinite(fn: Any, settings: AuditSettings) -> list:
        seen.append(("nonfinite", settings))
        return []

    def hunting(fn: Any, settings: AuditSettings, **kwargs: Any) -> AuditReport:
        seen.append(("hunt", settings))
        return AuditReport("stub", "hunt")

    monkeypatch.setattr(run, "filter_round", rounds)
    monkeypatch.setattr(run, "audit_problem", battery)
    monkeypatch.setattr(calls, "audit_calls", calls_rows)
    monkeypatch.setattr(run, "nonfinite_rows", nonfinite)
    monkeypatch.setattr(hunt, "hunt_verifier", hunting)
    flags = ["--alpha", "1e-5", "--beta", "0.01", "--delta", "0.3", "--tolerance", "0.001"]
    flags += ["--max-batch", "77", "--timeout", "123", "--hunt", "8", "--greedy-marker", "-1"]
    flags += ["--seed", "5", "--filter-order", "joint", "--quiet"]
    main(["specproof.subjects.examples:rejection_sample", "--signature", "vllm", *flags])
    made = [value for name, value in seen if name in ("rounds", "calls", "nonfinite", "hunt")]
    assert {name for name, _ in seen} == {
        "rounds", "battery rates", "battery limits", "calls", "nonfinite", "hunt"
    }, seen  # fmt: skip
    assert len({id(value) for value in made}) == 1, seen
    settings = made[0]
    assert all(value is settings.rates for name, value in seen if name == "battery rates")
    assert all(value is settings.limits for name, value in seen if name == "battery limits")
    assert settings == AuditSettings(
        signature_named("vllm"),
        ErrorRates(1e-5, 0.01, 0.3, 0.001),
        CallLimits(77, 123.0),
        seed=5,
        marker=-1.0,
        filter_order="joint",
        hunt=HuntSettings(rounds=8),
    )


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"signature": "vllm"}, "signature"),
        ({"rates": 0.05}, "rates"),
        ({"limits": {"max_batch": 4}}, "limits"),
        ({"seed": 1.5}, "seed"),
        ({"marker": math.nan}, "marker"),
        ({"marker": "0"}, "marker"),
        ({"filter_order": "backwards"}, "filter_order"),
        ({"calls": 1}, "calls"),
        ({"hunt": 8}, "hunt"),
    ],
)
def test_audit_settings_refuse_a_bad_field_naming_it(fields: dict[str, Any], named: str) -> None:
    made = {"signature": signature_named("vllm"), **fields}
    with pytest.raises(ValueError, match=named):
        AuditSettings(**made)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"rounds": 0}, "rounds"),
        ({"budget": -1.0}, "budget"),
        ({"budget": math.inf}, "budget"),
        ({"batch": 2.0}, "batch"),
        ({}, "rounds or a budget"),
    ],
)
def test_hunt_settings_refuse_a_bad_field_naming_it(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        HuntSettings(**fields)


def test_the_keyword_front_resolves_the_name_once_and_keeps_the_refusals() -> None:
    settings = AuditSettings.of("hf", alpha=1e-3, max_batch=9, seed=4)
    assert settings.signature is signature_named("hf")
    assert settings.order == signature_named("hf").default_filter_order
    assert (settings.rates.alpha, settings.limits.max_batch, settings.seed) == (1e-3, 9, 4)
    with pytest.raises(TypeError, match="max_batch="):
        AuditSettings.of("hf", limits=CallLimits(), max_batch=9)
    with pytest.raises(ValueError, match="unknown signature"):
        AuditSettings.of("no-such-engine")


def test_the_engine_command_makes_the_rates_once_for_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sequence check (in the command and in the audit), the 4-token rows and the sequence
    rows receive the very ErrorRates the engine command made (rows stubbed; 20 short runs of
    the correct long engine are sampled for the layout row)."""
    from specproof.audit.engine import audit as engine_audit
    from specproof.audit.engine import sequence
    from specproof.commands.audit_engine import main as engine_main

    seen: list[tuple[str, ErrorRates]] = []

    def problem(tokens: int, rates: ErrorRates) -> str:
        seen.append(("sequence check", rates))
        return ""

    def law_rows(*args: Any) -> list:
        seen.append(("4-token rows", args[6].rates))
        return []

    def sequence_rows(report: Any, engine: Any, tokens: int, settings: Any, *rest: Any) -> None:
        seen.append(("sequence rows", settings.rates))

    monkeypatch.setattr(sequence, "sequence_problem", problem)
    monkeypatch.setattr(engine_audit, "sequence_problem", problem)
    monkeypatch.setattr(engine_audit, "law_rows", law_rows)
    monkeypatch.setattr(engine_audit, "add_sequence_rows", sequence_rows)
    engine = "specproof.subjects.sequence_examples:long_engine"
    flags = ["--alpha", "1e-5", "--delta", "0.3", "--tolerance", "0.001", "--runs", "20"]
    engine_main(["--engine", engine, *flags, "--sequence", "8", "--quiet"])
    names = [name for name, _ in seen]
    assert sorted(set(names)) == ["4-token rows", "sequence check", "sequence rows"], seen
    assert len({id(rates) for _, rates in seen}) == 1, seen
    assert seen[0][1] == ErrorRates(1e-5, DEFAULT_RATES.beta, 0.3, 0.001)
