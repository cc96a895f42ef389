"""Saving and loading trained weights: safetensors (the ``e2e`` extra) with the config in the
file's metadata, else ``torch.save`` of the same tensors and metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

try:
    from safetensors.torch import load_file, safe_open, save_file

    HAVE_SAFETENSORS = True
except ImportError:  # pragma: no cover - depends on the installed extras
    HAVE_SAFETENSORS = False


def weight_path(directory: Path, name: str) -> Path:
    return directory / (f"{name}.safetensors" if HAVE_SAFETENSORS else f"{name}.pt")


def save_weights(
    module: nn.Module,
    config: dict[str, Any],
    directory: Path,
    name: str,
    dtype: torch.dtype | None = None,
) -> Path:
    """The module's own parameters (a frozen target a drafter reads is saved separately),
    cast to ``dtype`` when given (bf16 halves the file; loading casts back to float32)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = weight_path(directory, name)
    tensors = {
        k: (v.detach() if dtype is None else v.detach().to(dtype)).contiguous()
        for k, v in module.state_dict().items()
    }
    metadata = {"config": json.dumps(config), "kind": type(module).__name__}
    if HAVE_SAFETENSORS:
        save_file(tensors, str(path), metadata=metadata)
    else:
        torch.save({"tensors": tensors, "metadata": metadata}, path)
    return path


def load_weights(directory: Path, name: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(tensors, config) as written by :func:`save_weights`."""
    path = weight_path(directory, name)
    if HAVE_SAFETENSORS:
        tensors = load_file(str(path))
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata()
    else:
        blob = torch.load(path, weights_only=True)
        tensors, metadata = blob["tensors"], blob["metadata"]
    tensors = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    return tensors, json.loads(metadata["config"])
