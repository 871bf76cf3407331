#!/usr/bin/env bash
# pxl's GGUF runtime against llama.cpp (its CUDA build and its npm Vulkan
# library) on the same files, in one run on the H100 machine: the figures of
# docs/BENCHMARKS.md, "LLM speed on the H100". From the repository's root, with
# .gl, deps/dawn and the llama.cpp peer stage carried (../shared/peers: stage.sh
# makes .peers/stage.tar.xz; a smaller .peers/stage-lite.tar.xz is used when
# present) and .peers/tools holding ../shared/peers/llamacpp:
#
#   bash bench/llm_peers.sh PRESET...   (default: tinyllama-1.1b tiny5)
#
# Steps: build pxl (bench/device_setup.sh), unpack the stage to $PEERS
# (/root/peers), synthesize each PRESET's shape-true model with random weights
# and quantize it (Q4_K_M, Q8_0; run.sh models), build llama-bench for sm_90
# (run.sh cuda-build, about 4 to 6 minutes; NO_CUDA=1 skips it), then for each model
# file (FILES, default PRESET-q4km) pxl bench llm --backend gpu, llama.cpp
# Vulkan (after one short untimed run of it) and llama.cpp CUDA, pp512 and
# tg128 (5 reps for the peers, 3 for pxl), one after the other; PXL_TUNES
# ("a;b", tuning strings) adds a pxl run per string after the default one;
# PXL_ARGS adds options to every pxl run (e.g. --greedy). Every step is
# guarded by a deadline (DEADLINE_S, 570 s from the start): a step that would
# start after it is skipped and said so.
# PHASE=prepare stops after the builds and models, PHASE=run starts at the
# timings (the same machine, still warm: two device calls within 30 s of each
# other, when the CUDA build leaves too little of one call's 10 minutes).
# Output: $OUT/llm_peers.txt (and the step logs under $OUT), ending in the
# table of pxl's ratios against both peers (bench/peers_summary.py).
set -u
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-570}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P=${PEERS:-/root/peers}
LOG="$OUT/llm_peers.txt"
source bench/steps.sh   # left, step
presets=("$@"); [ ${#presets[@]} -gt 0 ] || presets=(tinyllama-1.1b tiny5)
PHASE=${PHASE:-all}
if [ "$PHASE" != run ]; then
  (source bench/device_setup.sh) >"$OUT/build.log" 2>&1 || { echo "pxl build failed" >>"$LOG"; exit 1; }
  mkdir -p "$P/m"
  stage=.peers/stage.tar.xz; [ -f .peers/stage-lite.tar.xz ] && stage=.peers/stage-lite.tar.xz
  tar xJf "$stage" -C "$P" || { echo "no peer stage ($stage)" >>"$LOG"; exit 1; }
  step models 60 bash .peers/tools/llamacpp/run.sh models "${presets[@]}"
  [ "${NO_CUDA:-0}" = 1 ] || step cuda-build 200 bash .peers/tools/llamacpp/run.sh cuda-build
  if [ "$PHASE" = prepare ]; then echo "== prepared in $(( $(date +%s) - START )) s" >>"$LOG"; cat "$LOG"; exit 0; fi
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >>"$LOG"
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
files=${FILES:-}
[ -n "$files" ] || for p in "${presets[@]}"; do files="$files $p-q4km"; done
for f in $files; do
  m="$P/m/$f.gguf"
  step "pxl $f" 40 build-dev/pxl bench llm -m "$m" --backend gpu --pp 512 --tg 128 --reps 3 ${PXL_ARGS:-}
  IFS=';' read -r -a tunes <<<"${PXL_TUNES:-}"
  for t in "${tunes[@]}"; do
    PXL_TUNE="$t" step "pxl $f [$t]" 40 build-dev/pxl bench llm -m "$m" --backend gpu --pp 512 --tg 128 --reps 3 \
      ${PXL_ARGS:-}
  done
  # llama.cpp's Vulkan build is slower in its first process on a file: on an H200 its second round of
  # one call prefilled Llama-3.2-1B F16 3.7x faster than its first (docs/BENCHMARKS.md, "Split K in
  # the f32, f16 and bf16 GEMM"); so one short untimed run first, its output kept apart from $LOG
  [ "$(left)" -ge 80 ] && timeout 40 "$P/llbench" -L "$P/lib-vulkan" -m "$m" -p 512 -n 16 -r 1 \
    >>"$OUT/vulkan_warmup.log" 2>&1
  step "llama.cpp vulkan $f" 40 bash .peers/tools/llamacpp/run.sh vulkan "$m"
  [ "${NO_CUDA:-0}" = 1 ] || step "llama.cpp cuda $f" 30 bash .peers/tools/llamacpp/run.sh cuda "$m"
done
[ -n "${PROFILE:-}" ] && step "pxl profile $PROFILE" 40 build-dev/pxl bench llm -m "$P/m/$PROFILE.gguf" --backend gpu \
  --pp 512 --tg 128 --reps 2 --profile ${PXL_ARGS:-}
echo "== done in $(( $(date +%s) - START )) s" >>"$LOG"
echo "== ratios (bench/peers_summary.py)" >>"$LOG"
python3 bench/peers_summary.py "$LOG" >>"$LOG" 2>&1
cat "$LOG"
