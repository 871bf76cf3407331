#!/usr/bin/env bash
# One device call for the kernel library: build, GPU tests on the H100, and
# bench/ops_compare.py (pxl bench ops against torch in the same run).
set -uo pipefail
source bench/device_setup.sh
(cd build-dev && ctest --output-on-failure -j 4 -L gpu 2>&1 | tail -15) | tee "$OUT/ctest.txt"
python3 bench/ops_compare.py --pxl build-dev/pxl --json "$OUT/ops_compare.json" 2>&1 | tee "$OUT/ops_compare.txt"
for extra in "$@"; do echo "== $extra"; eval "$extra"; done 2>&1 | tee "$OUT/extra.txt"
