#!/usr/bin/env bash
# The one device call that produces the figures in docs/BENCHMARKS.md for the
# kernel library and pxVM: pxl bench ops against torch (bench/ops_compare.py),
# then bench/device_vm.sh (GPU tests, the chained-MATMUL pixel program on both
# interpreters, Pixel-LLM tokens/s on both backends). Results land in $OUT.
set -uo pipefail
source bench/device_setup.sh
python3 bench/ops_compare.py --pxl build-dev/pxl --json "$OUT/ops_compare.json" 2>&1 | tee "$OUT/ops_compare.txt"
bash bench/device_vm.sh "24 64"
