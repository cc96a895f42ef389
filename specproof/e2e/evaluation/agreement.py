"""How well each drafter predicts the target, teacher-forced, on two kinds of text: held-out
real text, and the target's own greedy continuation of the same starts (the text that
temperature-0 decoding produces). Per drafted position: how often the drafter's argmax is
the target's (what temperature-0 acceptance needs) and the overlap sum_v min(p, q) (the
temperature-1 acceptance probability of that position).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..data.corpora import WindowSampler, load_corpora
from ..decoding.rounds import autoregressive_generate
from ..models.dspark import DSparkDrafter
from ..models.eagle import EagleDrafter
from ..models.loading import Models
from ..models.target import Target, TargetOutput
from ..plans import SHIPPED


@torch.no_grad()
def greedy_continuation(target: Target, starts: torch.Tensor, width: int) -> torch.Tensor:
    """[R, width]: ``starts`` [R, P] continued by the target's greedy decode."""
    decoded = autoregressive_generate(
        target, starts.tolist(), width - starts.shape[1], temperature=0.0
    )
    return torch.cat((starts, torch.tensor(decoded.tokens, dtype=starts.dtype)), dim=1)


def _scores(draft: torch.Tensor, law: torch.Tensor) -> tuple[list[float], list[float]]:
    """Per position (last-but-one axis) argmax agreement and overlap of [.., K, V] laws."""
    dims = tuple(range(draft.dim() - 2))
    agree = (draft.argmax(-1) == law.argmax(-1)).float().mean(dims)
    overlap = torch.minimum(draft, law).sum(-1).mean(dims)
    return agree.tolist(), overlap.tolist()


@torch.no_grad()
def dspark_scores(
    drafter: DSparkDrafter,
    tokens: torch.Tensor,
    out: TargetOutput,
    law: torch.Tensor,
    first: int,
    stride: int = 4,
) -> tuple[list[float], list[float]]:
    """Block slots k = 1..gamma from anchors every ``stride`` positions from ``first`` on
    (x_{k-1} the text's own token); ``out`` and ``law`` are the target's pass over ``tokens``
    and its softmax."""
    gamma = drafter.gamma
    starts = torch.arange(max(first, 1), tokens.shape[1] - gamma + 1, stride)
    anchors = starts.expand(len(tokens), -1)
    logits, _ = drafter.training_outputs(tokens, out.features, anchors)
    slots = (anchors[:, :, None] + torch.arange(gamma)).reshape(len(tokens), -1)
    vocab = law.shape[-1]
    at_slots = torch.gather(law, 1, slots[:, :, None].expand(-1, -1, vocab))
    return _scores(torch.softmax(logits.float(), -1), at_slots.reshape(*logits.shape))


@torch.no_grad()
def eagle_scores(
    drafter: EagleDrafter, tokens: torch.Tensor, out: TargetOutput, law: torch.Tensor, first: int
) -> tuple[list[float], list[float]]:
    """The first drafted token, for tokens after position ``first`` (the only draft position
    teacher forcing defines without the drafter's own predicted features)."""
    logits = drafter.training_outputs(tokens, out.features)[0]
    # logits[:, i] reads token i + 1 and the target's state at i: it drafts token i + 2.
    draft = torch.softmax(logits.float(), -1)[:, first:-1]
    return _scores(draft[:, :, None], law[:, first + 1 : -1, None])


def agreement_table(
    target: Target,
    dspark: DSparkDrafter,
    eagle: EagleDrafter,
    windows: torch.Tensor,
    prefix: int,
) -> dict[str, Any]:
    """Both drafters on real ``windows`` [R, W] and on the target's greedy continuation of
    their first ``prefix`` tokens, scored past the prefix in both."""
    texts = {
        "real": windows,
        "greedy": greedy_continuation(target, windows[:, :prefix], windows.shape[1]),
    }
    table: dict[str, Any] = {"windows": len(windows), "width": windows.shape[1], "prefix": prefix}
    for name, tokens in texts.items():
        with torch.no_grad():
            out = target(tokens)
        law = torch.softmax(out.logits.float(), dim=-1)
        d_agree, d_overlap = dspark_scores(dspark, tokens, out, law, prefix)
        e_agree, e_overlap = eagle_scores(eagle, tokens, out, law, prefix)
        table[name] = {
            "dspark": {"argmax_agreement": d_agree, "overlap": d_overlap},
            "eagle": {"argmax_agreement": e_agree, "overlap": e_overlap},
        }
    return table


def agreement_by_domain(
    models: Models,
    streams: dict[str, np.ndarray],
    windows: int,
    width: int,
    prefix: int,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """:func:`agreement_table` on ``windows`` held-out windows of each domain's stream: on real
    text and on the target's greedy text (what temperature-0 decoding feeds the drafters)."""
    return {
        domain: agreement_table(
            models.target,
            models.dspark,
            models.eagle,
            WindowSampler({domain: stream}, {domain: 1.0}, seed).batch(windows, width),
            prefix,
        )
        for domain, stream in streams.items()
    }


@torch.no_grad()
def teacher_forced_score(
    drafter: DSparkDrafter, windows: int = 16, seed: int = 5
) -> dict[str, Any]:
    """Per domain, on ``windows`` held-out windows of the shipped length: the mean per-slot
    overlap with the target, and the tau proxy 1 + sum_k prod_{j <= k} overlap_j (a product of
    per-slot means; it ranks drafters, the tables measure tau)."""
    out: dict[str, Any] = {}
    target = drafter.frozen_target
    for domain, corpus in load_corpora().items():
        tokens = WindowSampler({domain: corpus.stream("evaluation")}, {domain: 1.0}, seed).batch(
            windows, SHIPPED.window
        )
        result = target(tokens)
        law = torch.softmax(result.logits.float(), dim=-1)
        _, overlap = dspark_scores(drafter, tokens, result, law, 16)
        out[domain] = {
            "overlap": overlap,
            "tau_proxy": float(1 + np.cumprod(overlap).sum()),
        }
    return out
