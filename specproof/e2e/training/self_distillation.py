"""Training data the target writes itself (self-distillation, as DSpark and EAGLE-3 train):
prompts from the domains' training splits continued by the target, batched over its KV cache,
written in shards of token ids with a manifest, resumable from the last complete shard.

A shard is ``shard_NNNNN.npz`` (compressed): ``tokens`` uint16 (every sequence, prompt then
continuation, one after another), ``lengths`` and ``prompt_lengths`` int32 per sequence,
``domains`` uint8 (index into the manifest's ``domains``), ``sources`` int64 (where each prompt
was cut, :class:`specproof.e2e.data.chat_prompts.Prompt`). Shard i depends only on the settings
and i (its prompts and its draws are seeded by ``seed`` and i), so a resumed run writes what an
uninterrupted one would have, given the same torch build and thread count. A shard is written
to a temporary file and renamed, then recorded in ``manifest.json`` (also written whole): a
shard the manifest does not list is written again.

The hidden states and laws the drafters learn from are not stored: they are recomputed from the
token ids by the target at training time (see docs/results/e2e_smollm2_target.md for the two
costs).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.chat_prompts import Prompt
from ..models.drafting import tempered_probs
from ..models.llama_target import LlamaTarget

MANIFEST = "manifest.json"
FORMAT = 1
Log = Callable[[str], None]


@dataclass(frozen=True)
class DistillSettings:
    seed: int
    sequences_per_shard: int
    new_tokens: int
    """At most this many tokens per continuation; fewer when the target ends its turn."""
    temperature: float
    dtype: str
    stop_tokens: tuple[int, ...]
    domains: tuple[str, ...]
    weights: tuple[float, ...]
    """The domains' shares of the prompts, in the order of ``domains``."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Continuations:
    tokens: list[list[int]]
    """Per request, the generated tokens (the stop token included when one was drawn)."""
    seconds: float


@torch.no_grad()
def continue_batch(
    target: LlamaTarget,
    prompts: Sequence[Sequence[int]],
    new_tokens: int,
    temperature: float,
    stop_tokens: Sequence[int],
    generator: torch.Generator,
    progress: Log | None = None,
    every: int = 32,
) -> Continuations:
    """Continue every prompt by at most ``new_tokens`` draws from the target at
    ``temperature`` (0: greedy), one cached step for all requests still running; a request
    stops after drawing a stop token. ``progress`` hears of every ``every``-th step."""
    start = time.perf_counter()
    batch = len(prompts)
    lengths = torch.tensor([len(p) for p in prompts], dtype=torch.int64)
    padded = torch.zeros(batch, int(lengths.max()), dtype=torch.int64)
    for r, p in enumerate(prompts):
        padded[r, : len(p)] = torch.tensor(list(p))
    cache = target.new_cache(batch, int(lengths.max()) + new_tokens)
    last = target.extend(padded, lengths, cache).logits[torch.arange(batch), lengths - 1]
    cache.commit(lengths)
    stops = torch.tensor(list(stop_tokens), dtype=torch.int64)
    running = torch.ones(batch, dtype=torch.bool)
    drawn = torch.full((batch, new_tokens), -1, dtype=torch.int64)
    for step in range(new_tokens):
        probs = tempered_probs(last, temperature)
        if temperature == 0:
            token = probs.argmax(-1)
        else:
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        drawn[:, step] = torch.where(running, token, -1)
        running = running & ~torch.isin(token, stops)
        if progress is not None and (step + 1) % every == 0:
            seconds = time.perf_counter() - start
            progress(
                f"  step {step + 1}/{new_tokens}, {int(running.sum())} running, {seconds:.0f} s"
            )
        if not bool(running.any()) or step + 1 == new_tokens:
            break
        counts = running.to(torch.int64)
        step_logits = target.extend(token[:, None], counts, cache).logits[:, 0]
        cache.commit(counts)
        last = torch.where(running[:, None], step_logits, last)
    rows = [[int(t) for t in row if t >= 0] for row in drawn.tolist()]
    return Continuations(rows, time.perf_counter() - start)


def json_writer(value: Any) -> Callable[[Path], None]:
    text = json.dumps(value, indent=1) + "\n"

    def write(path: Path) -> None:
        path.write_text(text)

    return write


def shard_name(index: int) -> str:
    return f"shard_{index:05d}.npz"


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    partial = path.with_name(path.name + ".partial")
    write(partial)
    os.replace(partial, path)


