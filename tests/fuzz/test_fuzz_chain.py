"""Fuzzed chain verification on both backends: any layout, dtype, ragged lengths, ids and
Philox words give either InvalidInputError or exactly the reference's tokens (dyadic rows), or
the reference's tokens within the margin rule (logits, extreme magnitudes and temperatures)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction

import pytest
import torch
from fuzz_layouts import (
    BAD_SEEDS,
    BAD_WORDS,
    laid_out,
    layouts,
    request_ids,
    row_dtypes,
    seeds,
    words,
)
from hypothesis import given
from hypothesis import strategies as st
from optimized_support import (
    DEVICE,
    as_fractions,
    backends,
    chain_margin,
    draw_from,
    dyadic_dist,
    emitted,
    exact_softmax,
    examples,
    record_margin,
    reference_chain,
)
from specproof.optimized import InvalidInputError, chain_verify


def greedy_chain(rows: Sequence[Sequence[float | Fraction]], tokens: list[int]) -> tuple[int, ...]:
    """Keep drafts equal to the row's argmax (lowest id on ties), then emit the argmax."""
    out: list[int] = []
    for k, x in enumerate(tokens):
        best = max(range(len(rows[k])), key=lambda v: (rows[k][v], -v))
        if x != best:
            return (*out, best)
        out.append(x)
    last = rows[len(tokens)]
    return (*out, max(range(len(last)), key=lambda v: (last[v], -v)))


@examples(30)
@given(data=st.data())
def test_chain_on_dyadic_rows(data: st.DataObject) -> None:
    batch = data.draw(st.integers(1, 3), "batch")
    n = data.draw(st.sampled_from([0, 1, 2, 3, 3]), "n")
    vocab = data.draw(st.sampled_from([1, 2, 3, 5, 8]), "vocab")
    layout = {name: data.draw(layouts, name) for name in ("target", "draft", "tokens", "lengths")}
    id_layout = data.draw(layouts.filter(lambda x: x != "expanded"), "ids layout")
    dtype = data.draw(row_dtypes, "dtype")
    deterministic = data.draw(st.booleans(), "draft=None")
    greedy = data.draw(st.lists(st.booleans(), min_size=batch, max_size=batch), "greedy rows")
    seed, round, offset = data.draw(seeds, "seed"), data.draw(words), data.draw(words)
    ids = data.draw(request_ids(batch), "request_ids")
    # Per-request streams (FlashInfer's tensor seed and offset): a key and an offset per row.
    streams = data.draw(st.sampled_from([None, torch.int64, torch.uint64]), "stream tensors")
    keys = [data.draw(seeds, "keys") for _ in range(batch)] if streams else [seed] * batch
    offsets = [data.draw(words, "offsets") for _ in range(batch)] if streams else [offset] * batch
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1), "data seed"))
    same = "expanded" in layout.values()  # every request then holds request 0's values
    cases = []
    for _ in range(1 if same else batch):
        style = rng.choice(["random", "one-hot", "sparse", "equal", "equal"])
        kind = "random" if style == "equal" else style
        q = [dyadic_dist(rng, vocab, kind) for _ in range(n)]
        p = [dyadic_dist(rng, vocab, kind) for _ in range(n + 1)]
        if style == "equal":  # p == q: every draft accepted, every position read
            p[:n] = [list(row) for row in q]
        x = [rng.randrange(vocab) if deterministic else draw_from(rng, row) for row in q]
        if deterministic and style == "equal":  # one-hot q: p one-hot at the draft
            p[:n] = [[256 * (v == t) for v in range(vocab)] for t in x]
        cases.append((p, q, x, rng.choice([n, n, rng.randint(0, n)])))
    cases = cases * batch if same else cases
    if same:
        greedy = [greedy[0]] * batch

    def tensor(values: list, dtype: torch.dtype, name: str) -> torch.Tensor:
        return laid_out(torch.tensor(values, dtype=dtype, device=DEVICE), layout[name])

    target = tensor([c[0] for c in cases], torch.float64, "target").div(256).to(dtype)
    target = laid_out(target, layout["target"])
    draft = laid_out(
        torch.tensor([c[1] for c in cases], dtype=torch.float64, device=DEVICE)
        .reshape(batch, n, vocab)
        .div(256)
        .to(dtype),
        layout["draft"],
    )
    tokens = laid_out(
        torch.tensor([c[2] for c in cases], dtype=torch.int64, device=DEVICE).reshape(batch, n),
        layout["tokens"],
    )
    lengths = tensor([c[3] for c in cases], torch.int64, "lengths")
    temperature = torch.tensor([0.0 if g else 1.0 for g in greedy], device=DEVICE)
    want = []
    for r, (p, q, x, length) in enumerate(cases):
        p_rows = [as_fractions(row) for row in p]
        if greedy[r]:
            want.append(greedy_chain(p_rows, x[:length]))
            continue
        q_rows = (
            [as_fractions([256 * (v == t) for v in range(vocab)]) for t in x[:length]]
            if deterministic
            else [as_fractions(row) for row in q[:length]]
        )
        want.append(
            reference_chain(
                p_rows,
                q_rows,
                x[:length],
                seed=keys[r],
                round=round,
                request=ids[r],
                offset=offsets[r],
            )
        )
    seed_arg: int | torch.Tensor = seed
    offset_arg: int | torch.Tensor = offset
    if streams is not None:
        bits = [k - 2**64 if k >= 2**63 else k for k in keys]
        seed_arg = laid_out(
            torch.tensor(bits, dtype=torch.int64, device=DEVICE).view(streams), id_layout
        )
        offset_arg = laid_out(torch.tensor(offsets, device=DEVICE), id_layout)
    for backend in backends():
        result = chain_verify(
            target,
            None if deterministic else draft,
            tokens,
            seed=seed_arg,
            round=round,
            offset=offset_arg,
            num_draft_tokens=lengths,
            request_ids=laid_out(torch.tensor(ids, device=DEVICE), id_layout),
            temperature=laid_out(temperature, layout["lengths"]),
            backend=backend,
        )
        assert emitted(result.tokens) == want, backend
        assert result.num_accepted.tolist() == [len(w) - 1 for w in want], backend


