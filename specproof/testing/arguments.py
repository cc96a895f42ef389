"""The checks' arguments, refused before any work: each bad one a one-line ``ValueError`` naming
the argument (a seed out of range, a token count below 1, an empty or unknown case list, a case
the signature cannot express, a timeout that is no positive number of seconds), so that a bad
argument never turns into a failed row of a correct subject."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from specproof.audit.cases import applies
from specproof.audit.filters import FilterProblem, reaches
from specproof.audit.problems import TableProblem
from specproof.audit.signatures import Signature, signature_named
from specproof.reference.filters import FILTER_ORDERS, FilterOrder
from specproof.value_limits import MAX_SECONDS, seed_problem


def checked_seed(seed: object) -> int:
    """``seed`` as an int in 0..2^62 (the twin uses seed + 1)."""
    problem = seed_problem("seed", seed)
    if problem:
        raise ValueError(problem)
    return int(seed)  # type: ignore[call-overload]


def checked_count(name: str, value: object, low: int = 1) -> int:
    """``value`` as a whole number >= ``low`` (bool refused)."""
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        number = None
    if number is None or isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    if number < low:
        raise ValueError(f"{name} must be >= {low}, got {number}")
    return number


def checked_switch(name: str, value: object) -> bool:
    """``value`` as True or False (a truthy string such as "no" is refused, not read as on)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def checked_timeout(timeout: object) -> float:
    """``timeout`` as a finite number of seconds > 0 that a thread wait takes."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}")
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_SECONDS):
        raise ValueError(f"timeout must be > 0 and finite (seconds), got {timeout!r}")
    return float(timeout)


def checked_filter_order(order: object) -> FilterOrder | None:
    """``order`` (None: the signature's engine's) as one of the known filter orders."""
    if order is not None and order not in FILTER_ORDERS:
        raise ValueError(f"filter_order must be one of {', '.join(FILTER_ORDERS)}, got {order!r}")
    return order


def checked_case_names(cases: object) -> tuple[str, ...]:
    """``cases`` as a non-empty tuple of distinct names (a lone string is refused: it would be
    read letter by letter)."""
    if isinstance(cases, str) or not isinstance(cases, Sequence | set | frozenset):
        raise ValueError(f"cases must be a list of case names, got {cases!r}")
    names = tuple(cases)
    if not names:
        raise ValueError("cases is empty: name at least one case (or leave cases out)")
    odd = [n for n in names if not isinstance(n, str)]
    if odd:
        raise ValueError(f"cases must be case names (strings), got {odd[0]!r}")
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ValueError(f"cases names {', '.join(doubled)} more than once")
    return names


def expressible(
    problems: Sequence[TableProblem], fn: Callable[..., Any], signature: Signature
) -> tuple[list[TableProblem], list[str]]:
    """The problems ``fn`` can be audited on with ``signature``, and why each other one cannot
    (one phrase per case)."""
    shape = signature_named(signature)
    kept: list[TableProblem] = []
    why: list[str] = []
    for problem in problems:
        if not applies(problem, shape):
            why.append(f"{problem.name} (the {shape.name} signature cannot express it)")
        elif isinstance(problem, FilterProblem) and not reaches(fn, shape):
            why.append(
                f"{problem.name} (the verifier takes no top_k, top_p and min_p keywords, so "
                "the request's filters cannot reach it)"
            )
        else:
            kept.append(problem)
    return kept, why
