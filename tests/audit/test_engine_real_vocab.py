"""The engine audit at a real vocabulary, V = 49,152 (SmolLM2's), on a synthetic target.

The target's law of the next token is a Zipf law over ranks (mass ∝ (rank + 1)^-1.4; the top
token holds 0.33) whose order over the token ids is an affine permutation keyed by a hash of
the last token: a bigram law, cheap to compute for any prefix, with no structure a token id
could exploit. Engines sample it exactly (the rank from the same float32 weights, then its
token), or with a stated bias.

Every statistical row runs at alpha = 1e-6 (a correct engine fails a row with probability at
most 1e-6; seeds fixed, so deterministic) and delta = 0.3 (the audit sizes n from it); each
biased engine's rows are asserted to fail only where the power computed here against that
bias, at that n, exceeds 0.999. The exact rows (support, greedy) cannot fail a correct engine.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from specproof.audit.engine import Emission, Engine, audit_engine
from specproof.audit.engine import laws as engine_laws
from specproof.audit.engine.audit import MAX_EXACT_CELLS
from specproof.audit.engine.binned import binned_law
from specproof.audit.settings import ErrorRates
from specproof.stats import power_lower_bound

VOCAB = 49_152
EXPONENT = 1.4
STRIDE = 10_007
"""Odd and not a multiple of 3, so rank -> STRIDE x rank - offset permutes 0..V-1 (V = 2^14 x 3)."""
UNSTRIDE = pow(STRIDE, -1, VOCAB)
PROMPT = (2024,)
TOKENS = 3
RATES = ErrorRates(delta=0.3)
TOP_K = 50
ZIPF = (torch.arange(1, VOCAB + 1, dtype=torch.float64) ** -EXPONENT).to(torch.float32)
"""The target's weight of each rank (float32, as a model's softmax would be)."""


@pytest.fixture(autouse=True)
def small_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most 128 MB per teacher-forced call (about 16 sequences here): the test's memory."""
    monkeypatch.setattr(engine_laws, "MAX_CHUNK_BYTES", 128 << 20)


def offset(last: torch.Tensor) -> torch.Tensor:
    return (last * 40_503 + 17) % VOCAB


def weights(top_k: int | None) -> torch.Tensor:
    if top_k is None:
        return ZIPF
    out = ZIPF.clone()
    out[top_k:] = 0.0
    return out


def target_probs_for(top_k: int | None = None):  # type: ignore[no-untyped-def]
    """Token t after a token with offset o has rank (t + o) x UNSTRIDE mod V, so its row is
    the slice o..o + V - 1 of the offset-0 row written twice: a copy per row, no arithmetic."""
    by_rank = weights(top_k) / weights(top_k).sum()
    base = by_rank[(torch.arange(VOCAB) * UNSTRIDE) % VOCAB]
    rows = torch.as_strided(torch.cat([base, base]), (VOCAB, VOCAB), (1, 1))

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        return rows[offset(sequences)]

    return target_probs


def rank_law(temperature: float = 1.0, top_k: int | None = None) -> np.ndarray:
    """The law of the rank an engine draws (float64 from the target's float32 weights)."""
    law = weights(top_k).double().numpy() ** (1 / temperature)
    return np.asarray(law / law.sum())


def sampler(law: np.ndarray):  # type: ignore[no-untyped-def]
    """A batched engine drawing each token's rank from ``law`` (exactly, by the inverse CDF)."""
    cdf = np.cumsum(law)

    def generate_many(prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int):  # type: ignore[no-untyped-def]
        rng = np.random.default_rng(seed)
        last = np.array([p[-1] for p in prompts], dtype=np.int64)
        out = np.zeros((len(prompts), num_new_tokens), dtype=np.int64)
        for k in range(num_new_tokens):
            ranks = np.minimum(np.searchsorted(cdf, rng.random(len(prompts)) * cdf[-1]), VOCAB - 1)
            last = (STRIDE * ranks - (last * 40_503 + 17) % VOCAB) % VOCAB
            out[:, k] = last
        return [Emission(tuple(int(t) for t in row)) for row in out]

    return generate_many


