#!/usr/bin/env bash
# The GPU path on a machine with CUDA: its tests, then the benchmark on the GPU.
#   bash scripts/gpu_check.sh [OUT_DIR]     (OUT_DIR gets the logs and the benchmark's JSON)
# CI has no GPU: there tests/test_gpu.py skips itself and this script is not run.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-artifacts/gpu}
mkdir -p "$out"
python3 - <<'PY' || exit 1
import torch
assert torch.cuda.is_available(), "no CUDA device: nothing to check here"
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
PY
status=0
python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tee "$out/test_gpu.log" || status=1
python3 -m bench --device cuda --json "$out/bench_cuda.json" 2>&1 | tee "$out/bench_cuda.log" || status=1
python3 -m bench --app --only stages --device cuda --json "$out/bench_app_cuda.json" 2>&1 \
  | tee "$out/bench_app_cuda.log" || status=1
exit $status
