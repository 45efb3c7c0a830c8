#!/usr/bin/env bash
# The GPU path on a machine with CUDA: its tests, then the benchmark on the GPU.
#   bash scripts/gpu_check.sh [OUT_DIR]     (OUT_DIR gets the logs and the benchmark's JSON)
# CI has no GPU: there tests/test_gpu.py skips itself and this script is not run.
# A GPU image with torch but not this project's other packages: carry them as wheels for its Python
# (`pip download --no-deps --only-binary=:all: --python-version 3.12 ...` of requirements.txt's pins and
# what streamlit and kaleido need), `pip install --no-index --no-deps --target /tmp/site wheels/*.whl`,
# then PYTHONPATH=/tmp/site bash scripts/gpu_check.sh.
# Each step has a time limit, so that the whole check ends in about eight minutes on one H100.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-artifacts/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 - <<'PY' || exit 1
import torch
assert torch.cuda.is_available(), "no CUDA device: nothing to check here"
print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
PY
status=0
step() {  # step NAME SECONDS COMMAND...: runs it with a limit, its log in $out/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1; local rc=$?
  tail -n 25 "$out/$name.log"
  [ $rc -eq 0 ] || { echo "!! $name exited $rc"; status=1; }
}
# the GPU tests, then the app's numbers and the trace's replays with CUDA present (Chromium's tests skip)
step tests 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_precision.py \
  tests/test_layers.py tests/test_mutants_model.py tests/test_analysis.py tests/test_projected_record.py \
  tests/test_views.py tests/test_view_cache.py tests/test_app_fragment.py tests/test_app.py
step bench_cuda 150 python3 -m bench --device cuda --configs app,base --sizes 8,32,128,512 --budget 0.3 \
  --only stacks,traced,memory,gflops --json "$out/bench_cuda.json"
step bench_app_cuda 120 python3 -m bench --app --only stages,payload --device cuda --configs app,base \
  --sizes 32,512 --budget 0.3 --json "$out/bench_app_cuda.json"
exit $status
