"""The C consumer (``examples/engine_ci/golden_c``) validates what it reads: malformed vector files
(each finding of issue 56 on today's consumer: missing fields, a missing accept uniform, deep
nesting, an empty or truncated file, raw rows and ``accepted`` that disagree with the rest) and
seeded mutations of the real file (truncations, deleted fields, wrong types) are refused with exit
status 2 and a message naming the case and the field, never a crash, a sanitizer report or a pass.
Built with ``-fsanitize=address,undefined``; skipped, with the reason, without a C compiler or the
sanitizer runtime. Exact checks: no false-fail risk."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specproof.commands.golden import VECTORS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "golden" / "v1" / VECTORS
C_CONSUMER = ROOT / "examples" / "engine_ci" / "golden_c"
C_SOURCES = [C_CONSUMER / "check_golden.c", C_CONSUMER / "json_reader.c"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1"]
ENV = {
    **os.environ,
    "ASAN_OPTIONS": "detect_leaks=1:exitcode=86",
    "UBSAN_OPTIONS": "halt_on_error=1:exitcode=87:print_stacktrace=1",
}
REFUSED = 2
"""The consumer's exit status for a file it refuses (1: a case failed, 0: every case passed)."""


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler on PATH (cc, gcc or clang): the C consumer cannot be built")
    binary = tmp_path_factory.mktemp("consumer") / "check_golden"
    command = [compiler, "-std=c99", "-Wall", "-Wextra", "-Werror", *SANITIZERS]
    built = subprocess.run(
        [*command, "-o", str(binary), *map(str, C_SOURCES), "-lm"],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0 and "sanitize" in built.stderr:
        pytest.skip(f"{compiler} cannot link the address and undefined-behaviour sanitizers")
    assert built.returncode == 0, built.stderr
    return binary


def run(consumer: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(consumer), str(path)], capture_output=True, text=True, check=False, env=ENV
    )


def refusal(consumer: Path, folder: Path, text: str | bytes) -> str:
    """The consumer's message on ``text``, asserted to be a clean refusal."""
    path = folder / "vectors.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    out = run(consumer, path)
    assert "Sanitizer" not in out.stderr and "runtime error" not in out.stderr, out.stderr
    assert out.returncode == REFUSED, (out.returncode, out.stdout[-300:], out.stderr)
    assert "cases, 0 failed" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("check_golden: "), out.stderr
    return lines[0]


def document() -> dict[str, Any]:
    return json.loads(SHIPPED.read_text())


def case_index(name: str) -> int:
    return [c["name"] for c in document()["cases"]].index(name)


def mutated(change: Any) -> str:
    doc = document()
    change(doc)
    return json.dumps(doc, indent=1)


def test_the_real_file_passes_under_the_sanitizers(consumer: Path) -> None:
    out = run(consumer, SHIPPED)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == f"{len(document()['cases'])} cases, 0 failed"
    assert out.stderr == ""


