#!/usr/bin/env bash
# pxVM issue benchmark: a program of chained int8 MATMULs of 2048 x 2048, run
# by the CPU interpreter (all cores) and by the GPU interpreter, from the same
# .pxi; checks that both final images are identical and prints the ratio.
# The chain is y0 = x.w, y1 = y0.w, y0 = y1.w, ... (two activation tensors in
# turn), so the image holds four 2048 x 2048 tensors whatever the length.
# Times are `pxl vm run --json` seconds of pxl_vm_run (decode, pipeline
# creation, upload, all dispatches, download; opening the device and the PNG
# load/save are outside), with the phases of each run. It reports the first
# run of a process (GPU: with the pipeline cache on disk filled, and the
# first run ever, with it empty) and the best later run of the same process.
#   usage: bench/vm_matmul.sh [PXL] [N_MATMULS]      env: D (2048), REPEAT (5)
set -euo pipefail
PXL=${1:-build/pxl}
N=${2:-24}
D=${D:-2048}
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
REPEAT=${REPEAT:-5}
# 1. GPU, first run ever: an empty pipeline cache, the driver's own shader cache off
PXL_CACHE_DIR="$work/cache" __GL_SHADER_DISK_CACHE=0 \
  "$PXL" vm run "$work/prog.pxi" --backend gpu -o "$work/out_gpu.pxi" --json > "$work/gpu_first.json"
# 2. GPU, a new process with the pipeline cache filled, then REPEAT-1 runs in that process
PXL_CACHE_DIR="$work/cache" "$PXL" vm run "$work/prog.pxi" --backend gpu --repeat "$REPEAT" --json > "$work/gpu.json"
# 3. CPU, the same way (the CPU interpreter has no compile; later runs find warm threads)
"$PXL" vm run "$work/prog.pxi" --backend cpu -o "$work/out_cpu.pxi" --repeat 3 --json > "$work/cpu.json"
cmp "$work/out_cpu.pxi" "$work/out_gpu.pxi" && echo "images identical"
python3 - "$work" "$N" "$D" <<'PY'
import json, sys
work, n, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
first = json.load(open(f"{work}/gpu_first.json"))
gpu = json.load(open(f"{work}/gpu.json"))
cpu = json.load(open(f"{work}/cpu.json"))
print(f"gpu: {gpu['device']}; cpu: {cpu['threads']} threads")
def show(name, r):
    mb = lambda b: b / 1e6
    print(f"  {name:<28} {r['seconds']:.4f} s = decode {r['decode_s']:.4f} + compile {r['compile_s']:.4f} + "
          f"upload {r['upload_s']:.4f} ({mb(r['upload_bytes']):.1f} MB) + execute {r['execute_s']:.4f} + "
          f"download {r['download_s']:.4f} ({mb(r['download_bytes']):.1f} MB)")
gs = lambda j: j.get("gpu_stats", {})
print(f"  pipelines: first run ever: module {gs(first).get('shader_module_s', 0):.4f} s + pipeline "
      f"{gs(first).get('pipeline_s', 0):.4f} s; cached: module {gs(gpu).get('shader_module_s', 0):.4f} s + "
      f"pipeline {gs(gpu).get('pipeline_s', 0):.4f} s ({gs(gpu).get('disk_cache_hits', 0)} disk cache hits)")
show("gpu, first run ever", first["runs"][0])
show("gpu, new process, cached", gpu["runs"][0])
for i, r in enumerate(gpu["runs"][1:], 2):
    show(f"gpu, run {i} of the process", r)
for i, r in enumerate(cpu["runs"], 1):
    show(f"cpu, run {i} of the process", r)
ops = 2 * d ** 3 * n
c_cold, c_warm = cpu["runs"][0]["seconds"], min(r["seconds"] for r in cpu["runs"][1:])
g_first, g_cold = first["runs"][0]["seconds"], gpu["runs"][0]["seconds"]
g_warm = min(r["seconds"] for r in gpu["runs"][1:]) if len(gpu["runs"]) > 1 else g_cold
print(f"{n} chained int8 MATMULs {d}^3 ({ops / 1e12:.2f} T int ops):")
print(f"  first run of a process: cpu {c_cold:.3f} s, gpu {g_cold:.4f} s (first ever {g_first:.4f} s): "
      f"speed-up {c_cold / g_cold:.1f}x ({c_cold / g_first:.1f}x)")
print(f"  later runs (best):      cpu {c_warm:.3f} s ({ops / c_warm / 1e12:.2f} TOPS), "
      f"gpu {g_warm:.4f} s ({ops / g_warm / 1e12:.2f} TOPS): speed-up {c_warm / g_warm:.1f}x")
PY
