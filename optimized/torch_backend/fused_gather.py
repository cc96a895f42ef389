"""Row gathers that also return each row's float32 sum and minimum, in the one pass of the copy.

The torch backend copies every probability row it reads in full into a workspace (the final
rows: the target row of the drawn token and, at a rejection, the draft row). torch has no
reduction that yields a sum and a minimum together, nor a copy that reduces, so checking those
rows took two more passes over them. This C loop (compiled once with the system C compiler,
cached in the user's cache folder by the hash of its source and flags, loaded through ctypes)
copies each row and keeps 16 running sums and minima in registers on the way: the checks ride
on the copy verification makes anyway. Without a C compiler, or for rows that are not float32
with unit vocabulary stride, :func:`gather_with_stats` returns None and the caller copies with
torch and reduces separately; so it does, after one RuntimeWarning, when the library fails in
any other way to build, load or bind (a cached file from an interrupted or foreign build).

Semantics match ``rows.sum(-1)`` and ``rows.amin(-1)`` for what the checks read: the sum is a
float32 sum (16 lanes, then added in order; it may differ from torch's in the last bits, well
inside the tolerance), NaN and inf propagate into it; the minimum ignores NaN (the sum already
carries it) and -0.0 counts as 0. Given the bounds of a proper sum, the loop also gives each
row's verdict (:func:`~specproof.optimized.checks.row_contents.improper_rows` of its sum and
minimum), so the checks of these rows cost no tensor operation at all.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import threading
import warnings
from pathlib import Path
from typing import NamedTuple

import torch

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>

/* Four float32 lanes (GCC / Clang vector extensions: one SSE or NEON register). */
typedef float lanes __attribute__((vector_size(16)));
typedef int32_t masks __attribute__((vector_size(16)));
#define WIDTH 4
#define STEP (4 * WIDTH)

static inline lanes lower(lanes x, lanes low) {  /* x < low ? x : low, per lane (NaN: low) */
    masks take = x < low;
    return (lanes)(((masks)x & take) | ((masks)low & ~take));
}

/* Copy rows base + offsets[i] (V float32 entries each) to dst + i * V; sums[i] and mins[i]
   are the row's float32 sum and minimum (NaN ignored by the minimum), from the same pass.
   Unless improper is NULL, improper[i] = 1 when the minimum is negative or the sum lies
   outside [sum_low, sum_high] (a NaN sum too), else 0. */
void gather_rows_stats(const float *base, const int64_t *offsets, int64_t rows, int64_t V,
                       float *dst, float *sums, float *mins, float sum_low, float sum_high,
                       uint8_t *improper) {
    const lanes zero = {0.0f, 0.0f, 0.0f, 0.0f};
    const lanes top = {INFINITY, INFINITY, INFINITY, INFINITY};
    for (int64_t i = 0; i < rows; ++i) {
        const float *src = base + offsets[i];
        float *out = dst + i * V;
        lanes acc[4] = {zero, zero, zero, zero};
        lanes low[4] = {top, top, top, top};
        int64_t v = 0;
        for (; v + STEP <= V; v += STEP) {
            for (int j = 0; j < 4; ++j) {
                lanes x;
                memcpy(&x, src + v + j * WIDTH, sizeof x);
                memcpy(out + v + j * WIDTH, &x, sizeof x);
                acc[j] += x;
                low[j] = lower(x, low[j]);
            }
        }
        float total = 0.0f, least = INFINITY;
        for (int j = 0; j < 4; ++j) {
            for (int k = 0; k < WIDTH; ++k) {
                total += acc[j][k];
                least = low[j][k] < least ? low[j][k] : least;
            }
        }
        for (; v < V; ++v) {
            float x = src[v];
            out[v] = x;
            total += x;
            least = x < least ? x : least;
        }
        sums[i] = total;
        mins[i] = least;
        if (improper) {
            improper[i] = !(least >= 0.0f && total >= sum_low && total <= sum_high);
        }
    }
}
"""

FLAGS = ("-O3", "-shared", "-fPIC", "-fno-math-errno")
"""No -march=native: the cached library may be loaded on another CPU of the same architecture;
the loop is bound by memory, not by vector width."""

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_tried = False


