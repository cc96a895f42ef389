"""The golden law vectors: the shipped files are a fresh generation, the reference reproduces
every vector from the file's own inputs, the file follows its schema, and the C consumer passes
them while its must-fail build (-DSPECPROOF_BUG_RESIDUAL_FROM_TARGET) fails. Exact checks: no
false-fail risk."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from specproof.commands.golden import SCHEMA, VECTORS, dumps, main
from specproof.golden.cases import GoldenCase, Sampling
from specproof.golden.schema import golden_schema
from specproof.golden.vectors import check_margin, expected_of, golden_vectors, round_program

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "golden" / "v1"
C_CONSUMER = ROOT / "examples" / "engine_ci" / "golden_c"
C_SOURCES = [C_CONSUMER / "check_golden.c", C_CONSUMER / "json_reader.c"]


def shipped() -> dict[str, Any]:
    return json.loads((SHIPPED / VECTORS).read_text())


def test_the_shipped_files_are_a_fresh_generation() -> None:
    assert (SHIPPED / VECTORS).read_text() == dumps(golden_vectors())
    assert (SHIPPED / SCHEMA).read_text() == dumps(golden_schema())


def case_from_file(case: dict[str, Any]) -> GoldenCase:
    """The file's inputs read back as a case (strings to fractions; nan and inf kept)."""
    inputs, s = case["inputs"], case["inputs"]["sampling"]

    def row(values: list[str]) -> tuple[Fraction | str, ...]:
        return tuple(v if v in ("nan", "inf", "-inf") else Fraction(v) for v in values)

    def optional(text: str | None) -> Fraction | None:
        return None if text is None else Fraction(text)

    uniforms = tuple(
        (tuple(Fraction(u) for u in given["accept_uniforms"]), Fraction(given["draw_uniform"]))
        for given in case["expected"].get("with_uniforms", [])
    )
    return GoldenCase(
        case["name"],
        case["description"],
        tuple(row(r) for r in inputs["target_probs"]),
        tuple(row(r) for r in inputs["draft_probs"]),
        tuple(inputs["draft_ids"]),
        Sampling(
            Fraction(s["temperature"]),
            s["top_k"],
            optional(s["top_p"]),
            optional(s["min_p"]),
            s["filter_order"],
            s["greedy"],
        ),
        uniforms,
        nonfinite=case["expected"]["refused"],
    )


@pytest.mark.parametrize("case", shipped()["cases"], ids=lambda c: c["name"])
def test_the_reference_reproduces_the_vector_from_its_inputs(case: dict[str, Any]) -> None:
    assert expected_of(case_from_file(case)) == case["expected"]


def test_the_law_of_every_round_sums_to_one_and_floats_match_fractions() -> None:
    for case in shipped()["cases"]:
        if case["expected"]["refused"]:
            assert "not a finite number" in case["expected"]["reason"]
            continue
        law = case["expected"]["law"]
        assert sum(Fraction(o["probability"]) for o in law) == 1
        for outcome in law:
            assert outcome["probability_float"] == float(Fraction(outcome["probability"]))
            assert outcome["accepted"] == len(outcome["emitted"]) - 1


def test_the_boundary_cases_are_there() -> None:
    names = {c["name"] for c in shipped()["cases"]}
    assert {
        "top-k-tie-keep-ties", "top-k-tie-exactly-k", "top-p-exact", "min-p-binding",
        "draft-zeros", "p-equals-q",
        "rejected-last", "all-accepted-bonus", "nonfinite-target", "nonfinite-draft",
        "greedy-ties", "filters-sequential", "filters-joint",
    } <= names  # fmt: skip
    by_name = {c["name"]: c["expected"] for c in shipped()["cases"]}
    # The last draft of rejected-last has no target mass: no outcome keeps both drafts.
    assert all(o["accepted"] < 2 for o in by_name["rejected-last"]["law"])
    assert all(o["accepted"] == 2 for o in by_name["all-accepted-bonus"]["law"])


def fractions(rows: list[list[str]]) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in rows]


