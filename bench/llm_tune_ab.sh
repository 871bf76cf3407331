#!/usr/bin/env bash
# pxl's GPU decode and prefill under several tuning strings, alternating in one
# run on the H100 machine: an A/B comparison of kernel choices on the same
# shape-true models. From the repository's root, with .gl, deps/dawn and the
# peer stage carried as for bench/llm_peers.sh:
#
#   TUNES="gpu_q8=0;gpu_q8=1" ROUNDS=2 bash bench/llm_tune_ab.sh PRESET...
#
# Builds pxl (bench/device_setup.sh), synthesizes each PRESET's Q4_K_M file
# (../shared/peers run.sh models), then ROUNDS times, for each model and each
# tuning string of TUNES (';'-separated, "" for the defaults):
# PXL_TUNE=<string> pxl bench llm --backend gpu --pp PP --tg TG --reps REPS
# (PP 512, TG 128, REPS 3 unless set; ARGS adds options, such as --profile).
# OPS, if set, is passed to one `pxl bench ops --only OPS --reps 5` per tuning
# string first. nvidia-smi samples the GPU's utilization and clocks every
# 200 ms from the start (the build leaves the GPU idle: anything it shows
# then is another process's) into $OUT/smi.csv. Output: $OUT/llm_ab.txt.
# Steps past DEADLINE_S (540 s) are skipped and said so.
set -u
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-540}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
P=${PEERS:-/root/peers}
LOG="$OUT/llm_ab.txt"
source bench/steps.sh   # left, step
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,clocks.sm,clocks.mem,power.draw \
  --format=csv,noheader -lms 200 >"$OUT/smi.csv" 2>&1 &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT
presets=("$@"); [ ${#presets[@]} -gt 0 ] || presets=(tinyllama-1.1b tiny5)
IFS=';' read -r -a tunes <<<"${TUNES:-}"
[ ${#tunes[@]} -gt 0 ] || tunes=("")
(source bench/device_setup.sh) >"$OUT/build.log" 2>&1 || { echo "pxl build failed" >>"$LOG"; exit 1; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader >>"$LOG"
if [ -n "${OPS:-}" ]; then
  for t in "${tunes[@]}"; do
    PXL_TUNE="$t" step "pxl bench ops --only $OPS [$t]" 30 build-dev/pxl bench ops --only "$OPS" --reps 5
  done
fi
mkdir -p "$P/m"
stage=.peers/stage.tar.xz; [ -f .peers/stage-lite.tar.xz ] && stage=.peers/stage-lite.tar.xz
tar xJf "$stage" -C "$P" || { echo "no peer stage ($stage)" >>"$LOG"; exit 1; }
step models 90 bash .peers/tools/llamacpp/run.sh models "${presets[@]}"
for r in $(seq "${ROUNDS:-2}"); do
  for p in "${presets[@]}"; do
    for t in "${tunes[@]}"; do
      PXL_TUNE="$t" step "round $r: $p [$t]" 30 build-dev/pxl bench llm -m "$P/m/$p-q4km.gguf" --backend gpu \
        --pp "${PP:-512}" --tg "${TG:-128}" --reps "${REPS:-3}" ${ARGS:-}
    done
  done
done
echo "== done in $(( $(date +%s) - START )) s" >>"$LOG"
cat "$LOG"
