"""Training loops: the target, then both drafters on the frozen target.

Each loop runs a fixed number of steps, or until a budget in seconds is spent (at least
``min_steps``), with a linear warm-up and a cosine decay over the steps or the budget, and
prints progress.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from ..data.corpora import WindowSampler
from ..decoding.rounds import autoregressive_generate
from ..models.dspark import DSparkDrafter, dspark_loss
from ..models.eagle import EagleDrafter, eagle_loss
from ..models.target import FrozenTarget, Target

Log = Callable[[str], None]


class BatchSource(Protocol):
    def batch(self, batch_size: int, length: int) -> torch.Tensor: ...


@torch.no_grad()
def generate_pool(
    target: Target,
    source: WindowSampler,
    count: int,
    prefix: int,
    window: int,
    temperatures: Sequence[float],
    seed: int,
    chunk: int = 64,
) -> torch.Tensor:
    """[count, window] sequences the target wrote itself: a ``prefix``-byte real-text start,
    continued by the target (cached decoding) at each temperature in turn."""
    rows = []
    for i in range(0, count, chunk):
        size = min(chunk, count - i)
        starts = source.batch(size, prefix).tolist()
        temperature = temperatures[(i // chunk) % len(temperatures)]
        result = autoregressive_generate(
            target, starts, window - prefix, temperature=temperature, seed=seed + i
        )
        rows += [start + tokens for start, tokens in zip(starts, result.tokens, strict=True)]
    return torch.tensor(rows, dtype=torch.int64)


class MixedSource:
    """Windows from real text or from a pool of target-written sequences, half and half."""

    def __init__(self, text: WindowSampler, pool: torch.Tensor, seed: int) -> None:
        self.text = text
        self.pool = pool
        self.generator = torch.Generator().manual_seed(seed)

    def batch(self, batch_size: int, length: int) -> torch.Tensor:
        if length != self.pool.shape[1]:
            raise ValueError(f"the pool holds windows of {self.pool.shape[1]}, not {length}")
        from_pool = int(
            torch.binomial(
                torch.tensor(float(batch_size)), torch.tensor(0.5), generator=self.generator
            )
        )
        picks = torch.randint(0, len(self.pool), (from_pool,), generator=self.generator)
        parts = [self.pool[picks]]
        if batch_size - from_pool:
            parts.append(self.text.batch(batch_size - from_pool, length))
        return torch.cat(parts)


@dataclass(frozen=True)
class TrainSettings:
    seconds: float
    batch_size: int
    window: int
    lr: float
    warmup_steps: int = 30
    min_steps: int = 2
    weight_decay: float = 0.1
    log_every_seconds: float = 20.0
    steps: int | None = None
    """A fixed number of steps (reproducible), in place of the wall-clock budget ``seconds``."""


@dataclass
class TrainReport:
    steps: int = 0
    tokens: int = 0
    seconds: float = 0.0
    final: dict[str, float] = field(default_factory=dict)


def learning_rate(settings: TrainSettings, step: int, elapsed: float) -> float:
    warm = min(1.0, (step + 1) / settings.warmup_steps)
    if settings.steps is not None:
        progress = min(1.0, step / settings.steps)
    else:
        progress = min(1.0, elapsed / settings.seconds) if settings.seconds > 0 else 1.0
    return settings.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def run_loop(
    name: str,
    module: nn.Module,
    settings: TrainSettings,
    step_fn: Callable[[], tuple[torch.Tensor, dict[str, float]]],
    log: Log,
) -> TrainReport:
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=settings.lr, betas=(0.9, 0.95), weight_decay=settings.weight_decay
    )
    report = TrainReport()
    start = time.perf_counter()
    last_log = start
    running: dict[str, float] = {}
    module.train()
    while True:
        elapsed = time.perf_counter() - start
        if settings.steps is not None:
            if report.steps >= settings.steps:
                break
        elif elapsed >= settings.seconds and report.steps >= settings.min_steps:
            break
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(settings, report.steps, elapsed)
        loss, stats = step_fn()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        report.steps += 1
        report.tokens += settings.batch_size * settings.window
        for key, value in stats.items():
            running[key] = 0.9 * running.get(key, value) + 0.1 * value
        now = time.perf_counter()
        if now - last_log >= settings.log_every_seconds:
            last_log = now
            shown = " ".join(f"{k}={v:.3f}" for k, v in running.items())
            log(f"[{name}] step {report.steps} {now - start:.0f}s {shown}")
    module.eval()
    report.seconds = time.perf_counter() - start
    report.final = dict(running)
    log(f"[{name}] done: {report.steps} steps, {report.tokens} tokens, {report.seconds:.0f}s")
    return report


StepFn = Callable[[], tuple[torch.Tensor, dict[str, float]]]


def target_step(
    target: Target, sampler: BatchSource, settings: TrainSettings, unit: str = "byte"
) -> StepFn:
    """One next-token cross-entropy step of the target (reported in bits per ``unit``)."""

    def step() -> tuple[torch.Tensor, dict[str, float]]:
        batch = sampler.batch(settings.batch_size, settings.window + 1)
        logits = target(batch[:, :-1]).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        return loss, {f"bits_per_{unit}": loss.item() / math.log(2)}

    return step


def train_target(
    target: Target, sampler: WindowSampler, settings: TrainSettings, log: Log = print
) -> TrainReport:
    return run_loop("target", target, settings, target_step(target, sampler, settings), log)


def freeze(target: FrozenTarget) -> None:
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)


def anchors_without_replacement(
    batch: int, count: int, low: int, high: int, generator: torch.Generator
) -> torch.Tensor:
    """[batch, count] distinct positions in low..high per row (all of them if fewer)."""
    order = torch.rand(batch, high - low + 1, generator=generator).argsort(dim=1)
    return order[:, :count] + low


def train_dspark(
    drafter: DSparkDrafter,
    sampler: BatchSource,
    settings: TrainSettings,
    anchors_per_window: int,
    log: Log = print,
    seed: int = 0,
) -> TrainReport:
    """Anchors drawn without replacement from 1..T - gamma in each window (the release's
    sampling); the frozen target supplies its features and its law at every block slot."""
    generator = torch.Generator().manual_seed(seed)
    step = dspark_step(drafter, sampler, settings, anchors_per_window, generator)
    return run_loop("dspark", drafter, settings, step, log)


def dspark_step(
    drafter: DSparkDrafter,
    sampler: BatchSource,
    settings: TrainSettings,
    anchors_per_window: int,
    generator: torch.Generator,
) -> StepFn:
    """One DSpark (or DFlash) training step; ``generator`` draws the anchors."""
    target = drafter.frozen_target
    freeze(target)
    gamma = drafter.gamma

    def step() -> tuple[torch.Tensor, dict[str, float]]:
        tokens = sampler.batch(settings.batch_size, settings.window)
        with torch.no_grad():
            out = target(tokens)
            probs = torch.softmax(out.logits.float(), dim=-1)
        anchors = anchors_without_replacement(
            settings.batch_size, anchors_per_window, 1, settings.window - gamma, generator
        )
        draft_logits, conf_logits = drafter.training_outputs(tokens, out.features, anchors)
        slots = anchors[:, :, None] + torch.arange(gamma)
        index = slots.reshape(settings.batch_size, -1)
        target_probs = torch.gather(
            probs, 1, index[:, :, None].expand(-1, -1, probs.shape[-1])
        ).reshape(*draft_logits.shape)
        return dspark_loss(draft_logits, conf_logits, target_probs)

    return step


def train_eagle(
    drafter: EagleDrafter, sampler: BatchSource, settings: TrainSettings, log: Log = print
) -> TrainReport:
    """Training-time test over gamma steps on the drafter's own hidden states."""
    return run_loop("eagle", drafter, settings, eagle_step(drafter, sampler, settings), log)


def eagle_step(drafter: EagleDrafter, sampler: BatchSource, settings: TrainSettings) -> StepFn:
    """One EAGLE-3 training-time-test step."""
    target = drafter.frozen_target
    freeze(target)

    def step() -> tuple[torch.Tensor, dict[str, float]]:
        tokens = sampler.batch(settings.batch_size, settings.window)
        with torch.no_grad():
            out = target(tokens)
            probs = torch.softmax(out.logits.float(), dim=-1)
        logits = drafter.training_outputs(tokens, out.features)
        return eagle_loss(logits, probs, drafter.config.step_decay)

    return step
