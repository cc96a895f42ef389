"""Chain verification on one device, Triton kernel beside the torch backend: median times and
the fraction of the measured copy bandwidth that the bytes needed represent.

Shapes, inputs and the byte model are those of ``bench/run.py``. On CUDA this is the GPU
benchmark of ``bench/gpu.sh``; on CPU (``--device cpu --quick``, under TRITON_INTERPRET=1) it
only tries the script at tiny shapes: interpreted Triton times mean nothing.
Writes ``benchmarks/gpu.json`` (or the ``--out`` file) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import bytes_needed, copy_bandwidth, make_inputs, synchronize  # noqa: E402
from specproof.optimized import chain_verify  # noqa: E402

SHAPES = [(64, 8, 128_256), (1, 8, 128_256), (8, 8, 128_256), (256, 8, 128_256), (64, 8, 32_000)]
QUICK_SHAPES = [(4, 3, 1000), (2, 2, 5000)]


def median_time(fn, dev: torch.device, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        synchronize(dev)
        start = time.perf_counter()
        fn()
        synchronize(dev)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(
    shape: tuple[int, int, int], logits: bool, dev: torch.device, bandwidth: float, repeats: int
) -> dict:
    batch, n, vocab = shape
    target, draft, tokens = make_inputs(batch, n, vocab, True, logits, dev, seed=batch)
    row: dict = {"B": batch, "k": n, "V": vocab, "input": "logits" if logits else "probs"}

    def call(backend: str, validate: bool) -> object:
        return chain_verify(
            target,
            draft,
            tokens,
            seed=1,
            backend=backend,
            validate=validate,
            target_is_logits=logits,
            draft_is_logits=logits,
        )

    for backend in ("torch", "triton"):
        for validate in (True, False):
            key = f"{backend}{'' if validate else '_unvalidated'}"
            row[key + "_s"] = median_time(lambda b=backend, v=validate: call(b, v), dev, repeats)
    accepted = call("torch", False).num_accepted  # type: ignore[attr-defined]
    row["mean_accepted"] = float(accepted.double().mean())
    row["bytes_needed"] = bytes_needed(accepted, n, vocab, logits)
    for key in [k for k in row if k.endswith("_s")]:
        row[key[:-2] + "_bandwidth_fraction"] = row["bytes_needed"] / row[key] / bandwidth
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, to test the script")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "gpu.json")
    args = parser.parse_args()
    dev = torch.device(args.device)
    bandwidth = copy_bandwidth(dev)
    rows = []
    for shape in QUICK_SHAPES if args.quick else SHAPES:
        for logits in (False, True):
            rows.append(measure(shape, logits, dev, bandwidth, 3 if args.quick else 10))
            print(json.dumps(rows[-1]), flush=True)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (interpreter)"
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": name,
        "torch": torch.__version__,
        "copy_bandwidth_bytes_per_s": bandwidth,
        "quick": args.quick,
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n{name}, copy bandwidth {bandwidth / 1e9:.1f} GB/s\n")
    print("| input | B | k | V | torch ms | triton ms | triton unvalidated ms | triton bw |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['input']} | {r['B']} | {r['k']} | {r['V']:,} | {r['torch_s'] * 1e3:.3f} | "
            f"{r['triton_s'] * 1e3:.3f} | {r['triton_unvalidated_s'] * 1e3:.3f} | "
            f"{100 * r['triton_unvalidated_bandwidth_fraction']:.0f} % |"
        )


if __name__ == "__main__":
    main()