def save_shard(
    path: Path,
    prompts: Sequence[Prompt],
    continuations: Sequence[Sequence[int]],
    domains: tuple[str, ...],
) -> dict[str, int]:
    sequences = [[*p.tokens, *c] for p, c in zip(prompts, continuations, strict=True)]
    flat = np.fromiter((t for s in sequences for t in s), dtype=np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= 1 << 16):
        raise ValueError("token ids must fit uint16")
    arrays: dict[str, np.ndarray] = {
        "tokens": flat.astype(np.uint16),
        "lengths": np.array([len(s) for s in sequences], dtype=np.int32),
        "prompt_lengths": np.array([len(p.tokens) for p in prompts], dtype=np.int32),
        "domains": np.array([domains.index(p.domain) for p in prompts], dtype=np.uint8),
        "sources": np.array([p.source for p in prompts], dtype=np.int64),
    }

    def write(partial: Path) -> None:
        with partial.open("wb") as handle:
            np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]

    write_atomically(path, write)
    return {
        "sequences": len(sequences),
        "prompt_tokens": int(arrays["prompt_lengths"].sum()),
        "generated_tokens": int(flat.size - arrays["prompt_lengths"].sum()),
    }


def load_shard(path: Path) -> list[tuple[int, list[int], int]]:
    """(domain index, token ids, prompt length) per sequence of a shard."""
    with np.load(path) as data:
        tokens = data["tokens"].astype(np.int64)
        ends = np.cumsum(data["lengths"])
        out: list[tuple[int, list[int], int]] = []
        for i, end in enumerate(ends):
            begin = int(end - data["lengths"][i])
            out.append(
                (
                    int(data["domains"][i]),
                    tokens[begin:end].tolist(),
                    int(data["prompt_lengths"][i]),
                )
            )
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(folder: Path, settings: DistillSettings) -> dict[str, Any]:
    """The folder's manifest, or a new one; a manifest of other settings is refused."""
    path = folder / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "settings": settings.as_dict(), "shards": []}
    manifest = json.loads(path.read_text())
    saved = {**manifest["settings"]}
    saved["stop_tokens"], saved["domains"] = tuple(saved["stop_tokens"]), tuple(saved["domains"])
    saved["weights"] = tuple(saved["weights"])
    if saved != settings.as_dict():
        raise ValueError(f"{path} was written with other settings: {manifest['settings']}")
    return manifest


def generate_shards(
    folder: Path,
    target: LlamaTarget,
    prompts_of_shard: Callable[[int], list[Prompt]],
    settings: DistillSettings,
    shards: int,
    extra: dict[str, Any] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    """Write shards until ``shards`` are complete, starting after the manifest's last one."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(folder, settings)
    manifest.update(extra or {})
    done = len(manifest["shards"])
    if done:
        log(f"resuming after {done} complete shards")
    for index in range(done, shards):
        prompts = prompts_of_shard(index)
        generator = torch.Generator().manual_seed(settings.seed * 1_000_003 + index)
        result = continue_batch(
            target,
            [p.tokens for p in prompts],
            settings.new_tokens,
            settings.temperature,
            settings.stop_tokens,
            generator,
            progress=log,
        )
        path = folder / shard_name(index)
        counts = save_shard(path, prompts, result.tokens, settings.domains)
        record = {
            "file": path.name,
            **counts,
            "seconds": round(result.seconds, 3),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sha256": sha256(path),
        }
        manifest["shards"].append(record)
        totals = summary(manifest)
        manifest["totals"] = totals
        write_atomically(folder / MANIFEST, json_writer(manifest))
        rate = counts["generated_tokens"] / max(result.seconds, 1e-9)
        left = (shards - index - 1) * result.seconds
        log(
            f"shard {index + 1}/{shards}: {counts['generated_tokens']} tokens in "
            f"{result.seconds:.1f} s ({rate:.1f} tokens/s); total {totals['generated_tokens']} "
            f"generated; about {left / 60:.0f} min left"
        )
    return manifest


def summary(manifest: dict[str, Any]) -> dict[str, float]:
    shards = manifest["shards"]
    generated = sum(s["generated_tokens"] for s in shards)
    seconds = sum(s["seconds"] for s in shards)
    return {
        "shards": len(shards),
        "sequences": sum(s["sequences"] for s in shards),
        "prompt_tokens": sum(s["prompt_tokens"] for s in shards),
        "generated_tokens": generated,
        "seconds": round(seconds, 3),
        "generated_tokens_per_second": round(generated / seconds, 2) if seconds else 0.0,
        "hours_per_million_generated": round(1e6 / generated * seconds / 3600, 2)
        if generated
        else 0.0,
    }


def distilled_streams(folder: Path) -> dict[str, np.ndarray]:
    """Per domain, every sequence of the manifest's shards (prompt then continuation), one
    after another, as int64 token ids."""
    manifest = json.loads((folder / MANIFEST).read_text())
    domains = manifest["settings"]["domains"]
    parts: dict[str, list[list[int]]] = {d: [] for d in domains}
    for shard in manifest["shards"]:
        for domain, tokens, _ in load_shard(folder / shard["file"]):
            parts[domains[domain]].append(tokens)
    if not any(parts.values()):
        raise ValueError(f"{folder}: the manifest lists no sequences")
    return {d: np.concatenate([np.array(s) for s in seqs]) for d, seqs in parts.items() if seqs}
