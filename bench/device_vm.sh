#!/usr/bin/env bash
# One device call for the pxVM figures (docs/BENCHMARKS.md): builds, runs the
# GPU tests, bench/vm_matmul.sh at several chain lengths, and Pixel-LLM
# tokens/s on both backends. Results in $OUT.
#   usage (on the device machine): bash bench/device_vm.sh ["N ..."]   (default: "1 24 64")
set -uo pipefail
source bench/device_setup.sh
build-dev/pxl info | head -6 | tee "$OUT/info.txt"
(cd build-dev && ctest -j 4 -L gpu 2>&1 | grep -E "tests passed|Failed|\*\*\*") | tee "$OUT/ctest.txt"
for n in "${@:-1 24 64}"; do
  for m in $n; do
    bash bench/vm_matmul.sh build-dev/pxl "$m" 2>&1 | grep -v '^Warning\|^ - \|^    at\|^$' | tee -a "$OUT/vm_matmul.txt"
  done
done
for b in cpu gpu; do
  build-dev/pxl generate --backend $b --seed 7 --tokens 2000 --json > "$OUT/generate_$b.json" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], {k: v for k, v in d.items() if k != 'text'})" "$OUT/generate_$b.json" $b
done 2>&1 | tee "$OUT/generate.txt"
cmp <(python3 -c "import json;print(json.load(open('$OUT/generate_cpu.json'))['text'])") \
    <(python3 -c "import json;print(json.load(open('$OUT/generate_gpu.json'))['text'])") && echo "same text on cpu and gpu" | tee -a "$OUT/generate.txt"
# host-side cost per op call (recording), with the GPU times, for the record
build-dev/pxl bench ops --reps 5 2>/dev/null | tee "$OUT/bench_ops.txt"
