"""The batched speculative decoder: DSpark semi-autoregressive drafting with confidences,
a batched scheduler, and fused chain verification, over tensors.

Model interfaces (any callables with these signatures):

- ``TargetFn(tokens [B, S] int64, lengths [B] int64, num_positions) -> [B, num_positions, V]``:
  row j is the next-token distribution (probabilities or logits) after the first
  ``lengths[b] - num_positions + 1 + j`` tokens of request b.
- ``DrafterFn(tokens [B, S] int64, context_lengths [B] int64, num_drafted) -> (scores [B, V],
  confidences [B])``: q_k and c_k for k = num_drafted + 1, given the context
  ``tokens[b, :context_lengths[b]]`` and the drafted prefix that follows it. c_k must not
  depend on x_k (it is asked for before x_k is drawn).

One round: every unfinished request drafts gamma tokens (each drawn at the Philox address
(round, request, "draft", k)); the scheduler picks l_r from the confidences; the target scores
the block; chain verification emits the accepted drafts and one more token. The only host
synchronisation is between rounds (which requests are unfinished). For the same seed this
emits what :func:`specproof.reference.sample` emits with ``PhiloxSource(seed, offset)``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .backend import Backend
from .checks.arguments import as_integer, check_seed_words
from .checks.contract import InvalidInputError
from .sampling import sample_draft_tokens
from .schedulers import BatchedScheduler
from .verify import chain_verify

TargetFn = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
DrafterFn = Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]]


def check_model_output(
    name: str, value: object, shape: tuple[int | None, ...], detail: str = ""
) -> None:
    """A model's output must be a tensor of ``shape`` (None: any size, the vocabulary)."""
    if not isinstance(value, torch.Tensor):
        raise InvalidInputError(f"the {name} must be a torch.Tensor, got {type(value).__name__}")
    matches = value.dim() == len(shape) and all(
        size is None or size == got for size, got in zip(shape, value.shape, strict=True)
    )
    if not matches:
        expected = ", ".join("V" if size is None else str(size) for size in shape)
        raise InvalidInputError(
            f"the {name} must return shape ({expected}){detail}, got {tuple(value.shape)}"
        )


