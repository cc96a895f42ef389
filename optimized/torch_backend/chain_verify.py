"""Chain verification in torch, with the semantics of the fused Triton kernel.

The loop runs over draft positions (never over requests); at each position only the requests
that are still accepting are gathered, so rows after a request's first rejection are never
read. The final row (residual or bonus) is gathered once per request.
"""

from __future__ import annotations

import torch

from ..philox import ACCEPT, BONUS, RESIDUAL, address_uniforms
from .rows import inverse_cdf, row_lse, row_probs


def chain_verify_torch(
    target: torch.Tensor,
    draft: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    requests: torch.Tensor,
    temperature: torch.Tensor,
    *,
    target_logits: bool,
    draft_logits: bool,
    seed: int,
    round: int,
    offset: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same contract as :func:`~specproof.optimized.kernels.chain_verify.chain_verify_triton`."""
    batch, positions, _ = target.shape
    device = target.device
    out = torch.full((batch, positions), -1, dtype=torch.int64, device=device)
    accepted = torch.zeros(batch, dtype=torch.int64, device=device)
    if batch == 0:
        return out, accepted
    lengths = lengths.to(torch.int64)
    requests = requests.to(torch.int64)
    tokens = draft_tokens.to(torch.int64)
    greedy = temperature == 0
    inv_temperature = torch.where(greedy, 1.0, 1.0 / torch.where(greedy, 1.0, temperature))
    inv_temperature = inv_temperature.to(torch.float32)
    lse_q = torch.zeros(batch, dtype=torch.float32, device=device)
    rejected = torch.zeros(batch, dtype=torch.bool, device=device)
    alive = lengths > 0
    for k in range(positions - 1):
        rows = alive.nonzero().squeeze(1)
        if rows.numel() == 0:
            break
        token = tokens[rows, k]
        keep = torch.empty(rows.shape, dtype=torch.bool, device=device)
        is_greedy = greedy[rows]
        greedy_rows, sampled = rows[is_greedy], ~is_greedy
        if greedy_rows.numel():
            keep[is_greedy] = tokens[greedy_rows, k] == target[greedy_rows, k].argmax(dim=-1)
        sampled_rows = rows[sampled]
        if sampled_rows.numel():
            x = tokens[sampled_rows, k]
            scale = inv_temperature[sampled_rows]
            p_x = target[sampled_rows, k, x].to(torch.float32)
            if target_logits:
                p_x = torch.exp(p_x * scale - row_lse(target[sampled_rows, k], scale))
            if draft is None:
                q_x = torch.ones_like(p_x)
            else:
                q_x = draft[sampled_rows, k, x].to(torch.float32)
                if draft_logits:
                    lse = row_lse(draft[sampled_rows, k], scale)
                    lse_q[sampled_rows] = lse
                    q_x = torch.exp(q_x * scale - lse)
            index = torch.full_like(sampled_rows, k + 1)
            u = address_uniforms(seed, ACCEPT, index, requests[sampled_rows], round, offset)
            # Exact in float64 for float32 operands: the test u < p / q.
            keep[sampled] = u.double() * q_x.double() < p_x.double()
        out[rows[keep], k] = token[keep]
        accepted[rows[keep]] += 1
        rejected[rows[~keep]] = True
        alive[rows[~keep]] = False
        alive &= accepted < lengths

    everyone = torch.arange(batch, device=device)
    final_rows = target[everyone, accepted]
    final = torch.empty(batch, dtype=torch.int64, device=device)
    final[greedy] = final_rows[greedy].argmax(dim=-1)
    sampled = ~greedy
    if bool(sampled.any()):
        rows = everyone[sampled]
        scale = inv_temperature[rows]
        lse_p = row_lse(final_rows[rows], scale) if target_logits else scale * 0
        mass = row_probs(final_rows[rows], target_logits, scale, lse_p)
        use_q = rejected[rows]
        residual = mass.clone()
        hit = use_q.nonzero().squeeze(1)
        if hit.numel():
            position = accepted[rows[hit]]
            if draft is None:
                q = torch.zeros_like(mass[hit])
                q[torch.arange(hit.numel(), device=device), tokens[rows[hit], position]] = 1.0
            else:
                q = row_probs(
                    draft[rows[hit], position], draft_logits, scale[hit], lse_q[rows[hit]]
                )
            residual[hit] = torch.clamp(mass[hit] - q, min=0.0)
        # p == q up to rounding: the residual has no mass, so draw from p itself.
        residual = torch.where((residual.sum(dim=-1) <= 0)[:, None], mass, residual)
        u = torch.where(
            use_q,
            address_uniforms(seed, RESIDUAL, accepted[rows] + 1, requests[rows], round, offset),
            address_uniforms(seed, BONUS, accepted[rows] + 1, requests[rows], round, offset),
        )
        final[sampled] = inverse_cdf(residual, u)
    out[everyone, accepted] = final
    return out, accepted
