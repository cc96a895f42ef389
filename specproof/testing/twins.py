"""Must-fail twins: the subject under test, handed a deliberately wrong target.

A twin calls the subject with every target row shifted by one token id (``torch.roll`` along the
vocabulary, on probabilities and on logits alike, so filters and temperature still apply), which
is what a verifier that reads the target at the wrong vocabulary offset does. The twin runs on
the cases the call ran, and stops at the first it fails. On small-vocab (seed 0), the first
case of every default run, a correct verifier's twin has a round law at exact TV 0.587 from the
law the check expects (``tests/plugin/test_twins.py``), far beyond every level's delta, so the
check fails it with probability >= its power; a check that still passes the twin has lost its
power: too few rounds, or a subject that does not depend on the target it is given (a mock, a
cached answer). A twin whose target argument is no float tensor of rows is refused at its
call (:class:`TwinRefused`): the check then reports an error, never a detection.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from specproof.audit.signatures import Signature, signature_named


def shifted(rows: torch.Tensor) -> torch.Tensor:
    """Rows with every entry moved one token id up (the last wraps to id 0)."""
    return torch.roll(rows, 1, dims=-1)


class TwinRefused(ValueError):
    """The argument a signature names as its target rows is not there, or is no float tensor:
    the twin cannot shift it (a signature registered with the wrong ``target_argument``)."""


def shifted_target_twin(fn: Callable[..., Any], signature: Signature) -> Callable[..., Any]:
    """``fn`` with its target rows shifted by one token id, same signature, same keywords
    (ValueError naming the known signatures for an unknown one); a call whose target argument
    is missing or no float tensor raises :class:`TwinRefused`."""
    shape = signature_named(signature)
    index = shape.target_argument

    @functools.wraps(fn)
    def twin(*args: Any, **kwargs: Any) -> Any:
        if index >= len(args):
            raise TwinRefused(
                f"the {shape.name} signature names argument {index} as the target rows, but "
                f"the call has {len(args)} positional arguments"
            )
        rows = args[index]
        if not (isinstance(rows, torch.Tensor) and rows.is_floating_point() and rows.dim()):
            what = f"{rows.dtype} tensor" if isinstance(rows, torch.Tensor) else type(rows).__name__
            raise TwinRefused(
                f"the {shape.name} signature names argument {index} as the target rows, but "
                f"it is a {what}, not float rows"
            )
        args = (*args[:index], shifted(rows), *args[index + 1 :])
        return fn(*args, **kwargs)

    return twin


def shifted_target_probs(
    target_probs: Callable[[torch.Tensor], torch.Tensor],
) -> Callable[[torch.Tensor], torch.Tensor]:
    """An engine's target law shifted by one token id: the law the engine twin is checked
    against (the engine's output law is then off by that shift)."""

    def probs(sequences: torch.Tensor) -> torch.Tensor:
        return shifted(torch.as_tensor(target_probs(sequences)))

    return probs