@dataclass
class BatchedDecoder:
    target: TargetFn
    drafter: DrafterFn
    scheduler: BatchedScheduler
    gamma: int
    sps: torch.Tensor | None = None
    target_is_logits: bool = False
    draft_is_logits: bool = False
    temperature: float = 1.0
    backend: Backend = "auto"
    validate: bool = True
    _sps_copies: dict[torch.device, torch.Tensor] = field(
        default_factory=dict, init=False, repr=False
    )

    def sps_on(self, device: torch.device) -> torch.Tensor | None:
        """The SPS table on ``device`` (copied once per device: schedulers index it with
        tensors on the decoding device)."""
        if self.sps is None or self.sps.device == device:
            return self.sps
        if device not in self._sps_copies:
            self._sps_copies[device] = self.sps.to(device)
        return self._sps_copies[device]

    def __post_init__(self) -> None:
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, int) or self.gamma < 0:
            raise InvalidInputError(f"gamma must be an integer >= 0, got {self.gamma!r}")
        number = isinstance(self.temperature, (int, float)) and not isinstance(
            self.temperature, bool
        )
        if not number or not math.isfinite(self.temperature) or self.temperature < 0:
            raise InvalidInputError(
                f"temperature must be a finite number >= 0, got {self.temperature!r}"
            )

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        num_tokens: int,
        *,
        seed: int,
        offset: int = 0,
        device: torch.device | str = "cpu",
    ) -> torch.Tensor:
        """The first ``num_tokens`` tokens emitted for every prompt: int64 [R, num_tokens]."""
        if len(prompts) == 0:
            raise InvalidInputError("at least one prompt is needed")
        num_tokens = as_integer("num_tokens", num_tokens, 1 << 31)
        seed, _, offset = check_seed_words(seed, 0, offset)
        for r, prompt in enumerate(prompts):
            bad = [t for t in prompt if isinstance(t, bool) or not isinstance(t, numbers.Integral)]
            if bad:
                raise InvalidInputError(f"prompt {r}: token ids must be integers, got {bad[:8]}")
        device = torch.device(device)
        requests = len(prompts)
        prompt_lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64, device=device)
        width = int(prompt_lengths.max()) + num_tokens + self.gamma + 2
        scratch = width - 1  # a column that absorbs masked writes (no boolean indexing)
        tokens = torch.zeros(requests, width, dtype=torch.int64, device=device)
        for r, prompt in enumerate(prompts):  # setup only, before the first round
            tokens[r, : len(prompt)] = torch.tensor(list(prompt), dtype=torch.int64)
        lengths = prompt_lengths.clone()
        remaining = torch.full((requests,), num_tokens, dtype=torch.int64, device=device)
        state = self.scheduler.initial_state(device)
        round = 0
        while True:
            active = (remaining > 0).nonzero().squeeze(1)  # the one sync, between rounds
            if active.numel() == 0:
                break
            emitted, count, state = self.one_round(
                tokens[active],
                lengths[active],
                active,
                remaining[active],
                state,
                seed,
                offset,
                round,
            )
            columns = torch.arange(emitted.shape[1], device=device)
            keep = columns[None, :] < count[:, None]
            where = torch.where(keep, lengths[active][:, None] + columns[None, :], scratch)
            rows = active[:, None].expand_as(where)
            tokens[rows, where] = emitted
            lengths[active] += count
            remaining[active] -= count
            round += 1
        columns = prompt_lengths[:, None] + torch.arange(num_tokens, device=device)[None, :]
        return tokens.gather(1, columns)

    def one_round(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        requests: torch.Tensor,
        remaining: torch.Tensor,
        state: object,
        seed: int,
        offset: int,
        round: int,
    ) -> tuple[torch.Tensor, torch.Tensor, object]:
        """Draft, schedule, verify for the active requests; returns the emitted tokens
        (-1 padded), how many of them to keep, and the next scheduler state."""
        active, _ = tokens.shape
        device = tokens.device
        gamma = self.gamma
        rows = torch.arange(active, device=device)
        block = tokens.clone()
        draft_rows: list[torch.Tensor] = []
        confidences: list[torch.Tensor] = []
        drafted: list[torch.Tensor] = []
        for k in range(1, gamma + 1):
            scores, confidence = self.drafter(block, lengths, k - 1)
            check_model_output("drafter scores", scores, (active, None))
            check_model_output("drafter confidences", confidence, (active,))
            token = sample_draft_tokens(
                scores,
                seed=seed,
                index=k,
                round=round,
                offset=offset,
                request_ids=requests,
                is_logits=self.draft_is_logits,
                temperature=self.temperature,
                backend=self.backend,
                validate=self.validate,
            )
            block[rows, lengths + k - 1] = token
            draft_rows.append(scores)
            confidences.append(confidence.to(torch.float64))
            drafted.append(token)
        vocab_rows = self.target(block, lengths + gamma, gamma + 1)
        check_model_output(
            "target", vocab_rows, (active, gamma + 1, None), f" (gamma + 1 = {gamma + 1} rows)"
        )
        if gamma:
            draft = torch.stack(draft_rows, dim=1)
            draft_tokens = torch.stack(drafted, dim=1)
            confidence = torch.stack(confidences, dim=1)
        else:
            vocab = vocab_rows.shape[-1]
            draft = torch.zeros(active, 0, vocab, dtype=vocab_rows.dtype, device=device)
            draft_tokens = torch.zeros(active, 0, dtype=torch.int64, device=device)
            confidence = torch.zeros(active, 0, dtype=torch.float64, device=device)
        scheduled, state = self.scheduler(confidence, self.sps_on(device), state)
        result = chain_verify(
            vocab_rows,
            draft,
            draft_tokens,
            num_draft_tokens=scheduled,
            seed=seed,
            round=round,
            offset=offset,
            request_ids=requests,
            target_is_logits=self.target_is_logits,
            draft_is_logits=self.draft_is_logits,
            temperature=self.temperature,
            backend=self.backend,
            validate=self.validate,
        )
        count = torch.minimum(result.num_accepted + 1, remaining)
        return result.tokens, count, state