def _drop(path: list[Any], key: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        node: Any = doc
        for step in path:
            node = node[step]
        del node[key]

    return change


def _set(path: list[Any], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        node: Any = doc
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value

    return change


def _swap_raw_tokens(doc: dict[str, Any]) -> None:
    """Tokens 0 and 1 of the basic case's first raw row swapped in all three forms: the row
    stays a law, but its processed row no longer follows from it."""
    inputs = doc["cases"][0]["inputs"]
    for key in ("target_probs", "target_probs_float", "target_logits"):
        row = inputs[key][0]
        row[0], row[1] = row[1], row[0]


def _third_of_the_first_raw_row(doc: dict[str, Any]) -> None:
    """Token 0 of the basic case's first raw row set to 1/3 (from 1/2) in all three forms."""
    inputs = doc["cases"][0]["inputs"]
    inputs["target_probs"][0][0] = "1/3"
    inputs["target_probs_float"][0][0] = 1 / 3
    inputs["target_logits"][0][0] = math.log(1 / 3)


def _shorten_uniforms(doc: dict[str, Any]) -> None:
    doc["cases"][0]["expected"]["with_uniforms"][0]["accept_uniforms_float"].pop()


def _wrong_accepted(doc: dict[str, Any]) -> None:
    doc["cases"][0]["expected"]["with_uniforms"][0]["accepted"] -= 1


def _wrong_law_prefix(doc: dict[str, Any]) -> None:
    outcome = next(o for o in doc["cases"][0]["expected"]["law"] if o["accepted"] == 1)
    outcome["emitted"][0] = (outcome["emitted"][0] + 1) % 4


MALFORMED = {
    # name: (change, the case and field the message must name)
    "one accept uniform removed": (
        _shorten_uniforms,
        'case #0 ("basic"): field expected.with_uniforms[0].accept_uniforms_float: 1 items',
    ),
    "sampling.greedy missing": (
        _drop(["cases", 0, "inputs", "sampling"], "greedy"),
        'case #0 ("basic"): field inputs.sampling.greedy: missing',
    ),
    "expected.refused missing": (
        _drop(["cases", 1, "expected"], "refused"),
        'case #1 ("p-equals-q"): field expected.refused: missing',
    ),
    "with_uniforms missing": (
        _drop(["cases", 2, "expected"], "with_uniforms"),
        'case #2 ("draft-zeros"): field expected.with_uniforms: missing',
    ),
    "law[0].probability_float missing": (
        _drop(["cases", 3, "expected", "law", 0], "probability_float"),
        'case #3 ("rejected-last"): field expected.law[0].probability_float: missing',
    ),
    "case name missing": (_drop(["cases", 4], "name"), "case #4: field name: missing"),
    "a raw row one token short": (
        lambda doc: doc["cases"][0]["inputs"]["target_probs"][1].pop(),
        'case #0 ("basic"): field inputs.target_probs[1]: 3 items, expected 4',
    ),
    "a float that is not its fraction": (
        _set(["cases", 0, "inputs", "target_probs", 0, 0], "1/3"),
        "field inputs.target_probs_float[0][0]: 0.5, but the exact value is 0.33",
    ),
    "a raw row that is not a law": (
        _third_of_the_first_raw_row,
        "field inputs.target_probs[0]: sums to 0.83",
    ),
    "raw rows the processed rows do not follow": (
        _swap_raw_tokens,
        "field expected.processed_target[0]: token 0: 0.5, not the raw row at the temperature",
    ),
    "accepted disagrees with emitted": (
        _wrong_accepted,
        "field expected.with_uniforms[0].accepted: 1, but emitted holds 3 tokens",
    ),
    "a law outcome that emits another draft": (
        _wrong_law_prefix,
        "but accepted = 1 and draft 1 is token 1",
    ),
    "greedy as a string": (
        _set(["cases", 0, "inputs", "sampling", "greedy"], "false"),
        "field inputs.sampling.greedy: a string, expected a boolean",
    ),
    "an unknown filter order": (
        _set(["cases", 0, "inputs", "sampling", "filter_order"], "reverse"),
        'field inputs.sampling.filter_order: "reverse", expected vllm, sequential',
    ),
    "a negative temperature": (
        _set(["cases", 0, "inputs", "sampling", "temperature"], "-1"),
        'field inputs.sampling.temperature: "-1" is not a fraction',
    ),
    "top-p 1/0": (
        _set(["cases", 0, "inputs", "sampling", "top_p"], "1/0"),
        'field inputs.sampling.top_p: "1/0" is not a fraction',
    ),
    "a draft id outside the vocabulary": (
        _set(["cases", 0, "inputs", "draft_ids", 0], 4),
        "field inputs.draft_ids[0]: 4, expected an integer in [0, 3]",
    ),
    "no cases": (_set(["cases"], []), "field cases: 0 items"),
    "a refused case with finite rows": (
        _set(["cases", 0, "expected"], {"refused": True, "reason": "x"}),
        "field expected.refused: true, but every row is finite",
    ),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_file_is_refused_naming_the_case_and_field(
    consumer: Path, tmp_path: Path, name: str
) -> None:
    """Regression: the consumer read uninitialised memory on a missing uniform (and printed
    "16 cases, 0 failed"), dereferenced NULL on a missing field, never read the raw rows or
    ``accepted``."""
    change, message = MALFORMED[name]
    assert message in refusal(consumer, tmp_path, mutated(change))


def test_an_empty_a_deep_and_a_truncated_file_are_refused(consumer: Path, tmp_path: Path) -> None:
    """Regression: an empty file passed (exit 0), 200,000 nested [ overflowed the stack."""
    assert refusal(consumer, tmp_path, "").endswith("not valid JSON: the text is empty")
    assert "nested deeper than JSON_MAX_DEPTH" in refusal(consumer, tmp_path, "[" * 200_000)
    text = SHIPPED.read_text()
    cut = refusal(consumer, tmp_path, text[: text.index('"min-p-binding"') + 600])
    assert 'cases[8] ("min-p-binding").' in cut and "truncated" in cut
    assert "a NUL byte" in refusal(consumer, tmp_path, b'{"format": "\0"}')
    assert "text after the value" in refusal(consumer, tmp_path, text + "]")


# Fuzzing -----------------------------------------------------------------------------------


def locations(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value below the root."""
    out = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in items:
        out.append((*path, key))
        out += locations(child, (*path, key))
    return out


def where(path: tuple[Any, ...]) -> tuple[str, str]:
    """The consumer's words for ``path``: the case (``case #i (`` followed by its name, or
    ``case #i:`` when the name is what is wrong) and the field, within the case when inside one."""
    inside = path[0] == "cases" and len(path) > 2
    text = ""
    for step in path[2:] if inside else path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    if not inside:
        return "", text
    return (f"case #{path[1]}: " if path[2:] == ("name",) else f"case #{path[1]} ("), text


OTHER_KIND = {str: 7, bool: "x", int: "x", float: "x", type(None): "x", list: {}, dict: []}
"""A value of a kind the field never takes."""


def mutation(rng: random.Random, doc: dict[str, Any], text: str) -> tuple[str, list[str]]:
    """A seeded mutation of the real file, and the words its refusal must contain."""
    kind = rng.choice(["truncate", "delete", "retype"])
    if kind == "truncate":
        return text[: rng.randrange(1, len(text) - 2)], ["truncated"]
    doc = copy.deepcopy(doc)
    if kind == "delete":
        path = rng.choice([p for p in locations(doc) if isinstance(p[-1], str)])
    else:
        path = rng.choice(locations(doc))
    node: Any = doc
    for step in path[:-1]:
        node = node[step]
    if kind == "delete":
        del node[path[-1]]
    else:
        node[path[-1]] = OTHER_KIND[type(node[path[-1]])]
    case, field = where(path)
    return json.dumps(doc, indent=1), [case, f"field {field}: "]


def fuzz(consumer: Path, folder: Path, seed: int, count: int) -> None:
    rng = random.Random(seed)
    doc, text = document(), SHIPPED.read_text()
    for _ in range(count):
        mutant, words = mutation(rng, doc, text)
        message = refusal(consumer, folder, mutant)
        assert all(word in message for word in words), (words, message)


def test_seeded_mutations_of_the_real_file_are_refused(consumer: Path, tmp_path: Path) -> None:
    fuzz(consumer, tmp_path, seed=56, count=40)


@pytest.mark.slow
def test_many_seeded_mutations_of_the_real_file_are_refused(consumer: Path, tmp_path: Path) -> None:
    fuzz(consumer, tmp_path, seed=5656, count=1500)
