"""The sequential heads of the DSpark drafter beyond the vanilla Markov head.

Every head adds a bias B_k over the vocabulary to the parallel logits U_k of block slot k, so
q_k(v) is proportional to exp(U_k(v) + B_k(v)); the draft token x_k is then drawn from q_k, and
q_k is the law the verifier is given (the head changes q, never how it is used, so
losslessness is untouched). Each head also gives a rank-r "token state" t_k, which the
confidence head reads beside h_k: c_k = sigmoid(w . [h_k ; t_k] + b). W1 (``markov_in``,
[V, r]) and W2 (``markov_out``, [r, V]) are the drafter's own Markov factors, so every head
starts from the vanilla one's parameters and adds its own.

- ``vanilla`` (the shipped head, in :class:`.dspark.DSparkDrafter` itself):
  t_k = W1[x_{k-1}], B_k = t_k W2.
- ``gated``: the bigram bias, gated per rank direction by the slot's hidden state h_k:
  g_k = sigmoid(G h_k + b_g) in (0, 1)^r, B_k = (g_k * W1[x_{k-1}]) W2, t_k = W1[x_{k-1}].
  The backbone decides, slot by slot, which directions of the low-rank bigram to trust.
  G starts at 0 and b_g at :data:`GATE_BIAS_INIT`, so every gate opens at about 0.88.
- ``rnn``: a recurrent state over the whole drafted prefix x_0..x_{k-1}:
  s_1 = W1[x_0], s_k = W1[x_{k-1}] + tanh(A s_{k-1}), B_k = s_k W2, t_k = s_k.
  A starts at 0, so the untrained head is the vanilla one; training teaches it what the
  earlier drafts say about slot k. Training runs the recurrence over the window's own tokens
  (teacher forcing); drafting runs it over the drawn tokens, one slot after another.
"""

from __future__ import annotations

import torch
from torch import nn

NO_HEAD = "none"
"""DFlash: no sequential head at all (and no confidence head), see :mod:`.dspark`."""
HEADS = ("vanilla", "gated", "rnn")
GATE_BIAS_INIT = 2.0


def check_head(name: str) -> None:
    if name not in (*HEADS, NO_HEAD):
        raise ValueError(f"unknown Markov head {name!r}; the heads are {[*HEADS, NO_HEAD]}")


class SequentialHead(nn.Module):
    """The parameters a head adds to W1 and W2, and its two passes over a block.

    ``teacher_forced(hidden, previous, w1, w2)``: ``hidden`` [.., gamma, d] the slots' hidden
    states, ``previous`` [.., gamma] the tokens x_0..x_{gamma-1}; returns biases
    [.., gamma, V] and token states [.., gamma, r].

    ``begin(hidden)`` then ``step(k, previous, context, state, w1, w2)`` for k = 0..gamma-1
    in order: ``hidden`` [R, gamma, d], ``previous`` [R] the token x_k before slot k + 1;
    returns the bias [R, V], the token state [R, r] and the carried state.
    """

    def teacher_forced(
        self, hidden: torch.Tensor, previous: torch.Tensor, w1: nn.Module, w2: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def begin(self, hidden: torch.Tensor) -> torch.Tensor | None:
        raise NotImplementedError

    def step(
        self,
        k: int,
        previous: torch.Tensor,
        context: torch.Tensor | None,
        state: torch.Tensor | None,
        w1: nn.Module,
        w2: nn.Module,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError


class GatedHead(SequentialHead):
    def __init__(self, d_model: int, rank: int) -> None:
        super().__init__()
        self.gate = nn.Linear(d_model, rank)
        nn.init.zeros_(self.gate.weight)
        nn.init.constant_(self.gate.bias, GATE_BIAS_INIT)

    def teacher_forced(
        self, hidden: torch.Tensor, previous: torch.Tensor, w1: nn.Module, w2: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        token = w1(previous)
        return w2(torch.sigmoid(self.gate(hidden)) * token), token

    def begin(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.gate(hidden))  # every slot's gate, [R, gamma, r]

    def step(
        self,
        k: int,
        previous: torch.Tensor,
        context: torch.Tensor | None,
        state: torch.Tensor | None,
        w1: nn.Module,
        w2: nn.Module,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        assert context is not None
        token = w1(previous)
        return w2(context[:, k] * token), token, None


class RecurrentHead(SequentialHead):
    def __init__(self, rank: int) -> None:
        super().__init__()
        self.recurrence = nn.Linear(rank, rank, bias=False)
        nn.init.zeros_(self.recurrence.weight)

    def next_state(self, token: torch.Tensor, state: torch.Tensor | None) -> torch.Tensor:
        return token if state is None else token + torch.tanh(self.recurrence(state))

    def teacher_forced(
        self, hidden: torch.Tensor, previous: torch.Tensor, w1: nn.Module, w2: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = w1(previous)
        states: list[torch.Tensor] = []
        state: torch.Tensor | None = None
        for k in range(previous.shape[-1]):
            state = self.next_state(tokens[..., k, :], state)
            states.append(state)
        stacked = torch.stack(states, dim=-2)
        return w2(stacked), stacked

    def begin(self, hidden: torch.Tensor) -> None:
        return None

    def step(
        self,
        k: int,
        previous: torch.Tensor,
        context: torch.Tensor | None,
        state: torch.Tensor | None,
        w1: nn.Module,
        w2: nn.Module,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        state = self.next_state(w1(previous), state)
        return w2(state), state, state


def make_head(name: str, d_model: int, rank: int) -> SequentialHead | None:
    """The parameters head ``name`` adds (None for ``vanilla``, which adds none, and for
    ``none``, which has no head)."""
    check_head(name)
    if name == "gated":
        return GatedHead(d_model, rank)
    if name == "rnn":
        return RecurrentHead(rank)
    return None
