"""The declared filter orders of :mod:`specproof.reference.filters`: laws computed by hand as
fractions (never by the code under test), bad parameters refused, and properties of every order
(hypothesis)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st
from specproof.reference.filters import (
    FILTER_ORDERS,
    ORDER_STEPS,
    TOP_K_TIES,
    FilterOrder,
    filtered,
    ranked,
)

P = (F(1, 2), F(3, 10), F(3, 20), F(1, 20))


def test_min_p_and_top_p_both_bind_by_hand() -> None:
    """p = (1/2, 3/10, 3/20, 1/20), min-p 1/5 (cut below 1/10), top-p 41/50.
    vLLM: min-p first keeps (1/2, 3/10, 3/20) / (19/20) = (10/19, 6/19, 3/19); its nucleus:
    before the third token 16/19 >= 41/50, so it keeps (10/19, 6/19) / (16/19) = (5/8, 3/8).
    transformers (min-p last): the full law's nucleus, before the third 4/5 < 41/50, before
    the fourth 19/20 >= 41/50, keeps three; min-p drops none of them: (10/19, 6/19, 3/19)."""
    assert filtered(P, min_p=F(1, 5), top_p=F(41, 50), order="vllm") == (F(5, 8), F(3, 8), 0, 0)
    for order in ("sequential", "joint"):
        law = filtered(P, min_p=F(1, 5), top_p=F(41, 50), order=order)  # type: ignore[arg-type]
        assert law == (F(10, 19), F(6, 19), F(3, 19), 0)


T_LAW = (F(1, 2), F(1, 4), F(3, 20), F(1, 10))
"""A law at its temperature; ratios to the largest 1, 1/2, 3/10, 1/5."""


def test_min_p_before_the_temperature_by_hand() -> None:
    """At T = 2 the untempered ratios are the squares 1, 1/4, 9/100, 1/25: min-p 1/4 keeps 2
    tokens before the temperature (llama.cpp), 3 after it (1/5 < 1/4 <= 3/10; vLLM):
    (1/2, 1/4) / (3/4) = (2/3, 1/3) against (1/2, 1/4, 3/20) / (9/10) = (5/9, 5/18, 1/6).
    At T = 1/2 the ratios are the square roots 1, 0.71, 0.55, 0.45: min-p 1/2 keeps 3 tokens
    before the temperature, 2 after it."""
    two, half = F(2), F(1, 2)
    assert filtered(T_LAW, min_p=F(1, 4), order="llama.cpp", temperature=two) == (
        F(2, 3),
        F(1, 3),
        0,
        0,
    )
    assert filtered(T_LAW, min_p=F(1, 4), order="vllm", temperature=two) == (
        F(5, 9),
        F(5, 18),
        F(1, 6),
        0,
    )
    before = filtered(T_LAW, min_p=F(1, 2), order="llama.cpp", temperature=half)
    assert before == (F(5, 9), F(5, 18), F(1, 6), 0)
    assert filtered(T_LAW, min_p=F(1, 2), order="vllm", temperature=half) == (
        F(2, 3),
        F(1, 3),
        0,
        0,
    )


def test_top_p_before_the_temperature_by_hand() -> None:
    """At T = 2 the untempered law is p^2 renormalised: (100, 25, 9, 4) / 138. Its nucleus at
    4/5: before the second 100/138 < 4/5, before the third 125/138 >= 4/5: two tokens,
    (2/3, 1/3). The tempered law's nucleus: before the third 3/4 < 4/5, the fourth 9/10: three,
    (5/9, 5/18, 1/6). Top-p before a non-integer temperature has no exact law: refused."""
    assert filtered(T_LAW, top_p=F(4, 5), order="llama.cpp", temperature=F(2)) == (
        F(2, 3),
        F(1, 3),
        0,
        0,
    )
    assert filtered(T_LAW, top_p=F(4, 5), order="vllm", temperature=F(2)) == (
        F(5, 9),
        F(5, 18),
        F(1, 6),
        0,
    )
    with pytest.raises(ValueError, match="integer temperatures"):
        filtered(T_LAW, top_p=F(4, 5), order="llama.cpp", temperature=F(1, 2))


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"top_p": float("nan")}, "top_p must be finite"),
        ({"top_p": 0}, r"top_p must lie in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p must lie in \(0, 1\]"),
        ({"min_p": float("nan")}, "min_p must be finite"),
        ({"min_p": -0.1}, r"min_p must lie in \[0, 1\]"),
        ({"min_p": float("inf")}, "min_p must be finite"),
        ({"top_k": 0}, "top_k must be an integer"),
        ({"top_k": 2.5}, "top_k must be an integer"),
        ({"top_k": True}, "top_k must be an integer"),
        ({"temperature": 0}, "temperature must be > 0"),
        ({"temperature": float("nan")}, "temperature must be finite"),
        ({"top_p": "0.5"}, "top_p must be a number"),
    ],
)
def test_bad_parameters_are_refused(keywords: dict[str, object], message: str) -> None:
    """Regression: ``filtered(top_p=nan)`` returned a law (every comparison with NaN is false,
    so the nucleus kept every token)."""
    with pytest.raises(ValueError, match=message):
        filtered(P, **keywords)  # type: ignore[arg-type]


def test_probabilities_must_be_exact() -> None:
    with pytest.raises(ValueError, match="exact numbers"):
        filtered((0.5, 0.5))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="filter order"):
        filtered(P, order="reverse")  # type: ignore[arg-type]


# Properties ---------------------------------------------------------------------------------

laws = (
    st.lists(st.integers(0, 12), min_size=1, max_size=6)
    .filter(any)
    .map(lambda weights: tuple(F(w, sum(weights)) for w in weights))
)
top_ps = st.none() | st.fractions(F(1, 20), 1, max_denominator=20)
min_ps = st.none() | st.fractions(0, 1, max_denominator=20)
top_ks = st.none() | st.integers(1, 6)
temperatures = st.sampled_from([F(1), F(2), F(3)])  # integer: every order is exact
orders = st.sampled_from(FILTER_ORDERS)


def support(law: tuple[F, ...]) -> set[int]:
    return {token for token, mass in enumerate(law) if mass > 0}


@given(laws, top_ks, top_ps, min_ps, orders, temperatures)
def test_every_order_gives_a_law_on_a_prefix_of_the_ranking(
    probs: tuple[F, ...],
    top_k: int | None,
    top_p: F | None,
    min_p: F | None,
    order: FilterOrder,
    temperature: F,
) -> None:
    """A law (non-negative, sums to 1), proportional to ``probs`` on what it keeps, keeping
    the argmax and a prefix of the ranking: every cut removes the least probable tokens."""
    law = filtered(
        probs, top_k=top_k, top_p=top_p, min_p=min_p, order=order, temperature=temperature
    )
    assert all(mass >= 0 for mass in law) and sum(law) == 1
    kept = support(law)
    assert ranked(probs)[0] in kept
    assert kept == set(ranked(probs)[: len(kept)])
    scale = sum(probs[token] for token in kept)
    assert all(law[token] == probs[token] / scale for token in kept)


@given(laws, top_ks, top_ps, min_ps, orders, temperatures)
def test_each_cut_only_shrinks_the_support(
    probs: tuple[F, ...],
    top_k: int | None,
    top_p: F | None,
    min_p: F | None,
    order: FilterOrder,
    temperature: F,
) -> None:
    """Dropping any one filter never keeps fewer tokens, in any order."""

    def kept(**keywords: object) -> set[int]:
        every = {"top_k": top_k, "top_p": top_p, "min_p": min_p, **keywords}
        return support(filtered(probs, order=order, temperature=temperature, **every))  # type: ignore[arg-type]

    all_three = kept()
    assert all_three <= kept(top_k=None)
    assert all_three <= kept(top_p=None)
    assert all_three <= kept(min_p=None)
    assert kept(top_k=None, top_p=None, min_p=None) == support(probs)


@given(laws, top_ks, top_ps, min_ps)
def test_each_order_is_its_documented_composition(
    probs: tuple[F, ...], top_k: int | None, top_p: F | None, min_p: F | None
) -> None:
    """vLLM: min-p on the tempered law, renormalised, then top-k, renormalised, then top-p.
    transformers: top-k, then top-p, then min-p, each on the law the last left. joint: top-k
    and top-p on the full law, then min-p. llama.cpp at T = 1: transformers' order with its own
    top-k tie rule. Each composed from one-filter calls."""

    def then(law: tuple[F, ...], **one: object) -> tuple[F, ...]:
        return filtered(law, **one)  # type: ignore[arg-type]

    llama_cpp_top_k = filtered(probs, top_k=top_k, order="llama.cpp")

    every = {"top_k": top_k, "top_p": top_p, "min_p": min_p}
    vllm = then(then(then(probs, min_p=min_p), top_k=top_k), top_p=top_p)
    hf = then(then(then(probs, top_k=top_k), top_p=top_p), min_p=min_p)
    joint_kept = support(then(probs, top_k=top_k)) & support(then(probs, top_p=top_p))
    joint_mass = sum(probs[t] for t in joint_kept)
    on_joint = tuple(p / joint_mass if t in joint_kept else F(0) for t, p in enumerate(probs))
    joint = then(on_joint, min_p=min_p)
    assert filtered(probs, order="vllm", **every) == vllm  # type: ignore[arg-type]
    assert filtered(probs, order="sequential", **every) == hf  # type: ignore[arg-type]
    llama_cpp = then(then(llama_cpp_top_k, top_p=top_p), min_p=min_p)
    assert filtered(probs, order="llama.cpp", **every) == llama_cpp  # type: ignore[arg-type]
    assert filtered(probs, order="joint", **every) == joint  # type: ignore[arg-type]


@given(laws, top_ks, top_ps, min_ps, temperatures)
def test_the_orders_agree_when_one_filter_is_set(
    probs: tuple[F, ...], top_k: int | None, top_p: F | None, min_p: F | None, temperature: F
) -> None:
    """With a single filter, every order taking its cuts after the temperature gives the same
    law; top-k alone does not depend on the temperature, so the orders with one tie rule
    agree at every temperature."""
    for one in ({"top_k": top_k}, {"top_p": top_p}, {"min_p": min_p}):
        after = {filtered(probs, order=o, **one) for o in FILTER_ORDERS if o != "llama.cpp"}  # type: ignore[arg-type]
        assert len(after) == 1
    for rule in set(TOP_K_TIES.values()):
        top_k_only = {
            filtered(probs, order=o, top_k=top_k, temperature=temperature)
            for o in FILTER_ORDERS
            if TOP_K_TIES[o] == rule
        }
        assert len(top_k_only) == 1


def test_every_order_is_declared_with_its_steps() -> None:
    assert set(ORDER_STEPS) == set(FILTER_ORDERS)
    assert ORDER_STEPS["vllm"].index("min-p") < ORDER_STEPS["vllm"].index("top-p")
    assert ORDER_STEPS["llama.cpp"][-1] == "temperature"


# Ties at the top-k edge ---------------------------------------------------------------------

TIED = (F(3, 10), F(3, 10), F(1, 5), F(1, 5))
"""Ranks 1 and 2 tied, and ranks 3 and 4."""


@pytest.mark.parametrize("order", ["vllm", "sequential", "joint"])
def test_top_k_keeps_every_token_tied_with_the_kth_where_the_engine_does(order: str) -> None:
    """Regression: order vllm kept {0} of (0.3, 0.3, 0.2, 0.2) at k = 1, while vLLM
    (apply_top_k_only masks logits < the k-th), HF (TopKLogitsWarper masks scores < the k-th)
    and FlashInfer (a token stays when fewer than k tokens are more probable) keep {0, 1}."""
    assert filtered(TIED, top_k=1, order=order) == (F(1, 2), F(1, 2), 0, 0)  # type: ignore[arg-type]
    assert filtered(TIED, top_k=3, order=order) == TIED  # type: ignore[arg-type]
    assert filtered(TIED, top_k=2, order=order) == (F(1, 2), F(1, 2), 0, 0)  # type: ignore[arg-type]


def test_llama_cpp_keeps_exactly_k_the_lower_ids() -> None:
    """llama.cpp truncates its candidates to k after a partial sort: exactly k tokens; of the
    tied ones the reference keeps the lower ids."""
    assert filtered(TIED, top_k=1, order="llama.cpp") == (1, 0, 0, 0)
    assert filtered(TIED, top_k=3, order="llama.cpp") == (F(3, 8), F(3, 8), F(1, 4), 0)


def test_each_order_states_its_top_k_tie_rule() -> None:
    assert TOP_K_TIES == {
        "vllm": "keep ties",
        "sequential": "keep ties",
        "joint": "keep ties",
        "llama.cpp": "exactly k",
    }
