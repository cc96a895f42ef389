"""Backend selection: Triton on CUDA (or under the interpreter), torch elsewhere."""

from __future__ import annotations

import os
from typing import Literal

import torch

from .checks.contract import InvalidInputError

Backend = Literal["auto", "torch", "triton"]


def triton_available(device: torch.device) -> bool:
    """Triton kernels run on CUDA tensors, or on CPU tensors under TRITON_INTERPRET=1."""
    if device.type == "cuda":
        return True
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1"


def resolve_backend(backend: Backend, device: torch.device) -> Literal["torch", "triton"]:
    """``auto`` picks Triton on CUDA tensors and torch elsewhere."""
    if backend == "auto":
        return "triton" if device.type == "cuda" else "torch"
    if backend == "triton":
        if not triton_available(device):
            raise InvalidInputError(
                f"the triton backend needs CUDA tensors, or TRITON_INTERPRET=1 for CPU tensors "
                f"(got a {device.type} tensor)"
            )
        return "triton"
    if backend == "torch":
        return "torch"
    raise InvalidInputError(f"backend must be 'auto', 'torch' or 'triton', got {backend!r}")
