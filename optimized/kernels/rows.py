# mypy: disable-error-code="no-untyped-def"
"""Device helpers shared by the kernels: vocabulary-tiled passes over one row.

A row is either probabilities or logits. Logits are read as probabilities through the row's
largest logit m and the log-sum-exp at a temperature: p_v = exp(z_v - lse) with
z_v = (l_v - m) / T, so a probability row is never stored. Dividing the difference (never
multiplying by 1 / T) keeps z_v <= 0 with z = 0 at the largest logit, so no T > 0 and no
finite logit can overflow into a row with no token: as T -> 0 the row tends to one-hot at its
largest logit, exact ties split evenly. A T below the smallest normal float32 is scaled up by
2^64 together with the difference, so a device that flushes subnormals gives the same z.
Row pointers are 64-bit (the caller forms them from int64 indices); rows are contiguous in
the vocabulary (the entry points copy any other layout).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def scale_logits(logits, row_max, temperature):
    """z = (l - m) / T; subnormal T scaled by 2^64 with the difference (see the module)."""
    factor = tl.where(temperature < 1.1754944e-38, 18446744073709551616.0, 1.0)
    return ((logits - row_max) * factor) / (temperature * factor)


@triton.jit
def load_probs(row_ptr, cols, live, IS_LOGITS: tl.constexpr, temperature, row_max, lse):
    """Probabilities of the tokens ``cols`` of a row (0 where not ``live``)."""
    if IS_LOGITS:
        logits = tl.load(row_ptr + cols, mask=live, other=float("-inf")).to(tl.float32)
        probs = tl.exp(scale_logits(logits, row_max, temperature) - lse)
    else:
        probs = tl.load(row_ptr + cols, mask=live, other=0.0).to(tl.float32)
    return tl.where(live, probs, 0.0)


@triton.jit
def load_prob(row_ptr, token, IS_LOGITS: tl.constexpr, temperature, row_max, lse):
    """The probability of one token of a row."""
    value = tl.load(row_ptr + token).to(tl.float32)
    if IS_LOGITS:
        value = tl.exp(scale_logits(value, row_max, temperature) - lse)
    return value


@triton.jit
def row_lse(row_ptr, V, temperature, BLOCK: tl.constexpr):
    """(m, lse): the largest logit of a row and the log-sum-exp of (l - m) / T, online over
    vocabulary tiles. A tile of -inf only (masked tokens) contributes nothing."""
    running_max = tl.full((), float("-inf"), tl.float32)
    running_sum = tl.full((), 0.0, tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        live = cols < V
        logits = tl.load(row_ptr + cols, mask=live, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(logits, axis=0))
        shift = tl.where(new_max == float("-inf"), 0.0, new_max)  # no -inf - -inf
        running_sum = running_sum * tl.exp(scale_logits(running_max, shift, temperature)) + tl.sum(
            tl.exp(scale_logits(logits, shift, temperature)), axis=0
        )
        running_max = new_max
    return running_max, tl.log(running_sum)


@triton.jit
def row_argmax(row_ptr, V, BLOCK: tl.constexpr):
    """(index, bad): the index of the largest entry of a row, ties to the lowest index; ``bad``
    when the row holds a NaN or its maximum is infinite (no finite maximum to pick)."""
    best_value = tl.full((), float("-inf"), tl.float32)
    best_index = tl.full((), 0, tl.int64)
    seen_nan = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        live = cols < V
        values = tl.load(row_ptr + cols, mask=live, other=float("-inf")).to(tl.float32)
        seen_nan = tl.maximum(seen_nan, tl.max((values != values).to(tl.int32), axis=0))
        tile_best = tl.max(values, axis=0)
        tile_index = tl.min(tl.where(live & (values == tile_best), cols, V), axis=0)
        better = tile_best > best_value
        best_index = tl.where(better, tile_index.to(tl.int64), best_index)
        best_value = tl.where(better, tile_best, best_value)
    infinite = (best_value == float("inf")) | (best_value == float("-inf"))
    return best_index, (seen_nan != 0) | infinite


@triton.jit
def residual_parts(
    p_row,
    q_row,
    cols,
    live,
    token,
    P_LOGITS: tl.constexpr,
    Q_MODE: tl.constexpr,
    use_q,
    temperature,
    max_p,
    lse_p,
    max_q,
    lse_q,
):
    """(max(0, p - use_q * q), p, q) on a tile. Q_MODE: 0 dense probabilities, 1 dense logits,
    2 one-hot at ``token`` (a deterministic draft). q is 0 where it is not read."""
    p = load_probs(p_row, cols, live, P_LOGITS, temperature, max_p, lse_p)
    q = tl.zeros_like(p)
    mass = p
    if use_q != 0:
        if Q_MODE == 2:
            mass = tl.maximum(p - tl.where(cols == token, 1.0, 0.0), 0.0)
        else:
            q = load_probs(q_row, cols, live, Q_MODE == 1, temperature, max_q, lse_q)
            mass = tl.maximum(p - q, 0.0)
    return mass, p, q


@triton.jit
def residual_total(
    p_row,
    q_row,
    V,
    token,
    P_LOGITS: tl.constexpr,
    Q_MODE: tl.constexpr,
    use_q,
    temperature,
    max_p,
    lse_p,
    max_q,
    lse_q,
    BLOCK: tl.constexpr,
):
    """(total, sum p, min p, sum q, min q): total = sum_v max(0, p_v - use_q * q_v), tile by tile
    (tile sums added in vocabulary order). The sums and minima of the rows come from the same
    pass, for the input checks of probability rows (q's are 0 where q is not read)."""
    total = tl.full((), 0.0, tl.float32)
    sum_p = tl.full((), 0.0, tl.float32)
    min_p = tl.full((), float("inf"), tl.float32)
    sum_q = tl.full((), 0.0, tl.float32)
    min_q = tl.full((), float("inf"), tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        live = cols < V
        mass, p, q = residual_parts(
            p_row, q_row, cols, live, token, P_LOGITS, Q_MODE, use_q, temperature,
            max_p, lse_p, max_q, lse_q,
        )  # fmt: skip
        total += tl.sum(mass, axis=0)
        sum_p += tl.sum(p, axis=0)
        min_p = tl.minimum(min_p, tl.min(tl.where(live, p, float("inf")), axis=0))
        sum_q += tl.sum(q, axis=0)
        min_q = tl.minimum(min_q, tl.min(tl.where(live, q, float("inf")), axis=0))
    return total, sum_p, min_p, sum_q, min_q


@triton.jit
def threshold_below(u, total):
    """The largest float32 t <= u * total (the product taken exactly in float64).

    For a float32 c, c > u * total exactly iff c > t, so the search compares in float32.
    """
    exact = u.to(tl.float64) * total.to(tl.float64)
    nearest = exact.to(tl.float32)
    step_down = (nearest.to(tl.float64) > exact) & (nearest > 0.0)
    lowered = (nearest.to(tl.int32, bitcast=True) - 1).to(tl.float32, bitcast=True)
    return tl.where(step_down, lowered, nearest)


@triton.jit
def residual_search(
    p_row,
    q_row,
    V,
    token,
    P_LOGITS: tl.constexpr,
    Q_MODE: tl.constexpr,
    use_q,
    temperature,
    max_p,
    lse_p,
    max_q,
    lse_q,
    u,
    total,
    BLOCK: tl.constexpr,
):
    """Inverse CDF: the smallest v with u * total < cumsum(max(0, p - use_q * q))[v] and
    positive mass; stops at the tile that holds it. If rounding leaves no such v, the last
    token with positive mass."""
    threshold = threshold_below(u, total)
    carry = tl.full((), 0.0, tl.float32)
    found = tl.full((), -1, tl.int64)
    last_positive = tl.full((), -1, tl.int64)
    start = 0
    while (start < V) & (found < 0):
        cols = start + tl.arange(0, BLOCK)
        live = cols < V
        mass, _p, _q = residual_parts(
            p_row,
            q_row,
            cols,
            live,
            token,
            P_LOGITS,
            Q_MODE,
            use_q,
            temperature,
            max_p,
            lse_p,
            max_q,
            lse_q,
        )
        cumulative = tl.cumsum(mass, axis=0) + carry
        hit = live & (mass > 0.0) & (cumulative > threshold)
        first = tl.min(tl.where(hit, cols, V), axis=0).to(tl.int64)
        found = tl.where(first < V, first, found)
        last_positive = tl.maximum(
            last_positive, tl.max(tl.where(live & (mass > 0.0), cols, -1), axis=0).to(tl.int64)
        )
        carry += tl.sum(mass, axis=0)
        start += BLOCK
    return tl.where(found >= 0, found, last_positive)
