"""The native row copy falls back to the torch copy, once and with a warning, on any failure to
load or bind its cached library (a file from an interrupted or foreign build): chain
verification then gives what it gives without the library."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import torch
from specproof.optimized import chain_verify
from specproof.optimized.torch_backend import fused_gather

COMPILER = shutil.which("cc") or shutil.which("gcc")


def _fresh(monkeypatch: pytest.MonkeyPatch, cache: Path) -> Path:
    """The module as on first use, with its cache in ``cache``; the cached library's path."""
    monkeypatch.setenv("SPECPROOF_CACHE", str(cache))
    monkeypatch.delenv("SPECPROOF_NO_NATIVE", raising=False)
    monkeypatch.setattr(fused_gather, "_tried", False)
    monkeypatch.setattr(fused_gather, "_library", None)
    cache.mkdir(parents=True, exist_ok=True)
    return fused_gather.library_path(cache)


def _other_library(path: Path) -> None:
    """A valid shared library without ``gather_rows_stats``."""
    source = path.with_name("other.c")
    source.write_text("int something_else(void) { return 0; }\n")
    subprocess.run([str(COMPILER), "-shared", "-fPIC", str(source), "-o", str(path)], check=True)


def _verify() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    target = torch.rand(3, 4, 40, generator=generator)
    target /= target.sum(-1, keepdim=True)
    draft = torch.rand(3, 3, 40, generator=generator)
    draft /= draft.sum(-1, keepdim=True)
    tokens = torch.randint(0, 40, (3, 3), generator=generator)
    result = chain_verify(target, draft, tokens, seed=7, backend="torch")
    return torch.cat([result.tokens.flatten(), result.num_accepted.flatten()])


@pytest.mark.skipif(COMPILER is None, reason="no C compiler: the cache is never read")
@pytest.mark.parametrize("corruption", ["library without the symbol", "not a library"])
def test_a_corrupt_cache_falls_back_once_with_a_warning(
    corruption: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a cached .so without the expected symbol made every chain verification call
    raise AttributeError; a file that is not a library fell back without a word."""
    monkeypatch.setattr(fused_gather, "native", lambda: None)
    expected = _verify()  # the torch copy
    monkeypatch.undo()
    library = _fresh(monkeypatch, tmp_path / "cache")
    if corruption == "not a library":
        library.write_bytes(b"\x7fELF interrupted build")
    else:
        _other_library(library)
    with pytest.warns(RuntimeWarning, match="could not be built or loaded"):
        first = _verify()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: the second call is silent
        second = _verify()
    assert fused_gather.native() is None
    assert torch.equal(first, expected) and torch.equal(second, expected)


@pytest.mark.skipif(COMPILER is None, reason="no C compiler")
def test_a_clean_cache_builds_and_loads_without_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = _fresh(monkeypatch, tmp_path / "cache")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fused_gather.native() is not None
    assert library.exists()
