"""What every verifier signature is: the :class:`VerifierSignature` base (what differs between
engines' call shapes, as attributes and methods) and the helpers every signature's calls share."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from specproof.reference.filters import FilterOrder

from ..drafting import Drafts
from ..errors import VerifierError
from ..problems import PLACEHOLDER, TableProblem
from ..requests import RequestParams
from ..settings import CallLimits, CallSettings

Verifier = Callable[..., Any]
Corrupt = Callable[[torch.Tensor], torch.Tensor]
"""Rows [B, positions, V] (probabilities or logits) -> the same rows with a case's non-finite
values written at the corrupted rows' positions."""
HuntCall = Callable[[int, torch.Generator], torch.Tensor]
"""(rounds, generator) -> [batch, gamma + 1] outputs of one hunt call."""
Call = Callable[[], torch.Tensor]


def accepts_generator(fn: Verifier) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def seed_torch(generator: torch.Generator) -> None:
    """Verifiers that draw from torch's default generator get a seed from the audit's stream.
    Without CUDA only the CPU generator is seeded: ``torch.manual_seed`` would also queue a
    lazy seed per device type, formatting a stack trace each time (0.3 ms, most of a small
    call's harness cost)."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    if torch.cuda.is_available():
        torch.manual_seed(seed)
    else:
        torch.default_generator.manual_seed(seed)


def row_slices(batch: int, limits: CallLimits) -> list[slice]:
    """Consecutive rows of at most ``limits.max_batch`` (one slice for an empty batch)."""
    most = limits.max_batch
    return [slice(start, min(start + most, batch)) for start in range(0, batch, most)] or [
        slice(0, 0)
    ]


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's intra-op threads set to one, then restored: a batch-1 call's tensors hold a few
    rows, so a second thread only adds its hand-off to every op (on a busy 2-core machine the
    hand-off waits for a core: HF's loop then cost 2 to 50 times the CPU of one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def first_output(result: Any) -> Any:
    """The emitted tokens of a call that returns them alone or as the first item of a tuple."""
    return result[0] if isinstance(result, tuple | list) else result


def in_parts(call: Callable[[slice], torch.Tensor], size: int, limits: CallLimits) -> Call:
    """``call`` once per ``limits.max_batch`` rows, the outputs stacked (-1 padded to one width); a
    part returning another number of rows than it was given is a layout failure."""

    def stacked() -> torch.Tensor:
        parts = []
        for rows in row_slices(size, limits):
            out = call(rows)
            expected = rows.stop - rows.start
            if out.dim() != 2 or out.shape[0] != expected:
                raise VerifierError(
                    f"output has shape {tuple(out.shape)}, expected [{expected}, n + 1] (the "
                    f"call on requests {rows.start}..{rows.stop - 1})"
                )
            parts.append(out.to(torch.int64))
        width = max(p.shape[1] for p in parts)
        out = torch.full((size, width), PLACEHOLDER, dtype=torch.int64)
        for rows, part in zip(row_slices(size, limits), parts, strict=True):
            out[rows, : part.shape[1]] = part
        return out

    return stacked


def corrupted_if(where: str, side: str, rows: torch.Tensor, corrupt: Corrupt) -> torch.Tensor:
    """``rows`` corrupted when the case corrupts this ``side`` ("draft" or "target")."""
    return corrupt(rows) if where == side else rows


@dataclass(frozen=True)
class RepeatedCalls:
    """The outputs of the calls rows' repeated calls on identical inputs."""

    first: torch.Tensor
    again: torch.Tensor
    third: torch.Tensor  # the seeded rows with other seeds (``first`` where none are seeded)
    seeded: np.ndarray | None  # rows with their own generator (per-request seeds)
    generator_runs: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
    """Calls with ``generator=`` seeded s1, s1 again and s2 (a keyword the verifier takes)."""


class VerifierSignature(ABC):
    """One engine's verifier call shape: what it sends, how a batch is packed and called.

    A new signature is one module defining a subclass and one line in the registry
    (:mod:`.registry`); the audit's cases ask the object, never its name."""

    name: ClassVar[str]
    """As typed after ``--signature``."""
    default_filter_order: ClassVar[FilterOrder]
    """The filter order of the engine the signature comes from (the binding cases' law)."""
    sends_bonus_row: ClassVar[bool]
    """The target's row after the last draft is sent (else the bonus token is given)."""
    draft_logits: ClassVar[bool] = False
    """Draft rows are sent as logits (else probabilities)."""
    target_logits: ClassVar[bool] = False
    """Target rows are sent as logits (else probabilities)."""
    carries_requests: ClassVar[bool] = False
    """Each call carries the requests' metadata (greedy rows, per-request seeds, parameters)."""
    takes_request_filters: ClassVar[bool] = True
    """Request filters (top-k, top-p, min-p) can reach the verifier."""
    filters_sent_raw: ClassVar[bool] = False
    """The binding filter cases send the raw target rows (the verifier applies the filters)."""
    calls_per_row: ClassVar[bool] = False
    """One call per request (batch 1): the slow cases run fewer rounds."""
    hunt_batch: ClassVar[int | None] = None
    """Rounds per hunt call (None: the hunt's default)."""
    output_arguments: ClassVar[frozenset[int]] = frozenset()
    """Positions of arguments the verifier writes into by contract (never reported)."""
    target_argument: ClassVar[int]
    """Position of the target rows (probabilities or logits) in a call."""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<signature {self.name}>"

    def reaches_filters(self, fn: Verifier) -> bool:
        """Whether ``fn`` can be audited on the binding filter cases with this signature."""
        return self.takes_request_filters

    @abstractmethod
    def call(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        """Call ``fn`` on ``drafts`` (each call carrying at most ``settings.limits.max_batch``
        requests, greedy rows marked with ``settings.marker``): the emitted tokens
        [B, gamma + 1], -1 padded."""

    def call_raw(
        self,
        fn: Verifier,
        drafts: Drafts,
        raw: torch.Tensor,
        params: RequestParams,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        """A binding filter case's call, the raw target rows ``raw`` [B, gamma + 1, V] sent
        for the verifier to filter with ``params`` (where :attr:`filters_sent_raw`)."""
        raise NotImplementedError(f"the {self.name} signature sends processed target rows")

    @abstractmethod
    def repeated_calls(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        stream: torch.Generator,
        settings: CallSettings,
    ) -> RepeatedCalls:
        """The calls rows' calls: twice on identical inputs, then with other seeds."""

    @abstractmethod
    def nonfinite_call(
        self,
        fn: Verifier,
        draft: torch.Tensor,
        tokens: torch.Tensor,
        target: torch.Tensor,
        where: str,
        corrupt: Corrupt,
        limits: CallLimits,
    ) -> Call:
        """The calls of a non-finite case (each of at most ``limits.max_batch`` requests) on
        finite probabilities ``draft`` [B, gamma, V] and
        ``target`` [B, gamma + 1, V] (full draft length), the ``where`` side ("draft" or
        "target") corrupted in the form it is sent; returns [B, gamma + 1] outputs."""

    @abstractmethod
    def hunt_call(
        self,
        fn: Verifier,
        tokens: torch.Tensor,
        draft: torch.Tensor,
        target: torch.Tensor,
        batch: int,
    ) -> HuntCall:
        """Inputs for ``batch`` rounds of one fixed round (``tokens`` [gamma], ``draft``
        [gamma, V], ``target`` [gamma + 1, V]), built once."""