EXTREME_LOGITS = (float("-inf"), -3e38, -1e30, -7.0, -1.0, 0.0, 0.5, 1.0, 2.0, 1e30, 3e38)
TEMPERATURES = (0.0, 1e-39, 1e-30, 0.1, 0.5, 1.0, 1.7, 1e30)


@examples(25)
@given(data=st.data())
def test_chain_on_extreme_logits(data: st.DataObject) -> None:
    """Logits mixing -inf, +-3e38 and ordinary values, at temperatures from 1e-39 to 1e30 and
    0 (greedy), in any layout and dtype."""
    batch = data.draw(st.integers(1, 3), "batch")
    n = data.draw(st.integers(0, 2), "n")
    vocab = data.draw(st.sampled_from([1, 2, 4, 6]), "vocab")
    dtype = data.draw(row_dtypes, "dtype")
    target_layout, draft_layout = data.draw(layouts), data.draw(layouts)
    seed = data.draw(st.integers(0, 2**64 - 1), "seed")
    pool = st.sampled_from(EXTREME_LOGITS) | st.floats(-20, 20)
    row = st.lists(pool, min_size=vocab, max_size=vocab).filter(
        lambda r: any(math.isfinite(v) for v in r)
    )
    same = "expanded" in (target_layout, draft_layout)
    count = 1 if same else batch
    p_logits = data.draw(
        st.lists(st.lists(row, min_size=n + 1, max_size=n + 1), min_size=count, max_size=count),
        "target logits",
    )
    q_logits = data.draw(
        st.lists(st.lists(row, min_size=n, max_size=n), min_size=count, max_size=count),
        "draft logits",
    )
    temperatures = data.draw(
        st.lists(st.sampled_from(TEMPERATURES), min_size=count, max_size=count), "temperature"
    )
    if same:
        p_logits, q_logits, temperatures = p_logits * batch, q_logits * batch, temperatures * batch
    # float16 cannot hold 3e38: the largest finite magnitudes are clipped to its range first.
    limit = 6e4 if dtype == torch.float16 else 3e38

    def rows_of(logits: list, shape: tuple[int, ...]) -> torch.Tensor:
        values = torch.tensor(logits, dtype=torch.float64).reshape(shape)
        finite = torch.isfinite(values)
        values = torch.where(finite, values.clamp(-limit, limit), values)
        return values.to(dtype)

    target = rows_of(p_logits, (batch, n + 1, vocab))
    draft = rows_of(q_logits, (batch, n, vocab))
    temperature = torch.tensor(temperatures, dtype=torch.float32)
    # The exact laws of the rows as the kernels see them (dtype-rounded values, float32 T).
    exact = {"target": [], "draft": []}
    for name, rows in (("target", target), ("draft", draft)):
        for r in range(batch):
            t = float(temperature[r])
            exact[name].append(
                [exact_softmax(v.tolist(), t if t > 0 else 1.0) for v in rows[r].double()]
            )
    rng = random.Random(seed)
    tokens = []
    for r in range(batch):
        picks = []
        for k in range(n):
            q = exact["draft"][r][k]
            likely = [v for v in range(vocab) if q[v] >= Fraction(1, 1000)] or [0]
            picks.append(rng.choice(likely) if r == 0 or not same else tokens[0][k])
        tokens.append(picks)
    token_tensor = torch.tensor(tokens, dtype=torch.int64).reshape(batch, n)
    for backend in backends():
        result = chain_verify(
            laid_out(target.to(DEVICE), target_layout),
            laid_out(draft.to(DEVICE), draft_layout),
            token_tensor.to(DEVICE),
            seed=seed,
            temperature=temperature.to(DEVICE),
            target_is_logits=True,
            draft_is_logits=True,
            backend=backend,
        )
        got = emitted(result.tokens)
        for r in range(batch):
            p_rows, q_rows = exact["target"][r], exact["draft"][r]
            if float(temperature[r]) == 0:
                want = greedy_chain([tuple(row.tolist()) for row in target[r].double()], tokens[r])
                assert got[r] == want, (backend, r)
                continue
            want = reference_chain(p_rows, q_rows, tokens[r], seed=seed, round=0, request=r)
            near = chain_margin(p_rows, q_rows, tokens[r], seed=seed, round=0, request=r)
            record_margin(near, got[r] != want)
            assert got[r] == want or near, (backend, r, got[r], want)


