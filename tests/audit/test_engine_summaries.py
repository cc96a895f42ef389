"""The rows read per-token summaries taken chunk by chunk, bit for bit what the rows computed
from every run's [runs, tokens + 1, V] teacher-forced array gave, and the plan is sized by what
is really held.

The ``reference_*`` functions are the definition: the audit's computation before it kept
summaries (the whole array, ``np.cumsum`` over it, ``np.argmax`` per row), kept here verbatim.
No statistics: every assertion is an exact equality.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from specproof.audit.engine import Emission, Engine
from specproof.audit.engine import laws as engine_laws
from specproof.audit.engine.audit import MAX_ROW_BYTES, check_plan
from specproof.audit.engine.laws import next_token_rows
from specproof.audit.engine.rows import greedy_row, pit_values, support_row
from specproof.audit.engine.runs import SetupError
from specproof.audit.engine.summaries import summarise, token_summaries


def reference_teacher_forced_rows(
    probs, prompts: list[tuple[int, ...]], emitted: list[Emission], vocab: int
) -> np.ndarray:  # type: ignore[no-untyped-def]
    width = max((len(r.tokens) for r in emitted), default=0)
    out = np.zeros((len(emitted), width + 1, vocab))
    for prompt in dict.fromkeys(prompts):
        index = [i for i, p in enumerate(prompts) if p == prompt]
        rows = next_token_rows(probs, prompt, [emitted[i].tokens for i in index])
        out[index, : rows.shape[1]] = rows
    return out


def reference_pit_values(
    runs: Sequence[Emission], rows: np.ndarray, num_new_tokens: int, rng: np.random.Generator
) -> np.ndarray:
    values = rng.random((len(runs), num_new_tokens))
    cdf = np.cumsum(rows, axis=-1)
    for index, run in enumerate(runs):
        for position, token in enumerate(run.tokens):
            mass = rows[index, position, token]
            below = cdf[index, position, token] - mass
            values[index, position] = min(below + values[index, position] * mass, 1.0)
    return values


def reference_support(runs: Sequence[Emission], rows: np.ndarray) -> list[tuple[int, int, int]]:
    return [
        (index, position, token)
        for index, run in enumerate(runs)
        for position, token in enumerate(run.tokens)
        if rows[index, position, token] == 0
    ]


def reference_greedy(runs: Sequence[Emission], rows: np.ndarray) -> list[tuple[int, float]]:
    """(argmax, margin) of every token."""
    out = []
    for index, run in enumerate(runs):
        for position, token in enumerate(run.tokens):
            row = rows[index, position]
            best = int(np.argmax(row))
            out.append((best, float(row[best] - row[token])))
    return out


def random_case(seed: int, vocab: int, runs: int, tokens: int, prompts: int):  # type: ignore[no-untyped-def]
    """A seeded target whose law depends on the whole prefix (float32 rows with zeros and
    ties), runs of random lengths (EOS = 0 ends some), several prompts."""
    gen = torch.Generator().manual_seed(seed)
    weights = torch.rand((97, vocab), generator=gen)
    weights[weights < 0.3] = 0.0
    weights[:, 1] = weights[:, 2]  # ties
    weights[:, 3] = 1.0

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        key = torch.cumsum(sequences * 7 + 3, dim=1) % 97
        rows = weights[key]
        return (rows / rows.sum(-1, keepdim=True)).to(torch.float32)

    rng = np.random.default_rng(seed)
    choices = [tuple(int(t) for t in rng.integers(1, vocab, 2)) for _ in range(prompts)]
    prompt_of = [choices[int(rng.integers(prompts))] for _ in range(runs)]
    emitted = []
    for _ in range(runs):
        out = [int(t) for t in rng.integers(0, vocab, tokens)]
        ended = next((i for i, t in enumerate(out) if t == 0), None)
        emitted.append(Emission(tuple(out if ended is None else out[: ended + 1])))
    return target_probs, prompt_of, emitted


CASES = [(0, 5, 40, 4, 1), (1, 300, 290, 3, 2), (2, 9, 600, 5, 3), (3, 64, 7, 1, 1)]


@pytest.mark.parametrize(("seed", "vocab", "runs", "tokens", "prompts"), CASES)
@pytest.mark.parametrize("chunk_bytes", [None, 5_000])
def test_summaries_are_bit_for_bit_the_rows_of_the_whole_array(
    seed: int,
    vocab: int,
    runs: int,
    tokens: int,
    prompts: int,
    chunk_bytes: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs over one and several chunks of 256, and with calls cut to a few sequences (a small
    chunk budget stands in for a large V)."""
    target_probs, prompt_of, emitted = random_case(seed, vocab, runs, tokens, prompts)
    whole = reference_teacher_forced_rows(target_probs, prompt_of, emitted, vocab)
    if chunk_bytes:
        monkeypatch.setattr(engine_laws, "MAX_CHUNK_BYTES", chunk_bytes)
        assert engine_laws.chunk_size(2, tokens, vocab) < min(runs, 256)
    summaries = token_summaries(target_probs, prompt_of, emitted, vocab)
    expected = reference_pit_values(emitted, whole, tokens, np.random.default_rng([seed, 1]))
    got = pit_values(emitted, summaries, tokens, np.random.default_rng([seed, 1]))
    assert np.array_equal(got, expected)
    from_array = pit_values(emitted, whole, tokens, np.random.default_rng(9))
    assert np.array_equal(
        from_array, reference_pit_values(emitted, whole, tokens, np.random.default_rng(9))
    )
    assert reference_greedy(emitted, whole) == [
        (int(summaries.best[i, k]), float(summaries.best_mass[i, k] - summaries.mass[i, k]))
        for i, run in enumerate(emitted)
        for k in range(len(run.tokens))
    ]
    offending = reference_support(emitted, whole)
    assert offending, "the random target has zeros: some token must be off its support"
    first = offending[0]
    row = support_row("case", emitted, summaries)
    assert row.verdict == "FAIL"
    assert row.summary.startswith(f"token {first[2]} of target mass 0 at run {first[0]}, ")
    assert f"({len(offending)} such tokens)" in row.detail
    assert support_row("case", emitted, whole) == row
    assert greedy_row("case", emitted, whole) == greedy_row("case", emitted, summaries)
    assert summarise(emitted, whole).best.tolist() == summaries.best.tolist()


