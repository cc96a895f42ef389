#!/usr/bin/env bash
# The GPU checks, in at most 9 minutes on one CUDA device: every kernel compiled for this GPU,
# the optimized and fuzz suites with compiled kernels (nox -s gpu), then specproof/runners/gpu_bench.py.
# Needs a CUDA build of torch and triton in the current environment (nox is used if present).
# Results go to $OUT (or benchmarks/): gpu.json, gpu.md and the logs.
# On a CPU-only machine, `specproof/runners/gpu.sh --device cpu --quick` tries the benchmark part at tiny
# shapes under the Triton interpreter (the compiled parts are skipped there).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-benchmarks}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1

if [[ "${1:-}" == "--device" && "${2:-}" == "cpu" ]]; then
    TRITON_INTERPRET=1 timeout 300 python3 -m specproof.runners.gpu_bench "$@" --out "${TMPDIR:-/tmp}/specproof-gpu.json"
    exit $?
fi

status=0
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device')" || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

cc=$(python3 -c "import torch; a, b = torch.cuda.get_device_capability(); print(10 * a + b)")
timeout 120 python3 -m specproof.optimized.kernels.compile_check --arch "$cc" 2>&1 \
    | tee "$out/gpu-compile.log" || status=1

workers=()
python3 -c "import xdist" 2>/dev/null && workers=(-n 8)
if python3 -c "import nox" 2>/dev/null; then
    tests=(python3 -m nox -s gpu --)
else
    tests=(env SPECPROOF_DEVICE=cuda TRITON_INTERPRET=0 python3 -m pytest tests/optimized tests/fuzz
        tests/stats/test_optimized_decoder.py -m "not slow")
fi
timeout 330 "${tests[@]}" -q -rfE --maxfail=30 "${workers[@]}" 2>&1 | tee "$out/gpu-tests.log" \
    || status=1

timeout 200 python3 -m specproof.runners.gpu_bench --out "$out/gpu.json" --markdown "$out/gpu.md" "$@" 2>&1 \
    | tee "$out/gpu-bench.log" || status=1
exit $status