def test_the_top_k_tie_vectors_follow_each_tie_rule_by_hand() -> None:
    """Regression: the one tie vector (``top-k-tie``) kept exactly k, the lower id, under the
    label of vLLM and HF, which keep every tied token. Rows (4, 3, 3, 2), (1, 3, 3, 3),
    (5, 2, 2, 1) / their sums at k = 2: keeping ties gives 3 tokens per row, exactly k the 2
    lower ids."""
    by_name = {c["name"]: c for c in shipped()["cases"]}
    assert "top-k-tie" not in by_name
    keep, exact = by_name["top-k-tie-keep-ties"], by_name["top-k-tie-exactly-k"]
    f = Fraction
    assert fractions(keep["expected"]["processed_target"]) == [
        [f(2, 5), f(3, 10), f(3, 10), 0],
        [0, f(1, 3), f(1, 3), f(1, 3)],
        [f(5, 9), f(2, 9), f(2, 9), 0],
    ]
    assert fractions(exact["expected"]["processed_target"]) == [
        [f(4, 7), f(3, 7), 0, 0],
        [0, f(1, 2), f(1, 2), 0],
        [f(5, 7), f(2, 7), 0, 0],
    ]
    assert keep["inputs"]["sampling"]["filter_order"] == "vllm"
    assert exact["inputs"]["sampling"]["filter_order"] == "llama.cpp"
    for engine in ("vLLM", "HF transformers", "FlashInfer"):
        assert engine in keep["description"]
    assert "llama.cpp" in exact["description"] and "exactly k" in exact["description"]


def oracle_law(case: dict[str, Any]) -> dict[tuple[int, ...], Fraction]:
    """The law of one chain round, written here from the convention alone (not the reference):
    draft k accepted with probability min(1, p/q); at a rejection the correction law
    norm(max(p - q, 0)); after every draft the bonus from the last row. Greedy: the argmax
    (lowest id) of the processed rows, deterministically."""
    p = fractions(case["expected"]["processed_target"])
    q = fractions(case["inputs"]["draft_probs"])
    ids = case["inputs"]["draft_ids"]
    law: dict[tuple[int, ...], Fraction] = {}
    if case["inputs"]["sampling"]["greedy"]:
        out: list[int] = []
        for k, x in enumerate([*ids, None]):
            best = max(range(len(p[k])), key=lambda v: (p[k][v], -v))
            out.append(best)
            if best != x:
                break
        return {tuple(out): Fraction(1)}
    reach = Fraction(1)
    for k, x in enumerate(ids):
        accept = min(Fraction(1), p[k][x] / q[k][x]) if q[k][x] > 0 else Fraction(1)
        residual = [max(a - b, Fraction(0)) for a, b in zip(p[k], q[k], strict=True)]
        total = sum(residual, Fraction(0))
        for v, weight in enumerate(residual):
            if weight > 0 and accept < 1:
                law[(*ids[:k], v)] = reach * (1 - accept) * weight / total
        reach *= accept
    for v, mass in enumerate(p[len(ids)]):
        if mass > 0 and reach > 0:
            law[(*ids, v)] = reach * mass
    return law


def test_an_independent_fraction_oracle_gives_every_law() -> None:
    """Every non-refused vector's law equals the oracle's exactly, from the processed rows."""
    for case in shipped()["cases"]:
        if case["expected"]["refused"]:
            continue
        want = {tuple(o["emitted"]): Fraction(o["probability"]) for o in case["expected"]["law"]}
        assert oracle_law(case) == want, case["name"]


