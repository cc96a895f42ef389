#!/usr/bin/env bash
# The GPU checks of chain verification, in at most 8 minutes on one CUDA device:
# the optimized test suite with compiled kernels (nox -s gpu), then bench/gpu.py
# (Triton kernel and torch backend, fraction of the measured copy bandwidth).
# Needs a CUDA build of torch and triton in the current environment.
# On a CPU-only machine, `bench/gpu.sh --device cpu --quick` tries the benchmark part at tiny
# shapes under the Triton interpreter (the test suite part is skipped there).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--device" && "${2:-}" == "cpu" ]]; then
    TRITON_INTERPRET=1 timeout 300 python3 bench/gpu.py "$@" --out "${TMPDIR:-/tmp}/specproof-gpu.json"
    exit 0
fi

python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device')"
nvidia-smi --query-gpu=name,memory.total --format=csv || true
timeout 300 python3 -m nox -s gpu -- -q -x
timeout 180 python3 bench/gpu.py "$@"