def cache_dir() -> Path:
    """Where the compiled library is kept: ``SPECPROOF_CACHE``, else the user's cache folder
    (``XDG_CACHE_HOME`` or ~/.cache) under specproof/; never a shared temporary folder, where
    another user could place a library of their own."""
    if os.environ.get("SPECPROOF_CACHE"):
        return Path(os.environ["SPECPROOF_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "specproof"


def library_path(folder: Path) -> Path:
    """The cached library's file, named by the hash of its source and flags."""
    digest = hashlib.sha256((SOURCE + " ".join(FLAGS)).encode()).hexdigest()[:16]
    return folder / f"fused_gather_{digest}.so"


def _compiled(compiler: str, library: Path) -> None:
    """Compile the library into ``library`` unless it is there."""
    if library.exists():
        return
    library.parent.mkdir(parents=True, exist_ok=True)
    stem = library.with_suffix("").name
    source = library.parent / f"{stem}_{os.getpid()}.c"
    partial = library.parent / f"{stem}_{os.getpid()}.so"
    source.write_text(SOURCE)
    subprocess.run(
        [compiler, *FLAGS, str(source), "-o", str(partial)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    os.replace(partial, library)  # atomic: concurrent builders write their own file
    source.unlink(missing_ok=True)


def _bound(library: Path) -> ctypes.CDLL:
    """The library loaded, its function's signature declared."""
    loaded = ctypes.CDLL(str(library))
    function = loaded.gather_rows_stats
    function.restype = None
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    function.argtypes += [ctypes.c_void_p] * 3 + [ctypes.c_float] * 2 + [ctypes.c_void_p]
    return loaded


def _build() -> ctypes.CDLL | None:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None or os.environ.get("SPECPROOF_NO_NATIVE"):  # the torch fallback
        return None
    library = library_path(cache_dir())
    try:
        _compiled(compiler, library)
        return _bound(library)
    except Exception as error:  # any failure to build, load or bind: the torch copy, said once
        warnings.warn(
            f"specproof: the native row copy {library} could not be built or loaded "
            f"({type(error).__name__}: {error}); chain verification uses the torch copy "
            "(delete the file to rebuild it)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None


def native() -> ctypes.CDLL | None:
    """The compiled library, built on first use; None where it cannot be built."""
    global _library, _tried
    if not _tried:
        with _lock:
            if not _tried:
                _library = _build()
                _tried = True
    return _library


class RowStats(NamedTuple):
    """What the copy keeps of each row: float32 [R] sums and minima, and with ``bounds`` the
    [R] bool verdict improper (minimum < 0, or sum outside [low, high] or NaN), else None."""

    sums: torch.Tensor
    minima: torch.Tensor
    improper: torch.Tensor | None


def gather_with_stats(
    flat: torch.Tensor,
    index: torch.Tensor,
    out: torch.Tensor,
    bounds: tuple[float, float] | None = None,
) -> RowStats | None:
    """Copy ``flat[index]`` into ``out`` ([R, V] float32, contiguous) and return the rows'
    :class:`RowStats`, in one pass; with ``bounds`` (low, high: float32 values) each row's
    verdict too, so that checking the rows takes no tensor operation of its own. None (nothing
    copied) unless ``flat`` is a float32 CPU tensor with unit stride along V and the library is
    available."""
    if (
        flat.device.type != "cpu"
        or flat.dtype != torch.float32
        or flat.stride(1) != 1
        or not out.is_contiguous()
        or flat.shape[0] == 0
    ):
        return None
    library = native()
    if library is None:
        return None
    rows, vocab = out.shape
    index = index.to(torch.int64)
    if rows != index.numel() or vocab != flat.shape[1]:
        raise ValueError(
            f"out {tuple(out.shape)} does not hold {index.numel()} rows of {flat.shape[1]}"
        )
    if rows and not bool(((index >= 0) & (index < flat.shape[0])).all()):
        return None  # torch's gather then raises its index error: no read outside the tensor
    offsets = (index * flat.stride(0)).contiguous()
    sums = torch.empty(rows, dtype=torch.float32)
    minima = torch.empty(rows, dtype=torch.float32)
    improper = None if bounds is None else torch.empty(rows, dtype=torch.bool)  # one byte each
    low, high = bounds or (0.0, 0.0)
    base = flat.data_ptr()  # the storage offset of the view is included
    library.gather_rows_stats(
        base, offsets.data_ptr(), rows, vocab, out.data_ptr(), sums.data_ptr(),
        minima.data_ptr(), low, high, None if improper is None else improper.data_ptr(),
    )  # fmt: skip
    return RowStats(sums, minima, improper)
