"""The generated math domain: deterministic, and every worked step is true arithmetic."""

from __future__ import annotations

import re

from specproof.e2e.data.corpora import load_corpora, math_documents
from specproof.e2e.data.math_corpus import math_document

STEP = re.compile(r"^(-?\d+) ([-+*/]) (-?\d+) = (-?\d+)$")
SOLVE = re.compile(r"^(\d+)x = (-?\d+) - (\d+) = (-?\d+)$")


def check_step(line: str) -> bool:
    """True when ``line`` is one exact operation whose result is right."""
    match = STEP.match(line)
    if match:
        a, op, b, c = int(match[1]), match[2], int(match[3]), int(match[4])
        value = {"+": a + b, "-": a - b, "*": a * b}.get(op)
        return value == c if value is not None else a == b * c
    match = SOLVE.match(line)
    return match is not None and int(match[2]) - int(match[3]) == int(match[4])


def test_documents_are_deterministic_and_distinct() -> None:
    assert math_document(7) == math_document(7)
    assert math_document(7) != math_document(8)
    assert [d.name for d in math_documents(3)] == ["math/00000", "math/00001", "math/00002"]


def test_every_worked_step_and_answer_is_right() -> None:
    checked = 0
    for index in range(60):
        for problem in math_document(index).strip().split("\n\n"):
            lines = problem.split("\n")
            assert lines[-1].startswith("Answer: ")
            for line in lines[1:-1]:
                if line.startswith("x = "):
                    numerator, denominator, root = re.findall(r"-?\d+", line)
                    assert int(numerator) == int(denominator) * int(root), line
                else:
                    assert check_step(line), line
                checked += 1
            answer = lines[-1].removeprefix("Answer: ").removeprefix("x = ")
            last = lines[-2].rsplit(" = ", 1)[1]
            assert answer.split(" ")[0] == last or answer.endswith(f"remainder {last}"), problem
    assert checked > 1000


def test_math_is_a_domain_with_held_out_documents() -> None:
    corpus = load_corpora()["math"]
    sizes = corpus.sizes()
    assert sizes["train_docs"] > 1000 and sizes["held_out_docs"] > 100
    assert len(corpus.stream("evaluation")) > 50_000
