"""A correct vectorised chain verifier with vLLM's ``rejection_sample`` signature, and its
mutants: the same code with one plausible bug switched on (``make_verifier(bug)``).

Semantics of the correct one: ragged rows gathered dense, acceptance u * q(x) < p(x) with a
float64 u in [0, 1), the correction token by the inverse CDF of max(p - q, 0) at the first
rejection, the given bonus token after full acceptance, greedy rows (temperature <= 0) keep
drafts equal to the target argmax, ``draft_probs=None`` means one-hot (n-gram) drafts, a request
with its own generator (``sampling_metadata.generators``) draws its uniforms from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

# mypy reads optimized/ as the package ``optimized`` (the wheel maps it to specproof.optimized,
# which mypy cannot follow), so the call shapes are imported for it under that name.
if TYPE_CHECKING:
    from optimized.call_shapes import VllmRejectionSample

PLACEHOLDER = -1
THRESHOLD_EPS = 0.02
TINY_EPS = 1e-6
TOP_K = 2

Verifier = Callable[..., torch.Tensor]


def _greedy_rows(metadata: Any, batch: int) -> torch.Tensor:
    if getattr(metadata, "all_greedy", False):
        return torch.ones(batch, dtype=torch.bool)
    temperature = getattr(metadata, "temperature", None)
    if temperature is None or getattr(metadata, "all_random", False):
        return torch.zeros(batch, dtype=torch.bool)
    return torch.as_tensor(temperature).reshape(-1) <= 0


def _draw(
    weights: torch.Tensor, u: torch.Tensor, total: torch.Tensor | None = None
) -> torch.Tensor:
    """Inverse CDF of unnormalised rows at uniforms ``u`` (scaled by the row total, or by
    ``total``); an all-zero row gives token 0."""
    cdf = weights.cumsum(-1)
    scale = cdf[:, -1] if total is None else total
    index = torch.searchsorted(cdf, (u * scale).unsqueeze(1), right=True).squeeze(1)
    return index.clamp_max(weights.shape[-1] - 1)


def _float32_uniform(
    shape: tuple[int, int], generators: dict[int, torch.Generator]
) -> torch.Tensor:
    """float32 uniforms (as the bug draws them); a seeded request's row from its generator."""
    u = torch.rand(shape, dtype=torch.float32)
    for row, own in generators.items():
        u[row] = torch.rand(shape[1], generator=own, dtype=torch.float32)
    return u


def _top_k(q: torch.Tensor) -> torch.Tensor:
    values, index = q.topk(TOP_K, dim=-1)
    kept = torch.zeros_like(q).scatter_(-1, index, values)
    return kept / kept.sum(-1, keepdim=True)