CORRUPTIONS = [
    ("seed", lambda a: {**a, "seed": BAD_SEEDS[a["pick"] % len(BAD_SEEDS)]}, "seed"),
    ("round", lambda a: {**a, "round": BAD_WORDS[a["pick"] % len(BAD_WORDS)]}, "round"),
    ("offset", lambda a: {**a, "offset": BAD_WORDS[a["pick"] % len(BAD_WORDS)]}, "offset"),
    (
        "id range",
        lambda a: {
            **a,
            "request_ids": a["request_ids"] - 2**32 * (a["pick"] % 2) + 2**32 * (1 - a["pick"] % 2),
        },
        "request_ids",
    ),
    (
        "id twice",
        lambda a: {**a, "request_ids": a["request_ids"][:1].expand(2).contiguous()},
        "request_ids",
    ),
    ("id shape", lambda a: {**a, "request_ids": a["request_ids"][:1]}, "request_ids"),
    ("length", lambda a: {**a, "num_draft_tokens": a["num_draft_tokens"] + 3}, "num_draft"),
    (
        "negative length",
        lambda a: {**a, "num_draft_tokens": a["num_draft_tokens"] - 3},
        "num_draft",
    ),
    ("float length", lambda a: {**a, "num_draft_tokens": 1.5}, "num_draft"),
    (
        "temperature",
        lambda a: {**a, "temperature": -0.5 if a["pick"] % 2 else float("inf")},
        "temperature",
    ),
    ("token", lambda a: {**a, "draft_tokens": a["draft_tokens"] + 4}, "outside"),
    ("token dtype", lambda a: {**a, "draft_tokens": a["draft_tokens"].float()}, "draft_tokens"),
    ("target dtype", lambda a: {**a, "target": a["target"].double()}, "target"),
    ("draft shape", lambda a: {**a, "draft": a["draft"][:, :, :2]}, "draft"),
]


@examples(30)
@given(
    corruption=st.sampled_from(CORRUPTIONS),
    pick=st.integers(0, 9),
    layout=layouts.filter(lambda x: x != "expanded"),
)
def test_chain_refuses_bad_arguments(corruption, pick: int, layout: str) -> None:
    """Two requests drafting 2 tokens over V = 4, one argument broken: InvalidInputError
    naming it, on both backends, before any kernel runs."""
    _, corrupt, message = corruption
    target = torch.full((2, 3, 4), 0.25, device=DEVICE)
    args = {
        "target": laid_out(target, layout),
        "draft": laid_out(torch.full((2, 2, 4), 0.25, device=DEVICE), layout),
        "draft_tokens": laid_out(torch.tensor([[0, 1], [2, 3]], device=DEVICE), layout),
        "seed": 3,
        "round": 1,
        "offset": 0,
        "request_ids": laid_out(torch.tensor([7, 2**32 - 1], device=DEVICE), layout),
        "num_draft_tokens": laid_out(torch.tensor([2, 1], device=DEVICE), layout),
        "temperature": 1.0,
        "pick": pick,
    }
    broken = corrupt(args)
    del broken["pick"]
    for backend in backends():
        with pytest.raises(InvalidInputError, match=message):
            chain_verify(**broken, backend=backend)
