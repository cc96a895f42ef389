"""Chain verification on a CUDA device: the default call (``backend="auto"``, which is Triton on
CUDA, validated) beside the unvalidated Triton path, the kernel launch alone, the torch backend,
the compat functions and the eager and per-request baselines, with the fraction of the measured
copy bandwidth that the bytes needed represent.

Shapes, inputs and the byte model are those of ``specproof/runners/kernel_bench.py`` (headline B =
64, k = 8,
V = 128,256 and one-axis sweeps of B, k and V, near-zero acceptance at the headline shape).
Timing: every implementation of a case runs interleaved (each repeat calls all of them in a
fresh random order); one measurement is ``calls`` back-to-back calls between two device
synchronisations, divided by ``calls`` (what a serving loop that does not synchronise pays per
call; validated paths synchronise once per call themselves). Medians over the repeats.

On CPU (``--device cpu --quick`` under ``TRITON_INTERPRET=1``) it only tries the script at tiny
shapes: interpreted Triton times mean nothing. Writes JSON (``--out``) and a markdown table
(``--markdown``).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import random
import statistics
import time
import types
from collections.abc import Callable
from pathlib import Path

import torch

from specproof.optimized import chain_verify
from specproof.optimized.checks.chain_call import ChainCall
from specproof.optimized.checks.streams import Streams
from specproof.optimized.compat import chain_speculative_sampling, rejection_sample
from specproof.runners.entry_points import entry_points_markdown, measure_entry_points
from specproof.runners.kernel_bench import (
    bytes_needed,
    copy_bandwidth,
    eager_chain_verify,
    make_inputs,
    per_request_loop,
    synchronize,
)

ROOT = Path(__file__).resolve().parents[2]

# (B, k, V, realistic drafts)
SHAPES = [
    (64, 8, 128_256, True),
    (1, 8, 128_256, True),
    (8, 8, 128_256, True),
    (256, 8, 128_256, True),
    (64, 1, 128_256, True),
    (64, 4, 128_256, True),
    (64, 16, 128_256, True),
    (64, 8, 32_000, True),
    (64, 8, 151_936, True),
    (64, 8, 128_256, False),
]
QUICK_SHAPES = [(4, 3, 1000, True), (2, 2, 5000, False)]
MEASURE_SECONDS = 2e-3
"""A measurement runs enough back-to-back calls to last about this long."""


def checked_call(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, logits: bool
) -> ChainCall:
    """The kernel's arguments for every request drafting n tokens at temperature 1, key 1."""
    batch, n = tokens.shape
    dev = target.device
    return ChainCall(
        target=target,
        draft=draft,
        draft_tokens=tokens,
        lengths=torch.full((batch,), n, dtype=torch.int64, device=dev),
        temperatures=torch.ones(batch, dtype=torch.float32, device=dev),
        streams=Streams(
            keys=1,
            round=0,
            offsets=0,
            words=torch.arange(batch, dtype=torch.int64, device=dev),
            words_given=False,
        ),
        target_logits=logits,
        draft_logits=logits,
        placeholder_drafts=False,
        given=(False, False, False),
    )


def kernel_only(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, logits: bool
) -> Callable[[], object]:
    """The Triton launch with per-request arguments prepared once (no argument handling)."""
    from specproof.optimized.kernels.chain_verify import chain_verify_triton

    checked = checked_call(target, draft, tokens, logits)

    def call() -> object:
        return chain_verify_triton(checked)

    return call


def implementations(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, logits: bool
) -> dict[str, Callable[[], object]]:
    gen = torch.Generator(device=target.device).manual_seed(5)
    flags = {"target_is_logits": logits, "draft_is_logits": logits}
    impls: dict[str, Callable[[], object]] = {
        "default": lambda: chain_verify(target, draft, tokens, seed=1, **flags),
        "triton_unvalidated": lambda: chain_verify(
            target, draft, tokens, seed=1, backend="triton", validate=False, **flags
        ),
        "kernel": kernel_only(target, draft, tokens, logits),
        "torch": lambda: chain_verify(target, draft, tokens, seed=1, backend="torch", **flags),
        "torch_unvalidated": lambda: chain_verify(
            target, draft, tokens, seed=1, backend="torch", validate=False, **flags
        ),
        "eager": lambda: eager_chain_verify(target, draft, tokens, logits, gen),
        "loop": lambda: per_request_loop(target, draft, tokens, logits, gen),
    }
    if not logits:
        batch, n = tokens.shape
        vocab = target.shape[-1]
        ragged_target = target[:, :n].reshape(batch * n, vocab)
        ragged_draft = draft.reshape(batch * n, vocab)
        cumulative = torch.arange(1, batch + 1, device=target.device) * n
        metadata = types.SimpleNamespace(
            all_greedy=False, all_random=True, temperature=None, generators={}
        )
        impls["flashinfer"] = lambda: chain_speculative_sampling(draft, tokens, target, seed=1)
        impls["vllm"] = lambda: rejection_sample(
            tokens.reshape(-1),
            [n] * batch,
            n,
            cumulative,
            ragged_draft,
            ragged_target,
            tokens[:, :1],
            metadata,
            seed=1,
        )
    return impls


