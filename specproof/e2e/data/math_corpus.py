"""The "math" domain: seeded arithmetic problems with worked answers, generated, never downloaded.

Each document holds a run of problems; each problem states a task, works it in short exact steps
(one operation per line) and ends with ``Answer: ...``. Document ``i`` depends only on ``i``, so
the corpus is the same on every machine and Python version (string seeds of ``random.Random``
are hashed with SHA-512).
"""

from __future__ import annotations

import random
from collections.abc import Callable

MATH_DOCUMENTS = 1500
PROBLEMS_PER_DOCUMENT = 10

NAMES = ("Ada", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kofi", "Lea")
ITEMS = ("apples", "marbles", "books", "coins", "stamps", "pencils", "cards", "shells")


def _chain(rng: random.Random) -> str:
    """A sum or difference of three to five numbers, worked left to right."""
    terms = [rng.randint(2, 99) for _ in range(rng.randint(3, 5))]
    signs = [rng.choice("+-") for _ in terms[1:]]
    expression = str(terms[0]) + "".join(f" {s} {t}" for s, t in zip(signs, terms[1:], strict=True))
    lines = [f"Compute {expression}."]
    total = terms[0]
    for sign, term in zip(signs, terms[1:], strict=True):
        after = total + term if sign == "+" else total - term
        lines.append(f"{total} {sign} {term} = {after}")
        total = after
    return "\n".join([*lines, f"Answer: {total}"])


def _product(rng: random.Random) -> str:
    """A two-digit by two-digit product, split by the tens and units of the second factor."""
    a, b = rng.randint(11, 99), rng.randint(11, 99)
    tens, units = b - b % 10, b % 10
    lines = [f"Compute {a} * {b}.", f"{a} * {tens} = {a * tens}"]
    if units:
        lines += [f"{a} * {units} = {a * units}", f"{a * tens} + {a * units} = {a * b}"]
    return "\n".join([*lines, f"Answer: {a * b}"])


def _equation(rng: random.Random) -> str:
    """a x + b = c with an integer root."""
    a, x, b = rng.randint(2, 12), rng.randint(-20, 30), rng.randint(1, 60)
    c = a * x + b
    return "\n".join(
        [
            f"Solve {a}x + {b} = {c}.",
            f"{a}x = {c} - {b} = {c - b}",
            f"x = {c - b} / {a} = {x}",
            f"Answer: x = {x}",
        ]
    )


def _division(rng: random.Random) -> str:
    """Integer division with a remainder."""
    divisor, quotient = rng.randint(3, 19), rng.randint(5, 60)
    remainder = rng.randint(0, divisor - 1)
    dividend = divisor * quotient + remainder
    return "\n".join(
        [
            f"Divide {dividend} by {divisor}.",
            f"{divisor} * {quotient} = {divisor * quotient}",
            f"{dividend} - {divisor * quotient} = {remainder}",
            f"Answer: {quotient} remainder {remainder}",
        ]
    )


def _percent(rng: random.Random) -> str:
    """A whole-number percentage of a multiple of 20."""
    percent, base = rng.choice((5, 10, 15, 20, 25, 30, 40, 50, 75)), 20 * rng.randint(2, 40)
    product = base * percent
    return "\n".join(
        [
            f"What is {percent}% of {base}?",
            f"{base} * {percent} = {product}",
            f"{product} / 100 = {product // 100}",
            f"Answer: {product // 100}",
        ]
    )


def _story(rng: random.Random) -> str:
    """A word problem: a start, some groups bought, some given away."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    start, groups, size = rng.randint(5, 60), rng.randint(2, 9), rng.randint(2, 12)
    given = rng.randint(1, start + groups * size - 1)
    bought = groups * size
    return "\n".join(
        [
            f"{name} has {start} {item}, buys {groups} packs of {size} {item} "
            f"and gives away {given}. How many {item} are left?",
            f"{groups} * {size} = {bought}",
            f"{start} + {bought} = {start + bought}",
            f"{start + bought} - {given} = {start + bought - given}",
            f"Answer: {start + bought - given}",
        ]
    )


PROBLEM_KINDS: tuple[Callable[[random.Random], str], ...] = (
    _chain,
    _product,
    _equation,
    _division,
    _percent,
    _story,
)


def math_document(index: int) -> str:
    """Document ``index``: numbered problems separated by blank lines."""
    rng = random.Random(f"specproof-math-{index}")
    problems = [
        f"Problem {n}. {rng.choice(PROBLEM_KINDS)(rng)}"
        for n in range(1, PROBLEMS_PER_DOCUMENT + 1)
    ]
    return "\n\n".join(problems) + "\n"
