"""Run every theorem's certificate: one line per theorem; exits non-zero if any fails.

Usage: ``python proofs/check_all.py [--thorough]`` (``nox -s proofs`` runs it).
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

CERTIFICATES = Path(__file__).resolve().parent / "certificates"
MODULES = (
    "t1_chain",
    "t2_non_anticipating",
    "t3_algorithm1",
    "t4_greedy",
    "t5_lookahead",
    "t6_trees",
    "t7_expected_tokens",
    "t8_block",
)


def main(argv: list[str]) -> int:
    thorough = "--thorough" in argv
    sys.path.insert(0, str(CERTIFICATES))
    failures = 0
    size = "thorough" if thorough else "default"
    print(f"running {len(MODULES)} certificates ({size} size)", flush=True)
    for index, name in enumerate(MODULES, start=1):
        print(f"[{index}/{len(MODULES)}] {name} ...", flush=True)
        started = time.perf_counter()
        try:
            outcome = importlib.import_module(name).main(thorough)
        except Exception:
            failures += 1
            print(f"FAIL {name}:\n{traceback.format_exc()}", flush=True)
            continue
        seconds = time.perf_counter() - started
        print(
            f"PASS {outcome.theorem} [{outcome.verdict}] {outcome.checked} ({seconds:.1f} s)",
            flush=True,
        )
    print("all certificates pass" if not failures else f"{failures} certificate(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