def per_call_seconds(fn: Callable[[], object], dev: torch.device, calls: int) -> float:
    synchronize(dev)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize(dev)
    return (time.perf_counter() - start) / calls


def measure(
    shape: tuple[int, int, int, bool],
    logits: bool,
    dev: torch.device,
    bandwidth: float,
    repeats: int,
) -> dict:
    batch, n, vocab, realistic = shape
    target, draft, tokens = make_inputs(batch, n, vocab, realistic, logits, dev, seed=batch + n)
    impls = implementations(target, draft, tokens, logits)
    calls: dict[str, int] = {}
    for name, fn in impls.items():  # warm-up (compiles each specialisation), then size calls
        fn()
        once = per_call_seconds(fn, dev, 1)
        calls[name] = max(1, min(200, int(MEASURE_SECONDS / max(once, 1e-7))))
    times: dict[str, list[float]] = {name: [] for name in impls}
    order = list(impls)
    shuffler = random.Random(batch * 1000 + n)
    for _ in range(repeats):
        shuffler.shuffle(order)
        for name in order:
            times[name].append(per_call_seconds(impls[name], dev, calls[name]))
    accepted = chain_verify(
        target, draft, tokens, seed=1, target_is_logits=logits, draft_is_logits=logits
    ).num_accepted
    needed = bytes_needed(accepted, n, vocab, logits)
    row: dict = {
        "B": batch,
        "k": n,
        "V": vocab,
        "input": "logits" if logits else "probs",
        "drafts": "realistic" if realistic else "near-zero acceptance",
        "mean_accepted": float(accepted.double().mean()),
        "bytes_needed": needed,
        "bound_s": needed / bandwidth,
        "calls_per_measurement": calls,
    }
    for name, values in times.items():
        row[f"{name}_s"] = statistics.median(values)
        row[f"{name}_bandwidth_fraction"] = needed / bandwidth / statistics.median(values)
    return row