def test_a_uniform_on_a_threshold_is_refused() -> None:
    half = Fraction(1, 2)
    case = GoldenCase("edge", "", ((half, half), (half, half)), ((Fraction(1), Fraction(0)),), (0,))
    program = round_program(case, [case.target[0], case.target[1]], [case.draft[0]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="within"):
        check_margin(program, (half,), Fraction(1, 4))  # accepted iff u < p/q = 1/2


def validate(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The JSON Schema keywords the golden schema uses, checked (a small validator: the
    environment has no jsonschema)."""
    errors: list[str] = []
    kinds = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
             "array": list, "object": dict, "null": type(None)}  # fmt: skip
    if "type" in schema:
        allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = any(
            isinstance(value, kinds[t])
            and not (t in ("integer", "number") and value is True)
            and not (t in ("integer", "number") and value is False)
            for t in allowed
        )
        if not ok:
            return [f"{where}: {value!r} is not {allowed}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} != {schema['const']!r}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if "minimum" in schema and number and value < schema["minimum"]:
        errors.append(f"{where}: {value} < {schema['minimum']}")
    if "maximum" in schema and number and value > schema["maximum"]:
        errors.append(f"{where}: {value} > {schema['maximum']}")
    if "exclusiveMinimum" in schema and number and value <= schema["exclusiveMinimum"]:
        errors.append(f"{where}: {value} <= {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and number and value >= schema["exclusiveMaximum"]:
        errors.append(f"{where}: {value} >= {schema['exclusiveMaximum']}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        errors.append(f"{where}: shorter than {schema['minLength']}")
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{where}: fewer than {schema['minItems']} items")
    if "items" in schema:
        for i, item in enumerate(value):
            errors += validate(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        errors += [f"{where}: {k} missing" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                errors += validate(item, schema["properties"][key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected key {key}")
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema:
            passing = sum(not validate(value, option, where) for option in schema[keyword])
            if passing == 0 or (keyword == "oneOf" and passing > 1):
                errors.append(f"{where}: {passing} of the {keyword} options match")
    return errors


def test_the_vectors_follow_their_schema_and_a_stray_key_does_not() -> None:
    document = shipped()
    assert validate(document, golden_schema()) == []
    document["cases"][0]["expected"]["law"][0]["weight"] = 1
    assert validate(document, golden_schema()) == [
        "$.cases[0].expected: 0 of the oneOf options match"
    ]


def _sampling(document: dict[str, Any]) -> dict[str, Any]:
    return document["cases"][0]["inputs"]["sampling"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda d: _sampling(d).update(filter_order="reverse"), "filter_order: 'reverse'"),
        (lambda d: d["cases"][0]["inputs"]["target_probs"][0].__setitem__(0, "-1/2"), "-1/2"),
        (lambda d: _sampling(d).update(top_p="1/0", top_p_float=0.5), "top_p: 0 of the anyOf"),
        (lambda d: _sampling(d).update(temperature="-1", temperature_float=-1.0), "-1"),
        (lambda d: d.update(cases=[]), "$.cases: fewer than 1 items"),
        (
            lambda d: d["cases"][0]["expected"]["law"][0].update(probability_float=1.5),
            "expected: 0",
        ),
        (
            lambda d: d["cases"][0]["expected"]["with_uniforms"][0].update(draw_uniform_float=1.0),
            "expected: 0 of the oneOf",
        ),
    ],
    ids=["order", "negative", "zero-denominator", "temperature", "no-cases", "prob", "uniform"],
)
def test_the_schema_constrains_every_field(change: Any, error: str) -> None:
    """Regression: the schema accepted any filter_order string, negative fractions, 1/0, a
    negative temperature and an empty case list."""
    document = shipped()
    change(document)
    errors = validate(document, golden_schema())
    assert errors and any(error in e for e in errors), errors


def test_the_command_writes_both_files_and_refuses_a_file_as_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path / "v1")]) == 0
    assert (tmp_path / "v1" / VECTORS).read_text() == (SHIPPED / VECTORS).read_text()
    (tmp_path / "file").write_text("")
    assert main(["--out", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err.strip().endswith("exists and is not a folder")


def build(tmp_path: Path, *flags: str) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler on PATH (cc, gcc or clang): the C checker cannot be built")
    binary = tmp_path / "check_golden"
    command = [compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *flags]
    subprocess.run([*command, "-o", str(binary), *map(str, C_SOURCES), "-lm"], check=True)
    return binary


def test_the_c_consumer_passes_every_vector(tmp_path: Path) -> None:
    out = subprocess.run(
        [build(tmp_path), SHIPPED / VECTORS], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == f"{len(shipped()['cases'])} cases, 0 failed"


def test_the_c_consumer_with_the_residual_bug_fails(tmp_path: Path) -> None:
    binary = build(tmp_path, "-DSPECPROOF_BUG_RESIDUAL_FROM_TARGET")
    out = subprocess.run([binary, SHIPPED / VECTORS], capture_output=True, text=True, check=False)
    assert out.returncode == 1
    assert "FAIL rejected-last: outcome #0: probability 0.25, expected 0.20833333333333334" in (
        out.stdout
    )
