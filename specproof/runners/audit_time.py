"""Wall-clock time of ``specproof audit`` as a user runs it, per case, for a vectorised
verifier and for verifiers written as a per-request loop (HF's ``_speculative_sampling`` shape).

    python -m specproof.runners.audit_time --json benchmarks/audit_time.json [--extra ARGS...]

Each verifier is audited by a child process running the command (``--quiet`` off, so the
stderr lines that announce each case are timestamped as they arrive); the seconds of a case
are the time from its line to the next one. The child's CPU time (user + system) is recorded
beside the wall time: on a shared machine it is the closer guide to a quiet machine's wall
time. The machine and its load are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

EXAMPLES = "specproof.subjects.examples"
VERIFIERS = {
    "vectorised (flashinfer)": (f"{EXAMPLES}:chain_speculative_sampling", "flashinfer"),
    "per-request loop (hf)": (f"{EXAMPLES}:speculative_sampling", "hf"),
    "per-request loop (flashinfer)": (
        "bench.audit_time:loop_chain_speculative_sampling",
        "flashinfer",
    ),
}


def loop_chain_speculative_sampling(
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    target_probs: torch.Tensor,
    accepted: torch.Tensor,
    emitted: torch.Tensor,
    deterministic: bool = True,
) -> torch.Tensor:
    """FlashInfer's signature written as engines' reference code is: one request at a time,
    one draft at a time, in Python."""
    batch, gamma = draft_token_ids.shape
    out = torch.full((batch, gamma + 1), -1, dtype=torch.int32)
    for row in range(batch):
        for j in range(gamma + 1):
            p = target_probs[row, j].double()
            if j == gamma:
                out[row, j] = int(torch.multinomial(p / p.sum(), 1))
                break
            token = int(draft_token_ids[row, j])
            q = draft_probs[row, j].double()
            if float(torch.rand(())) * float(q[token]) <= float(p[token]):
                out[row, j] = token
                continue
            residual = (p - q).clamp_min(0)
            residual = residual if float(residual.sum()) > 0 else p
            out[row, j] = int(torch.multinomial(residual / residual.sum(), 1))
            break
    return out


def time_audit(target: str, signature: str, extra: list[str]) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "specproof.commands.cli",
        "audit",
        target,
        "--signature",
        signature,
    ]
    command += extra
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = before.ru_utime + before.ru_stime
    start = time.monotonic()
    marks: list[tuple[str, float]] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    ) as child:
        assert child.stderr is not None and child.stdout is not None
        for line in child.stderr:
            for part in line.split("\r"):
                text = part.strip()
                if part.startswith("  ") and ": " in text and "[" not in text:
                    marks.append((text.split(":")[0], time.monotonic() - start))
                    print(f"  {marks[-1][1]:7.1f} s  {text[:100]}", flush=True)
        table = child.stdout.read()
        code = child.wait()
    total = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    ends = [t for _, t in marks[1:]] + [total]
    cases = {name: round(end - begin, 1) for (name, begin), end in zip(marks, ends, strict=True)}
    return {
        "command": shlex.join(["specproof", "audit", target, "--signature", signature, *extra]),
        "exit_status": code,
        "seconds": round(total, 1),
        "cpu_seconds": round(used.ru_utime + used.ru_stime - cpu_before, 1),
        "case_seconds": cases,
        "table": table.splitlines(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--only", nargs="*", help="verifiers whose name contains one of these")
    parser.add_argument("--extra", default="", help="more arguments for every audit (quoted)")
    args = parser.parse_args(argv)
    results = {}
    for name, (target, signature) in VERIFIERS.items():
        if args.only and not any(part in name for part in args.only):
            continue
        print(f"{name}: {target}", flush=True)
        results[name] = time_audit(target, signature, shlex.split(args.extra))
        result = results[name]
        print(
            f"{name}: {result['seconds']} s wall, {result['cpu_seconds']} s CPU, exit "
            f"{result['exit_status']}"
        )
    load = os.getloadavg()
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average_at_end": [round(v, 1) for v in load],
        "note": "shared machine, other jobs running: figures are noisy",
        "results": results,
    }
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
