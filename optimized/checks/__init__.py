"""Input checks of the optimized entry points, in the order a call meets them.

1. The contract: :mod:`.contract` (what every entry point promises to refuse, the error type,
   dtype / shape / device checks, the sum tolerance), :mod:`.arguments` (the Philox words
   and per-request values), :mod:`.streams` (each request's Philox stream, decided once) and
   :mod:`.chain_call` (chain verification's checked arguments, as both backends take them).
   Host metadata only; run on every call, ``validate=False`` included.
2. Recorded checks (``validate=True``): :mod:`.content` (ids, lengths, temperatures, drafted
   tokens, whole rows), :mod:`.row_contents` (the rows chain verification reads, checked on the
   values it computes) and :mod:`.tree_links` (tree structure). Each records a boolean tensor of
   violations; none reads it back.
3. One synchronisation: :class:`.recorded.DeferredChecks` reads every recorded violation back
   at once (:meth:`~.recorded.DeferredChecks.raise_if_any`).
4. A worded refusal: only when something was violated, the first recorded violation is put
   into words and raised as :class:`.contract.InvalidInputError`.
"""

from .contract import InvalidInputError

__all__ = ["InvalidInputError"]
