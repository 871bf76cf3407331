#!/usr/bin/env bash
# One device call for the pxVM chained-MATMUL figures (docs/BENCHMARKS.md):
# builds, then bench/vm_matmul.sh at several chain lengths. Results in $OUT.
#   usage (on the device machine): bash bench/device_vm.sh [N ...]   (default: 1 24 64)
set -uo pipefail
source bench/device_setup.sh
build-dev/pxl info | head -6 | tee "$OUT/info.txt"
for t in test_gpu test_vm_gpu; do build-dev/tests/$t 2>&1 | tail -1; done | tee "$OUT/tests.txt"
for n in "${@:-1 24 64}"; do
  for m in $n; do
    bash bench/vm_matmul.sh build-dev/pxl "$m" 2>&1 | grep -v '^Warning\|^ - \|^    at\|^$' | tee -a "$OUT/vm_matmul.txt"
  done
done