def make_verifier(bug: str | None = None) -> VllmRejectionSample:
    """The correct verifier (``bug`` None) or one mutant of it (see ``catalogue.MUTANTS``)."""

    def rejection_sample(
        draft_token_ids: torch.Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: torch.Tensor,
        draft_probs: torch.Tensor | None,
        target_probs: torch.Tensor,
        bonus_token_ids: torch.Tensor,
        sampling_metadata: Any,
    ) -> torch.Tensor:
        batch, vocab = len(num_draft_tokens), target_probs.shape[-1]
        width = max(max_spec_len, 1)
        lengths = torch.tensor(num_draft_tokens, dtype=torch.int64)
        greedy = _greedy_rows(sampling_metadata, batch)
        if bug == "greedy-as-random":
            greedy = torch.zeros_like(greedy)
        starts = torch.cumsum(lengths, 0) - lengths
        position = torch.arange(width)
        live = position.unsqueeze(0) < lengths.unsqueeze(1)
        flat = (starts.unsqueeze(1) + position).clamp_max(max(target_probs.shape[0] - 1, 0))
        total_rows = target_probs.shape[0]
        tokens = draft_token_ids.to(torch.int64)[flat] if total_rows else flat * 0
        tokens = torch.where(live, tokens, 0)
        p_rows = target_probs[flat].double() if total_rows else torch.zeros(batch, width, vocab)
        if draft_probs is None:
            q_rows = torch.nn.functional.one_hot(tokens, vocab).double()
            if bug == "ngram-q-uniform":
                q_rows = torch.full_like(q_rows, 1.0 / vocab)
        else:
            q_rows = draft_probs[flat].double() if total_rows else torch.zeros_like(p_rows)
        if bug == "q-bf16":
            q_rows = q_rows.to(torch.bfloat16).double()
        elif bug == "q-top-k":
            q_rows = _top_k(q_rows)
        if bug == "p-tempered":
            p_rows = p_rows**2
            p_rows = p_rows / p_rows.sum(-1, keepdim=True).clamp_min(1e-300)
        px = p_rows.gather(2, tokens.unsqueeze(2)).squeeze(2)
        qx = q_rows.gather(2, tokens.unsqueeze(2)).squeeze(2)
        u = torch.rand((batch, width), dtype=torch.float64)
        own_generators = dict(getattr(sampling_metadata, "generators", None) or {})
        own_draws = {
            row: torch.rand(width + 1, generator=own, dtype=torch.float64)
            for row, own in own_generators.items()
        }
        for row, draws in own_draws.items():
            u[row] = draws[:width]
        if bug == "shared-uniform":
            u = u[:, :1].expand(batch, width)
        if bug == "uniform-float32-le":
            u32 = _float32_uniform((batch, width), own_generators).double()
            accept = u32 * qx <= px
        elif bug == "uniform-bf16":
            u16 = _float32_uniform((batch, width), own_generators).to(torch.bfloat16)
            accept = u16.double() * qx < px
        elif bug == "ratio-swapped":
            accept = u * px < qx
        elif bug == "threshold-eps":
            accept = u * qx < px + THRESHOLD_EPS * qx
        elif bug == "threshold-tiny-eps":
            accept = u * qx < px + TINY_EPS * qx
        elif bug == "no-uniform":
            accept = qx <= px
        else:
            accept = u * qx < px
        best = p_rows.argmax(-1)
        if bug == "greedy-tie-last":
            best = vocab - 1 - p_rows.flip(-1).argmax(-1)
        accept = torch.where(greedy.unsqueeze(1), tokens == best, accept)
        verified = lengths
        if bug == "last-draft-skipped":  # the bugs below touch random rows only
            verified = torch.where(greedy, lengths, (lengths - 1).clamp_min(0))
        accept &= position.unsqueeze(0) < verified.unsqueeze(1)
        accepted = accept.to(torch.int64).cumprod(1).sum(1)
        if bug == "independent-acceptance":
            accepted = torch.where(greedy, accepted, accept.sum(1))
        rejected = accepted < verified
        rows = torch.arange(batch)
        stop = accepted.clamp_max(width - 1)
        greedy_correction = best[rows, stop]
        if bug == "residual-wrong-position":
            stop = torch.minimum(stop + 1, (lengths - 1).clamp_min(0))
        p_stop, q_stop = p_rows[rows, stop], q_rows[rows, stop]
        u2 = torch.rand(batch, dtype=torch.float64)
        for row, draws in own_draws.items():
            u2[row] = draws[width]
        total = None
        if bug == "residual-from-p":
            residual = p_stop
        elif bug == "residual-abs":
            residual = (p_stop - q_stop).abs()
        elif bug == "residual-softmax-clamp":
            residual = torch.softmax((p_stop - q_stop).clamp_min(0), -1)
        else:
            residual = (p_stop - q_stop).clamp_min(0)
        if bug == "residual-unnormalised":
            total = torch.ones(batch, dtype=torch.float64)
        elif bug == "residual-by-acceptance":
            total = 1 - torch.minimum(p_stop, q_stop).sum(-1)
        if bug == "residual-reuses-uniform":
            u2 = torch.where(rejected, u[rows, stop], u2)  # the rejected test's u, in [r, 1)
        correction = _draw(residual, u2, total)
        if bug == "pq-fallback-draft":
            empty = residual.sum(-1) == 0
            correction = torch.where(empty, tokens[rows, stop], correction)
        correction = torch.where(greedy, greedy_correction, correction)
        bonus = bonus_token_ids.reshape(-1).to(torch.int64)
        if bug == "bonus-wrong-row":
            last = (lengths - 1).clamp_min(0)
            wrong = _draw(p_rows[rows, last], torch.rand(batch, dtype=torch.float64))
            bonus = torch.where((lengths > 0) & ~greedy, wrong, bonus)
        final = torch.where(rejected, correction, bonus)
        out = torch.full((batch, width + 1), PLACEHOLDER, dtype=torch.int64)
        keep = position.unsqueeze(0) < accepted.unsqueeze(1)
        out[:, :width] = torch.where(keep, tokens, PLACEHOLDER)
        out[rows, accepted] = final
        if bug == "drop-correction":
            out[rows, accepted] = torch.where(rejected & ~greedy, PLACEHOLDER, final)
        elif bug == "zero-length-dropped":
            out[lengths == 0] = PLACEHOLDER
        elif bug == "padding-zero":
            out[out == PLACEHOLDER] = 0
        return out[:, : max_spec_len + 1].to(torch.int32)

    rejection_sample.__name__ = "rejection_sample" if bug is None else f"mutant_{bug}"
    return rejection_sample


rejection_sample = make_verifier()


def __getattr__(name: str) -> Verifier:
    """``mutant_<bug with underscores>``: importable mutants, e.g. for ``specproof audit
    specproof.audit.mutants.verifier:mutant_uniform_float32_le --signature vllm``."""
    if name.startswith("mutant_"):
        from .catalogue import by_name

        return make_verifier(by_name(name.removeprefix("mutant_").replace("_", "-")).bug)
    raise AttributeError(name)
