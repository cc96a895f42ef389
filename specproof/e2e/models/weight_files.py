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


class WeightsError(ValueError):
    """A weights file that is missing, unreadable, truncated or incomplete; the message names
    the file and what is wrong with it."""


def load_weights(directory: Path, name: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(tensors, config) as written by :func:`save_weights`."""
    path = weight_path(directory, name)
    if not path.is_file():
        raise WeightsError(f"{path}: no such file")
    try:
        if HAVE_SAFETENSORS:
            tensors = load_file(str(path))
            with safe_open(str(path), framework="pt") as handle:
                metadata = handle.metadata()
        else:
            blob = torch.load(path, weights_only=True)
            tensors, metadata = blob["tensors"], blob["metadata"]
    except Exception as error:  # the format's own errors differ by library and version
        reason = " ".join(str(error).split())
        raise WeightsError(f"{path}: unreadable or truncated ({reason})") from error
    if not metadata or "config" not in metadata:
        raise WeightsError(f"{path}: no 'config' in its metadata (not written by save_weights)")
    try:
        config = json.loads(metadata["config"])
    except json.JSONDecodeError as error:
        raise WeightsError(f"{path}: its metadata's config is not JSON ({error})") from error
    tensors = {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}
    return tensors, config


def load_into(module: nn.Module, tensors: dict[str, torch.Tensor], path: Path) -> None:
    """``module.load_state_dict(tensors)``, with a :class:`WeightsError` naming the file and
    the tensors missing, unexpected or of the wrong shape."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    shapes = sorted(
        f"{k} {tuple(tensors[k].shape)} (expected {tuple(v.shape)})"
        for k, v in expected.items()
        if k in tensors and tensors[k].shape != v.shape
    )
    problems = [
        f"{label} {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
        for label, keys in (
            ("missing tensors", missing),
            ("unexpected tensors", unexpected),
            ("wrong shapes:", shapes),
        )
        if keys
    ]
    if problems:
        raise WeightsError(f"{path}: " + "; ".join(problems))
    module.load_state_dict(tensors)


def config_from(make: Any, config: dict[str, Any], path: Path) -> Any:
    """``make(config)`` (a config class's from_dict), naming the file when the config does not
    fit the class."""
    try:
        return make(config)
    except (TypeError, KeyError, ValueError) as error:
        raise WeightsError(f"{path}: its config does not fit ({error})") from error
