"""An engine is a record found by name: the registry names the engines of the table, refuses
a malformed or duplicate record, and a new engine is one adapter module and one ``register``
line: the commands and the results table reach it with no other change. No module outside
``specproof/adapters/registry.py`` compares an engine's name or keys a table by the engines'
names or labels (an AST scan, shown to find each form it forbids)."""

from __future__ import annotations

import ast
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from specproof.adapters.registry import (
    EngineRecord,
    engine_named,
    engine_names,
    record_from_json,
    register,
    unregister,
)
from specproof.audit.signatures import signature_names

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("hf", "vllm", "vllm-verifier", "llama.cpp", "mlx-lm", "openvino", "ortgenai",
           "llama-server", "dflash", "specproof-dspark")  # fmt: skip


def test_the_registry_names_the_engines_of_the_table() -> None:
    assert engine_names() == ENGINES
    assert [engine_named(name).name for name in ENGINES] == list(ENGINES)
    labels = {engine_named(name).label for name in ENGINES}
    assert len(labels) == len(ENGINES)  # a label names one engine in the table


def test_an_unknown_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown engine 'sglang'") as refused:
        engine_named("sglang")
    assert all(name in str(refused.value) for name in ENGINES)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("hf", "takes an EngineRecord"),
        (EngineRecord("two words", "x", "m", "in process", "s", "p", ()), "one word"),
        (EngineRecord("hf", "x", "m", "in process", "s", "p", ()), "already registered"),
        (EngineRecord("new", "x", "m", "remotely", "s", "p", ()), "runs_in must be"),
        (EngineRecord("new", "", "m", "in process", "s", "p", ()), "a module and a label"),
    ],
)
def test_a_malformed_or_duplicate_record_is_refused(record: object, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        register(record)  # type: ignore[arg-type]
    assert engine_names() == ENGINES


def test_a_record_travels_to_a_child_process_whole() -> None:
    for name in ENGINES:
        record = engine_named(name)
        assert record_from_json(record.to_json()) == record


# The scan: names and labels of the engines, less the names that are also verifier signatures
# ("vllm", "hf"), which tests/audit/test_signatures_registry.py scans for on its own terms.
def engine_words() -> set[str]:
    words = {n for n in engine_names()} | {engine_named(n).label for n in engine_names()}
    return words - set(signature_names())


def branches_on_an_engine(path: Path, words: set[str]) -> Iterator[str]:
    """Comparisons of something called engine against a name (or a tuple of names), and
    dict literals keyed by two or more engine names or labels."""

    def is_word(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value in words or node.value in engine_names()
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(is_word(e) for e in node.elts)
        return False

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_word(s) for s in sides) and any("engine" in ast.unparse(s) for s in sides):
                yield f"{path.name}:{node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if sum(isinstance(k, str) and k in words for k in keys) >= 2:
                yield f"{path.name}:{node.lineno}: a table keyed by engine names"


def test_no_module_outside_the_registry_branches_on_an_engine_name() -> None:
    words = engine_words()
    registry = ROOT / "specproof" / "adapters" / "registry.py"
    found = [
        hit
        for folder in ("specproof", "reference", "optimized")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != registry
        for hit in branches_on_an_engine(path, words)
    ]
    assert not found, found


def test_the_scan_finds_the_branches_it_forbids(tmp_path: Path) -> None:
    """The scan is not blind: each form the records replaced is found."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        textwrap.dedent(
            """
            LABELS = {"llama.cpp": "llama.cpp", "mlx-lm": "mlx-lm"}
            if args.engine == "llama-server":
                pass
            if args.engine in ("vllm", "vllm-verifier"):
                pass
            """
        )
    )
    assert len(list(branches_on_an_engine(planted, engine_words()))) == 3


TOY_ENGINE = '''
"""A toy engine: samples uniformly, audited against the uniform law on the model's vocabulary."""
import json
from dataclasses import dataclass

import numpy as np
import torch

from specproof.adapters.beside_hf import entry
from specproof.audit.engine import Engine, audit_engine


@dataclass(frozen=True)
class Config:
    name: str


def configurations(model):
    return [Config("uniform no draft")]


def installed_version():
    return "0.0.1"


def run_configuration(name, model, plan, out):
    def generate(prompt, num_new_tokens, seed):
        rng = np.random.default_rng(seed)
        return [int(t) for t in rng.integers(0, model.vocab, num_new_tokens)]

    def target_probs(sequences):
        return torch.full((*sequences.shape, model.vocab), 1.0 / model.vocab)

    engine = Engine(name, generate, target_probs, model.prompt)
    report = audit_engine(engine, runs=plan.runs, delta=plan.delta)
    out.write_text(json.dumps(entry("Toy engine", installed_version(), name, report,
                                    model=model.name)))
'''


def test_a_new_engine_is_a_module_and_a_registry_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module written inside the test and one ``register`` line: ``specproof engines`` lists
    it and ``specproof audit-engine toy --model tiny`` audits it in a child process and writes
    its rows, with the model column, into the results table."""
    from specproof.commands.cli import main
    from specproof.runners.real_table import load

    (tmp_path / "toy_engine_module.py").write_text(TOY_ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the child processes import it too
    record = EngineRecord("toy", "Toy engine", "toy_engine_module", "in process", "tests",
                          "toy-engine", ("none",))  # fmt: skip
    register(record)
    try:
        assert main(["engines", "--json"]) == 0
        results = tmp_path / "results.json"
        status = main(["audit-engine", "toy", "--model", "tiny", "--runs", "400",
                       "--json", str(results)])  # fmt: skip
    finally:
        unregister("toy")
    (entry,) = load(results)
    assert (entry["engine"], entry["model"], entry["configuration"]) == (
        "Toy engine", "tiny Llama (V = 8)", "uniform no draft",
    )  # fmt: skip
    # 400 runs of a correct engine: every row passes (false-fail <= 1e-6 a row), short of the
    # power the default n would give, so the verdict is INCONCLUSIVE and the exit status 4.
    assert (entry["verdict"], status) == ("INCONCLUSIVE", 4)
    table = results.with_suffix(".md").read_text()
    assert "| Toy engine 0.0.1 | tiny Llama (V = 8) | uniform no draft |" in table


def test_engines_lists_every_record_and_what_is_installed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from specproof.commands.cli import main

    assert main(["engines", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(ENGINES)
    hf = rows[0]
    assert hf["installed"][0].isdigit()  # transformers is in the default venv
    assert all(r["session"] and r["package"] and r["drafters"] for r in rows)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vllm", "--model", "tiny"], "vllm is not installed here"),
        (["hf", "--model", "/nowhere"], "--model /nowhere: not an HF folder"),
        (["hf", "--model", "tiny", "--draft", "/d"], "--draft goes with --model PATH"),
        (["hf", "--model", "tiny", "--runs", "0"], "--runs must be positive"),
        (["hf", "--model", "tiny", "--delta", "1.5"], "--delta must be in (0, 1)"),
    ],
)
def test_audit_engine_refuses_what_it_cannot_run_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before any model is built or fetched; vLLM is not in the default venv."""
    from specproof.commands.cli import main

    assert main(["audit-engine", *argv]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def subject_imports(path: Path) -> list[str]:
    """The ``specproof.subjects`` modules ``path`` imports, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [
            n for n in names if n == "specproof.subjects" or n.startswith("specproof.subjects.")
        ]
    return found


def test_no_adapter_imports_a_subject() -> None:
    """An adapter takes the model it audits as an argument (an AuditModel); the tiny models,
    the glue mutants and every other subject stay in specproof/subjects."""
    adapters = sorted((ROOT / "specproof" / "adapters").glob("*.py"))
    found = {path.name: subject_imports(path) for path in adapters if subject_imports(path)}
    assert not found, found


def test_the_subject_scan_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from specproof.subjects.tiny import assisted\n")
    assert subject_imports(planted) == [
        "specproof.subjects.tiny",
        "specproof.subjects.tiny.assisted",
    ]