def test_a_greedy_run_at_a_near_tie_reads_the_same_margin() -> None:
    """A mismatch at a margin of 4e-5 is numerics, at 2e-4 a bug, from the summaries too."""
    rows = np.zeros((2, 2, 4))
    rows[:, :, 0], rows[:, :, 1] = 0.50002, 0.49998
    rows[1, 0, :3] = [0.5001, 0.4999, 0.0]
    runs = [Emission((1,)), Emission((1,))]
    assert greedy_row("c", runs[:1], rows[:1]).verdict == "pass"
    fails = greedy_row("c", runs, summarise(runs, rows))
    assert fails.verdict == "FAIL" and "margin 0.0002" in fails.summary, fails.summary


def engine_at(vocab: int, prompt_length: int) -> Engine:
    def never(*args: object) -> list[int]:
        raise AssertionError("the plan is checked before any run")

    return Engine("plan", never, never, tuple(range(1, prompt_length + 1)))


def test_a_plan_of_5000_runs_of_4_tokens_at_v_49152_is_accepted() -> None:
    """The whole array would be 5000 x 5 x 49,152 float64 = 9.2 GiB, refused before; one call's
    rows and every run's summaries are about 2 GiB."""
    check_plan(engine_at(49_152, 34), 49_152, 5_000, 4)
    assert MAX_ROW_BYTES < 5_000 * 5 * 49_152 * 8


def test_a_plan_whose_one_sequence_passes_the_limit_is_still_refused() -> None:
    """One sequence of 70 positions at V = 2^26 holds over 4 GiB by itself."""
    with pytest.raises(SetupError, match="GiB of target rows"):
        check_plan(engine_at(2**26, 66), 2**26, 10, 4)
