"""Where the torch backend's time goes at the headline shape (B = 64, k = 8, V = 128,256, one
thread, realistic drafts, validate=True): the top operators by self CPU time, torch.profiler
over 3 calls. Then what validation adds at B = 1, where it is fixed work: operator calls per
call with validate=True against validate=False. Inputs are those of
``specproof/runners/kernel_bench.py``."""

from __future__ import annotations

from functools import partial

import torch
from torch.profiler import profile

from specproof.optimized import chain_verify
from specproof.runners.kernel_bench import HEADLINE, make_inputs


def torch_call(batch: int, logits: bool, validate: bool = True) -> partial[object]:
    """Chain verification at (batch, k, V) = (``batch``, headline k and V), torch backend,
    realistic drafts, as a call without arguments."""
    _, n, vocab = HEADLINE
    target, draft, tokens = make_inputs(
        batch, n, vocab, True, logits, torch.device("cpu"), seed=batch + n
    )
    return partial(
        chain_verify,
        target,
        draft,
        tokens,
        seed=1,
        backend="torch",
        target_is_logits=logits,
        draft_is_logits=logits,
        validate=validate,
    )


def main() -> None:
    torch.set_num_threads(1)
    for logits in (False, True):
        call = torch_call(HEADLINE[0], logits)
        call()
        with profile() as prof:
            for _ in range(3):
                call()
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:6]
        shares = "; ".join(f"{e.key} {100 * e.self_cpu_time_total / total:.0f} %" for e in top)
        kind = "logits" if logits else "probabilities"
        print(f"{kind}: {total / 3e3:.1f} ms per call profiled; {shares}")


def operator_calls(call: partial[object]) -> int:
    call()
    with profile() as prof:
        call()
    return sum(e.count for e in prof.key_averages())


def validation_calls() -> None:
    for logits in (False, True):
        counts = {v: operator_calls(torch_call(1, logits, v)) for v in (True, False)}
        kind = "logits" if logits else "probabilities"
        print(
            f"{kind}, B = 1: {counts[True]} operator calls validated, {counts[False]} with "
            f"validate=False ({counts[True] - counts[False]} more)"
        )


if __name__ == "__main__":
    main()
    validation_calls()
