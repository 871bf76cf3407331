#!/usr/bin/env bash
# pxVM issue benchmark: a program of chained int8 MATMULs of 2048 x 2048, run
# by the CPU interpreter (all cores) and by the GPU interpreter, from the same
# .pxi; checks that both final images are identical and prints the ratio.
# The chain is y0 = x.w, y1 = y0.w, y0 = y1.w, ... (two activation tensors in
# turn), so the image holds four 2048 x 2048 tensors whatever the length.
# Times are `pxl vm run --json` seconds (interpreter only: decode, upload,
# all dispatches, download; the PNG load/save is outside).
#   usage: bench/vm_matmul.sh [PXL] [N_MATMULS]
set -euo pipefail
PXL=${1:-build/pxl}
N=${2:-24}
D=2048
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$N" "$D" <<'PY'
import os, random, sys
work, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
rows = d * d // 4 // d + 1          # rows a d x d int8 tensor spans (header + data)
with open(os.path.join(work, "w.bin"), "wb") as f:
    f.write(bytes(random.randrange(256) for _ in range(d * d)))
with open(os.path.join(work, "x.bin"), "wb") as f:
    f.write(bytes(random.randrange(256) for _ in range(d * d)))
lines = [f".image {d} {1 + rows * 4 + 1}", ".version 1"]
row = 1
lines.append(f".tensor w {row} int8 {d} {d}"); row += rows
lines.append(f".tensor x {row} int8 {d} {d}"); row += rows
for i in range(2):
    lines.append(f".tensor y{i} {row} int8 {d} {d} mult=1 shift=13"); row += rows
prev = "x"
for i in range(n):
    lines.append(f"matmul y{i % 2} {prev} w 0"); prev = f"y{i % 2}"
lines.append("halt")
lines.append(".data w file:w.bin")
lines.append(".data x file:x.bin")
open(os.path.join(work, "prog.txt"), "w").write("\n".join(lines) + "\n")
PY
"$PXL" vm asm "$work/prog.txt" -o "$work/prog.pxi" >/dev/null
"$PXL" vm validate "$work/prog.pxi"
for b in gpu cpu gpu; do
  "$PXL" vm run "$work/prog.pxi" --backend $b -o "$work/out_$b.pxi" --json > "$work/$b.json"
  echo "$b: $(cat "$work/$b.json")"
done
cmp "$work/out_cpu.pxi" "$work/out_gpu.pxi" && echo "images identical"
python3 - "$work" "$N" "$D" <<'PY'
import json, sys
work, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cpu = json.load(open(f"{work}/cpu.json"))["seconds"]
gpu = json.load(open(f"{work}/gpu.json"))["seconds"]
ops = 2 * d ** 3 * n
print(f"{n} chained int8 MATMULs {d}^3: cpu {cpu:.3f} s ({ops / cpu / 1e12:.2f} TOPS), "
      f"gpu {gpu:.4f} s ({ops / gpu / 1e12:.2f} TOPS), gpu/cpu speed-up {cpu / gpu:.1f}x")
PY
