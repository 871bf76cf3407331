#!/usr/bin/env bash
# One device call for the kernel library: build, GPU tests on the H100, and
# bench/ops_compare.py (pxl bench ops against torch in the same run).
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-dev -j 16 >/dev/null || exit 1
(cd build-dev && ctest --output-on-failure -j 4 -L gpu 2>&1 | tail -15) | tee "$OUT/ctest.txt"
python3 bench/ops_compare.py --pxl build-dev/pxl --json "$OUT/ops_compare.json" 2>&1 | tee "$OUT/ops_compare.txt"
for extra in "$@"; do echo "== $extra"; eval "$extra"; done 2>&1 | tee "$OUT/extra.txt"
