"""Chain verification of a whole batch in a fixed number of tensor operations (no loop over
draft positions or requests), with uniforms from a seeded ``torch.Generator``.

This is the rule of :func:`specproof.optimized.chain_verify` (accept x_k when u_k q_k(x_k) <
p_k(x_k); at the first rejection draw from norm(max(0, p - q)); after a fully accepted block
draw the bonus token from p), computed for all positions at once. Only the randomness differs:
the optimized verifier addresses Philox uniforms by (round, request, position), which its torch
backend evaluates with dozens of small integer operations per position; here a generator draws
them. Losslessness is checked end to end for both (:mod:`specproof.e2e.evaluation.losslessness`).
"""

from __future__ import annotations

import torch


def batched_chain_verify(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    *,
    temperature: float,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """target_probs [R, n + 1, V], draft_probs [R, n, V] (float32), draft_tokens [R, n],
    lengths [R] (request r verifies its first lengths[r] drafts). Returns the emitted tokens
    [R, n + 1] (accepted drafts, then the residual or bonus token, then -1) and the accepted
    counts [R]. Temperature 0 is greedy: a draft is accepted when it is p's argmax."""
    batch, width = draft_tokens.shape
    rows = torch.arange(batch)
    positions = torch.arange(width)
    tokens = draft_tokens.to(torch.int64)
    if width:
        p_x = target_probs[:, :width].gather(2, tokens[:, :, None]).squeeze(2)
        if temperature == 0:
            ok = tokens == target_probs[:, :width].argmax(dim=-1)
        else:
            q_x = draft_probs.gather(2, tokens[:, :, None]).squeeze(2)
            uniforms = torch.rand(batch, width, generator=generator, dtype=torch.float64)
            ok = uniforms * q_x.double() < p_x.double()
        ok &= positions[None, :] < lengths[:, None]
        accepted = ok.to(torch.int64).cumprod(dim=1).sum(dim=1)
    else:
        accepted = torch.zeros(batch, dtype=torch.int64)
    final_p = target_probs[rows, accepted]
    if temperature == 0:
        final = final_p.argmax(dim=-1)
    else:
        rejected = accepted < lengths
        if width:
            final_q = draft_probs[rows, accepted.clamp(max=width - 1)]
            residual = torch.where(rejected[:, None], (final_p - final_q).clamp(min=0.0), final_p)
            # p == q up to rounding leaves no residual mass: draw from p itself.
            residual = torch.where((residual.sum(-1) <= 0)[:, None], final_p, residual)
        else:
            residual = final_p
        final = torch.multinomial(residual, 1, generator=generator).squeeze(1)
    out = torch.where(
        torch.arange(width + 1)[None, :] < accepted[:, None],
        torch.cat((tokens, tokens.new_zeros(batch, 1)), dim=1),
        -1,
    )
    out[rows, accepted] = final
    return out, accepted


def generator_chain_verify(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    lengths: torch.Tensor,
    *,
    seed: int,
    round_index: int,
    request_ids: torch.Tensor,
    temperature: float,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`batched_chain_verify` as a :class:`specproof.e2e.decoding.rounds.VerifyStep`: the
    decoder's generator supplies the uniforms, so seed, round and request ids are not needed."""
    return batched_chain_verify(
        target_probs,
        draft_probs,
        draft_tokens,
        lengths,
        temperature=temperature,
        generator=generator,
    )