def engine(name: str, law: np.ndarray, top_k: int | None = None) -> Engine:
    def one(prompt, num_new_tokens: int, seed: int):  # type: ignore[no-untyped-def]
        return sampler(law)([tuple(prompt)], num_new_tokens, seed)[0]

    return Engine(name, one, target_probs_for(top_k), PROMPT, generate_many=sampler(law))


def verdicts(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.check.split("(N=")[0] if "binned" in r.check else r.check: r.verdict
            for r in report.results}  # fmt: skip


def power_against(n: int, null: dict, alternative: dict) -> float:  # type: ignore[type-arg]
    """The power of a goodness-of-fit row of n draws at :data:`RATES` against one known
    alternative law: it rejects once the count in A* = {alternative > null} passes the row's
    threshold (:func:`power_lower_bound`)."""
    above = [c for c in alternative if alternative[c] > null.get(c, 0.0)]
    masses = [m for m in null.values() if m > 0] + [0.0]  # the tolerance's cell
    null_above = sum(null.get(c, 0.0) for c in above)
    alternative_above = sum(alternative[c] for c in above)
    return power_lower_bound(n, masses, null_above, alternative_above, RATES.alpha, RATES.tolerance)


def test_an_exact_sampler_passes_every_row_at_v_49152() -> None:
    report = audit_engine(engine("exact", rank_law()), rates=RATES, num_new_tokens=TOKENS)
    assert report.passed, report.table()
    checks = verdicts(report)
    assert set(checks) >= {"layout", "support", "exact-binned", "pit@1", "pit@3", "pit(pooled)"}
    binned = next(r for r in report.results if "binned" in r.check)
    assert binned.power is not None and binned.power >= 1 - RATES.beta


def binned_alternative(law, first: np.ndarray, second) -> dict:  # type: ignore[no-untyped-def]
    """The binned law of an engine whose first token has law ``first`` over ids and whose
    second, after a, has law ``second(a)``."""
    out: dict = defaultdict(float)
    top = sorted(law.kept)
    for a in top:
        row = second(a)
        for b in law.kept[a]:
            out[(a, b)] += first[a] * row[b]
        out[(a, "other")] += first[a] * (1 - sum(row[b] for b in law.kept[a]))
    out[("other",)] += 1 - sum(first[a] for a in top)
    return dict(out)


def ids_law(ranks: np.ndarray, last: int) -> np.ndarray:
    """The law over token ids after ``last`` of an engine whose rank has law ``ranks``."""
    out = np.zeros(VOCAB)
    out[(STRIDE * np.arange(VOCAB) - (last * 40_503 + 17) % VOCAB) % VOCAB] = ranks
    return out


def pit_alternative(target: np.ndarray, engine_law: np.ndarray, bins: int = 10) -> dict:  # type: ignore[type-arg]
    """The law of the binned randomized PIT of one token drawn from ``engine_law`` when the
    reference is ``target`` (both over ids): U = F(x - 1) + W p(x) spreads x's mass uniformly
    over [F(x - 1), F(x)]."""
    high = np.cumsum(target)
    low = high - target
    out = {}
    for j in range(bins):
        overlap = np.clip(np.minimum(high, (j + 1) / bins) - np.maximum(low, j / bins), 0, None)
        share = np.divide(overlap, target, out=np.zeros(VOCAB), where=target > 0)
        out[j] = float(np.sum(engine_law * share))
    return out


