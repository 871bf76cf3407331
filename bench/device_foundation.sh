#!/usr/bin/env bash
# One device call for the foundation issue: build, pxl info, GPU tests, the
# dot benchmark (with launch-shape variants) and the torch baseline, all on
# the same GPU in the same run. Results land in $OUT.
set -uo pipefail
source bench/device_setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/nvidia-smi.txt"
build-dev/pxl info | tee "$OUT/info.txt"
build-dev/pxl info --json > "$OUT/info.json"
(cd build-dev && ctest --output-on-failure -j 4 2>&1 | tail -25) | tee "$OUT/ctest.txt"
# baseline, then pxl, then the baseline again: the ratio uses the better torch figure
python3 bench/dot_torch.py --min 20 --max 28 > "$OUT/torch_dot.json"
build-dev/pxl bench dot --min 10 --max 28 --reps 7 | tee "$OUT/pxl_dot.txt"
build-dev/pxl bench dot --min 20 --max 28 --reps 7 --json > "$OUT/pxl_dot.json"
python3 bench/dot_torch.py --min 20 --max 28 >> "$OUT/torch_dot.json"
# optional launch-shape variants: bench/device_foundation.sh 256,528 512,1024 ...
for tune in "$@"; do
  echo "== PXL_TUNE=dot=$tune"
  PXL_TUNE="dot=$tune" build-dev/pxl bench dot --min 24 --max 28 --reps 7 --no-cpu
done 2>&1 | tee "$OUT/tune.txt"
