#!/usr/bin/env bash
# The one device call that produces the figures in docs/BENCHMARKS.md for the
# kernel library and pxVM: GPU tests on the H100, pxl bench ops against torch,
# the chained-MATMUL pixel program on both interpreters, and Pixel-LLM
# tokens/s on both backends. Results land in $OUT.
set -uo pipefail
source bench/device_setup.sh
build-dev/pxl info | head -6 | tee "$OUT/info.txt"
(cd build-dev && ctest -j 4 -L gpu 2>&1 | tail -8) | tee "$OUT/ctest.txt"
python3 bench/ops_compare.py --pxl build-dev/pxl --json "$OUT/ops_compare.json" 2>&1 | tee "$OUT/ops_compare.txt"
bash bench/vm_matmul.sh build-dev/pxl 24 2>&1 | grep -v '^Warning\|^ - \|^    at' | tee "$OUT/vm_matmul.txt"
for b in cpu gpu; do
  build-dev/pxl generate --backend $b --seed 7 --tokens 2000 --json > "$OUT/generate_$b.json" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], {k: v for k, v in d.items() if k != 'text'})" "$OUT/generate_$b.json" $b
done 2>&1 | tee "$OUT/generate.txt"
cmp <(python3 -c "import json;print(json.load(open('$OUT/generate_cpu.json'))['text'])") \
    <(python3 -c "import json;print(json.load(open('$OUT/generate_gpu.json'))['text'])") && echo "same text on cpu and gpu" | tee -a "$OUT/generate.txt"