def test_sampling_at_temperature_1_3_fails_the_binned_and_pit_rows() -> None:
    """The binned law and the first token's PIT law of the tempered engine are computed here
    from its rank law; at the audit's n each row has power > 0.999 against them."""
    hot = rank_law(temperature=1.3)
    report = audit_engine(engine("T = 1.3", hot), rates=RATES, num_new_tokens=TOKENS)
    rows = {r.check: r for r in report.results}
    binned = next(r for r in report.results if "binned" in r.check)
    null = binned_law(target_probs_for(), PROMPT, 2, frozenset(), MAX_EXACT_CELLS)
    first = ids_law(hot, PROMPT[-1])
    alternative = binned_alternative(null, first, lambda a: ids_law(hot, a))
    assert power_against(binned.n, null.law, alternative) > 0.999
    assert binned.verdict == "FAIL", report.table()
    target_first = ids_law(rank_law(), PROMPT[-1])
    pit_law = pit_alternative(target_first, first)
    assert power_against(rows["pit@1"].n, dict.fromkeys(range(10), 0.1), pit_law) > 0.999
    assert rows["pit@1"].verdict == "FAIL", report.table()


def test_halving_the_most_probable_token_fails_the_binned_and_pit_rows() -> None:
    """The engine draws the top rank with half its mass (0.16 moved to the others in
    proportion). At 1,200 runs both rows (alpha = 1e-6) have power > 0.999 against it, computed
    here from its law; at the n that delta = 0.3 asks (638) they would not (0.41 and 0.81)."""
    halved = rank_law()
    halved[0] /= 2
    halved[1:] *= (1 - halved[0]) / halved[1:].sum()
    report = audit_engine(engine("top halved", halved), rates=RATES, runs=1_200,
                          num_new_tokens=TOKENS)  # fmt: skip
    rows = {r.check: r for r in report.results}
    binned = next(r for r in report.results if "binned" in r.check)
    null = binned_law(target_probs_for(), PROMPT, 2, frozenset(), MAX_EXACT_CELLS)
    first = ids_law(halved, PROMPT[-1])
    alternative = binned_alternative(null, first, lambda a: ids_law(halved, a))
    assert power_against(binned.n, null.law, alternative) > 0.999
    assert binned.verdict == "FAIL", report.table()
    pit_law = pit_alternative(ids_law(rank_law(), PROMPT[-1]), first)
    assert power_against(rows["pit@1"].n, dict.fromkeys(range(10), 0.1), pit_law) > 0.999
    assert rows["pit@1"].verdict == "FAIL", report.table()


def greedy_engine(mistake_at: int | None = None) -> Engine:
    """The target's argmax (rank 0) at every position, or rank 1 at position ``mistake_at``."""

    def generate(prompt, num_new_tokens: int, seed: int) -> list[int]:  # type: ignore[no-untyped-def]
        out, last = [], prompt[-1]
        for k in range(num_new_tokens):
            rank = 1 if k == mistake_at else 0
            last = (STRIDE * rank - (last * 40_503 + 17) % VOCAB) % VOCAB
            out.append(last)
        return out

    return Engine("greedy", generate, target_probs_for(), PROMPT, greedy=True)


def test_a_greedy_engine_passes_and_one_off_the_argmax_fails_at_v_49152() -> None:
    """Exact rows: the runner-up at position 3 is a clear margin (0.33 against 0.12)."""
    assert audit_engine(greedy_engine(), runs=20, num_new_tokens=TOKENS).passed
    report = audit_engine(greedy_engine(mistake_at=2), runs=20, num_new_tokens=TOKENS)
    failed = next(r for r in report.results if r.check == "greedy")
    assert failed.verdict == "FAIL" and "position 3" in failed.summary, failed.summary


def test_top_k_50_passes_and_a_token_outside_the_kept_set_fails_support() -> None:
    """The engine ignoring top-k draws a rank >= 50 with probability 0.159 per token, so 100
    runs of 3 tokens show one (a miss has probability 0.841^300 < 1e-22); support is exact."""
    truncated = audit_engine(
        engine("top-k 50", rank_law(top_k=TOP_K), TOP_K), rates=RATES, num_new_tokens=TOKENS
    )
    assert truncated.passed, truncated.table()
    assert rank_law()[TOP_K:].sum() > 0.158
    ignored = audit_engine(
        engine("top-k ignored", rank_law(), TOP_K), rates=RATES, runs=100, num_new_tokens=TOKENS
    )
    support = next(r for r in ignored.results if r.check == "support")
    assert support.verdict == "FAIL" and "of target mass 0" in support.summary, support.summary