def tune(dev: torch.device, bandwidth: float, repeats: int) -> list[dict]:
    """The kernel alone at the headline shape over vocabulary tiles and warps per program."""
    from specproof.optimized.kernels.chain_verify import chain_verify_triton

    batch, n, vocab, _ = SHAPES[0]
    rows = []
    for logits in (False, True):
        target, draft, tokens = make_inputs(batch, n, vocab, True, logits, dev, seed=batch + n)
        accepted = None
        for block in (2048, 4096, 8192):
            for warps in (4, 8, 16):
                checked = checked_call(target, draft, tokens, logits)
                call = functools.partial(chain_verify_triton, checked, block=block, num_warps=warps)
                accepted = call()[1]
                seconds = statistics.median(per_call_seconds(call, dev, 20) for _ in range(repeats))
                needed = bytes_needed(accepted, n, vocab, logits)
                rows.append(
                    {
                        "input": "logits" if logits else "probs",
                        "BLOCK": block,
                        "num_warps": warps,
                        "kernel_s": seconds,
                        "bandwidth_fraction": needed / bandwidth / seconds,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    return rows


def milliseconds(row: dict, name: str) -> str:
    key = f"{name}_s"
    return f"{row[key] * 1e3:,.3f}" if key in row else "-"


def markdown(report: dict) -> str:
    lines = [
        f"{report['device']}, torch {report['torch']}, triton {report['triton']}; copy bandwidth "
        f"{report['copy_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s (read + write of 256 MiB); "
        f"run {report['date']}. Milliseconds per call (median of {report['repeats']} "
        'interleaved measurements); "default" is `chain_verify(...)` with its defaults '
        '(`backend="auto"`: Triton on CUDA; validate=True); "kernel" is the Triton launch '
        "alone; bw = bytes needed / time / copy bandwidth.",
        "",
        "| input | drafts | B | k | V | mean accepted | default | Triton unvalidated | kernel "
        "| torch backend | torch unvalidated | FlashInfer sig. | vLLM sig. | eager | per-request "
        "loop | bound | default bw | kernel bw | eager / default | validation overhead |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        overhead = r["default_s"] / r["triton_unvalidated_s"] - 1
        lines.append(
            f"| {r['input']} | {r['drafts']} | {r['B']} | {r['k']} | {r['V']:,} "
            f"| {r['mean_accepted']:.2f} | {milliseconds(r, 'default')} "
            f"| {milliseconds(r, 'triton_unvalidated')} | {milliseconds(r, 'kernel')} "
            f"| {milliseconds(r, 'torch')} | {milliseconds(r, 'torch_unvalidated')} "
            f"| {milliseconds(r, 'flashinfer')} | {milliseconds(r, 'vllm')} "
            f"| {milliseconds(r, 'eager')} | {milliseconds(r, 'loop')} "
            f"| {r['bound_s'] * 1e3:,.4f} | {100 * r['default_bandwidth_fraction']:.1f} % "
            f"| {100 * r['kernel_bandwidth_fraction']:.1f} % "
            f"| {r['eager_s'] / r['default_s']:.1f}x | {100 * overhead:+.0f} % |"
        )
    return "\n".join(lines) + "\n"


GPU_SECTION_INTRO = """\
## Kernels on a GPU (Triton, compiled)

Written by `python -m specproof.runners.gpu_bench --render` from `benchmarks/gpu.json` (the
current kernels) and
`benchmarks/gpu_before.json` (the first compiled run, before the fixes and the tuning below);
measured by `specproof/runners/gpu.sh` (`specproof/runners/gpu_bench.py` part). Inputs and the
byte model are those of the CPU
benchmark above. Times are per call: a measurement is back-to-back calls between two device
synchronisations, divided by their number (a serving loop that does not synchronise pays
this); the validated default synchronises once per call itself, so it cannot overlap the
launch of the next call with the kernel. Medians of interleaved measurements.
"""


README_COLUMNS = (
    "default", "triton_unvalidated", "kernel", "torch", "flashinfer", "vllm", "eager", "loop",
)  # fmt: skip


def readme_cells(row: dict) -> list[str]:
    """docs/results/optimized_speed.md's GPU table row for one result: milliseconds to 3
    significant digits."""
    names = {"probs": "probabilities", "logits": "logits"}
    cells = [names[row["input"]]]
    for name in README_COLUMNS:
        key = f"{name}_s"
        cells.append(f"{row[key] * 1e3:.3g}" if key in row else "-")
    return [*cells, f"{row['bound_s'] * 1e3:.3g}"]


def render_section(after: dict, before: dict) -> str:
    """The GPU section (benchmarks/kernels_gpu.md) from two runs of this script."""
    lines = [GPU_SECTION_INTRO, "### Current kernels", "", markdown(after), ""]
    pairs = zip(before["results"], after["results"], strict=True)
    lines += [
        "### The default call before and after the in-kernel checks",
        "",
        f"Before: {before['date']} (kernels with tile 4096 and 4 warps, validation by separate "
        "torch passes with several host synchronisations). After: "
        f"{after['date']} (checks inside the kernel, one synchronisation; tile 8192 and 16 "
        "warps). Same device kind, different machines of it.",
        "",
        "| input | drafts | B | k | V | default before ms | default after ms | kernel before ms "
        "| kernel after ms | eager / default after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for old, new in pairs:
        lines.append(
            f"| {new['input']} | {new['drafts']} | {new['B']} | {new['k']} | {new['V']:,} "
            f"| {old['default_s'] * 1e3:.3f} | {new['default_s'] * 1e3:.3f} "
            f"| {old['kernel_s'] * 1e3:.3f} | {new['kernel_s'] * 1e3:.3f} "
            f"| {new['eager_s'] / new['default_s']:.1f}x |"
        )
    lines += [
        "",
        "### Vocabulary tile and warps (kernel alone, B = 64, k = 8, V = 128,256)",
        "",
        f"From the first run ({before['date']}). Fraction = bytes needed / time / copy bandwidth.",
        "",
        "| input | tile | warps | kernel ms | fraction of copy bandwidth |",
        "|---|---|---|---|---|",
    ]
    for row in before["tuning"]:
        lines.append(
            f"| {row['input']} | {row['BLOCK']} | {row['num_warps']} "
            f"| {row['kernel_s'] * 1e3:.3f} | {100 * row['bandwidth_fraction']:.1f} % |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, to test the script")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "gpu.json")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--no-tune", action="store_true", help="skip the tile/warps sweep")
    parser.add_argument(
        "--render",
        action="store_true",
        help="write benchmarks/kernels_gpu.md from benchmarks/gpu.json and "
        "benchmarks/gpu_before.json, measuring nothing",
    )
    args = parser.parse_args()
    if args.render:
        from specproof.sections import replace_section

        after = json.loads((ROOT / "benchmarks" / "gpu.json").read_text())
        before = json.loads((ROOT / "benchmarks" / "gpu_before.json").read_text())
        replace_section(
            ROOT / "benchmarks" / "kernels_gpu.md", "gpu", render_section(after, before)
        )
        return
    dev = torch.device(args.device)
    bandwidth = copy_bandwidth(dev)
    repeats = 3 if args.quick else args.repeats
    rows = []
    for shape in QUICK_SHAPES if args.quick else SHAPES:
        for logits in (False, True):
            start = time.perf_counter()
            rows.append(measure(shape, logits, dev, bandwidth, repeats))
            brief = {k: v for k, v in rows[-1].items() if k != "calls_per_measurement"}
            print(json.dumps(brief), f"({time.perf_counter() - start:.1f} s)", flush=True)
    tuning = [] if args.quick or args.no_tune else tune(dev, bandwidth, repeats)
    entry_points = measure_entry_points(dev, args.quick, repeats)
    import triton

    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (interpreter)",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "copy_bandwidth_bytes_per_s": bandwidth,
        "quick": args.quick,
        "repeats": repeats,
        "results": rows,
        "tuning": tuning,
        "entry_points": entry_points,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    table = markdown(report) + "\n" + "\n".join(entry_points_markdown(entry_points))
    if args.markdown:
        args.markdown.write_text(table)
    print(table)


if __name__ == "__main__":
    main()
