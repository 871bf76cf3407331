#!/usr/bin/env bash
# pxl's autodiff against its peers (JAX, Ceres) on the same machine in one
# run: the figures of docs/BENCHMARKS.md, "Autodiff". From the repository's
# root on the device machine, with .gl, deps/dawn and .peers/ceres present:
#
#   bash bench/ad_peers.sh            (do not source bench/device_setup.sh first:
#                                      this script does, after pointing the
#                                      build at the carried CHOLMOD)
#
# Parts, in this order (each guarded: a part that fails or runs past its limit
# is recorded and the rest still runs; a part that would start after the
# deadline, DEADLINE_S = 550 s from the start, is recorded as skipped):
#   setup    unpack .peers/ceres/ceres.tar.xz (bench/peers/build_ceres.sh) to
#            /tmp/peers; build pxl (bench/device_setup.sh, in a subshell) with
#            CHOLMOD found there (CMAKE_PREFIX_PATH, LDFLAGS -rpath-link);
#            an existing build-dev/pxl is used as it is unless PXL_REBUILD=1
#   export   pxl mesh arap --level LS --iterations 1 --export FILE
#            (bench/peers/arap_problem.py writes a stand-in when that fails)
#   eval     residuals + Jacobian of ~1M edge instances: JAX jit(vmap(jacfwd))
#            over EVAL_N random instances (and jacrev) and over level LE's
#            directed edges; pxl mesh arap --level LE --iterations 1 on the GPU
#            (its JSON gives the evaluation seconds); the commands in
#            PXL_AD_EXTRA (';'-separated, optional); Ceres' Jets over EVAL_N
#            random instances on all cores
#   solve    level LS: Ceres (OpenBLAS, all cores), pxl on the GPU; then pxl's
#            CPU path (level LE one iteration, level LS solve); then Ceres for
#            CERES_ATLAS_ITERS (10; 0 skips) iterations with ATLAS, and with
#            OpenBLAS on one thread
# The carried libraries are put in LD_LIBRARY_PATH for Ceres and pxl only,
# never for python.
#
# Output under $OUT: ad_peers.jsonl (one line per run: part, rc, wall seconds,
# the tool's JSON result or, failing that, the tails of its output),
# ad_peers.log (everything printed), ceres_lLS_progress.txt (Ceres' iteration
# table); a short table at the end of stdout. Sizes: ARAP_LEVEL = LS (6),
# EVAL_LEVEL = LE (7), EVAL_N (1048576). Per-part limits: T_CERES (300 s),
# T_PXL (240 s), T_PXL1 (120 s, the one-iteration runs), T_JAX (180 s),
# T_BUILD (300 s).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OUT
J=$OUT/ad_peers.jsonl
LOG=$OUT/ad_peers.log
: > "$J"
: > "$LOG"
NPROC=$(nproc)
T_CERES=${T_CERES:-300}
T_PXL=${T_PXL:-240}
T_PXL1=${T_PXL1:-120}
T_JAX=${T_JAX:-180}
T_BUILD=${T_BUILD:-300}
CERES_ATLAS_ITERS=${CERES_ATLAS_ITERS:-10}
LS=${ARAP_LEVEL:-6}        # the whole-solve level
LE=${EVAL_LEVEL:-7}        # the level whose directed edges JAX and pxl evaluate
NE=${EVAL_N:-1048576}      # random instances for the eval-only peers
NE_L=$(( 60 * 4 ** LE ))   # directed edges at level LE
PY=${PYTHON:-python3}
C=/tmp/peers/ceres
W=/tmp/ad_peers
mkdir -p "$W"

say() { echo "== $*" | tee -a "$LOG"; }
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-550}   # the whole script, under a 600 s limit per command
left() { echo $(( DEADLINE_S - ($(date +%s) - START) )); }
secs() { local ms=$(( ($2 - $1) / 1000000 )); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

# record PART RC WALL FILE: appends one JSON line for the run whose output is
# in FILE (each JSON object line of it becomes a "result"; none: "tail").
record() {
  "$PY" - "$1" "$2" "$3" "$4" >> "$J" 2>>"$LOG" <<'EOF' || echo "{\"part\":\"$1\",\"rc\":$2,\"error\":\"record failed\"}" >> "$J"
import json, sys
part, rc, wall, path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
text = open(path, errors="replace").read()
try:
    err = open(path + ".err", errors="replace").read()
except OSError:
    err = ""
objs = []
try:
    objs = [json.loads(text)]
except ValueError:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                objs.append(json.loads(line))
            except ValueError:
                pass
base = {"part": part, "rc": rc, "wall_s": round(wall, 3)}
if rc in (124, 137):
    base["timed_out"] = True
if not objs:
    print(json.dumps(dict(base, result=None, tail=text[-1500:], stderr_tail=err[-1500:])))
for o in objs:
    print(json.dumps(dict(base, result=o)))
EOF
}

# run PART LIMIT CMD...: runs CMD under a time limit, stdout to a file (and the
# log), stderr to the log; records it.
run() {
  local part=$1 lim=$2
  shift 2
  local f=$W/$part.out t0 t1 rc rem
  rem=$(( $(left) - 5 ))
  if [ "$rem" -lt 15 ]; then
    say "$part: skipped, $rem s left before the deadline"
    echo "{\"part\":\"$part\",\"skipped\":\"deadline\"}" >> "$J"
    return 99
  fi
  [ "$lim" -gt "$rem" ] && lim=$rem
  say "$part: (limit $lim s) $*"
  t0=$(date +%s%N)
  timeout --kill-after=10 "$lim" "$@" > "$f" 2> "$f.err"
  rc=$?
  t1=$(date +%s%N)
  cat "$f" "$f.err" >> "$LOG"
  local wall
  wall=$(secs "$t0" "$t1")
  echo "   rc $rc, $wall s" | tee -a "$LOG"
  record "$part" "$rc" "$wall" "$f"
  return $rc
}

# ---- setup ---------------------------------------------------------------
say "setup: $(date -u +%FT%TZ) $(uname -m) $NPROC cores; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
# The Ceres bundle: /tmp/peers/ceres, CMAKE_PREFIX_PATH and LDFLAGS for pxl's
# build (CHOLMOD), PEERS_LIBS for the Ceres and pxl processes alone.
PEERS_BLAS=openblas
# shellcheck source=bench/peers/ceres_env.sh
source bench/peers/ceres_env.sh >> "$LOG" 2>&1
HAVE_CERES=0
[ -n "$PEERS_CERES" ] && HAVE_CERES=1
LIBS_OB=$PEERS_LIBS
LIBS_AT=${PEERS_LIBS/blas-openblas/blas-atlas}
# These arrays prefix the commands: the carried libraries never reach python.
CERES_OB=(env "LD_LIBRARY_PATH=$LIBS_OB" "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-$NPROC}" "$C/bin/ceres_arap")
CERES_OB1=(env "LD_LIBRARY_PATH=$LIBS_OB" OPENBLAS_NUM_THREADS=1 "$C/bin/ceres_arap")
CERES_AT=(env "LD_LIBRARY_PATH=$LIBS_AT" "$C/bin/ceres_arap")
PXL=(env "LD_LIBRARY_PATH=$LIBS_OB" build-dev/pxl)
if [ "$HAVE_CERES" = 1 ]; then
  { "${CERES_OB[@]}" --version; "${CERES_AT[@]}" --version; echo "PEERS_LIBS=$PEERS_LIBS"; cat "$C/MANIFEST"; } >> "$LOG" 2>&1
fi
say "setup: ceres available: $HAVE_CERES"
echo "{\"part\":\"setup\",\"nproc\":$NPROC,\"ceres\":$HAVE_CERES,\"gpu\":\"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)\"}" >> "$J"

HAVE_PXL=0
if [ -x build-dev/pxl ] && [ "${PXL_REBUILD:-0}" = 0 ]; then
  HAVE_PXL=1
  say "setup: using the existing build-dev/pxl"
else
  say "setup: building pxl (bench/device_setup.sh)"
  t0=$(date +%s)
  lim=$T_BUILD; [ "$lim" -gt $(( $(left) - 60 )) ] && lim=$(( $(left) - 60 ))
  ( timeout "$lim" bash -c 'source bench/device_setup.sh' ) >> "$LOG" 2>&1
  rc=$?
  echo "{\"part\":\"build\",\"rc\":$rc,\"wall_s\":$(( $(date +%s) - t0 ))}" >> "$J"
  [ -x build-dev/pxl ] && HAVE_PXL=1
fi
# device_setup.sh's environment, for this shell (it ran in a subshell above).
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
say "setup: pxl available: $HAVE_PXL"
[ "$HAVE_PXL" = 1 ] && "${PXL[@]}" info >> "$LOG" 2>&1

# ---- export --------------------------------------------------------------
# The problem file Ceres solves (the eval peers use random data).
P=$W/arap$LS.txt
if [ "$HAVE_PXL" = 1 ] && run "export_l$LS" "$T_PXL" "${PXL[@]}" mesh arap --level "$LS" --iterations 1 --backend cpu --json --export "$P" && [ -s "$P" ]; then
  :
else
  say "export_l$LS: no pxl export; bench/peers/arap_problem.py writes the same problem"
  run "export_l${LS}_fallback" 120 "$PY" bench/peers/arap_problem.py "$LS" "$P"
fi
head -2 "$P" >> "$LOG" 2>/dev/null

# ---- the runs, most wanted first ---------------------------------------
export PYTHONUNBUFFERED=1
# Residuals + Jacobian, ~1M instances: JAX, then pxl on the GPU (one LM
# iteration at level LE; its JSON gives the evaluation seconds), Ceres' Jets
# over random instances on all cores.
run jax_eval "$T_JAX" "$PY" bench/peers/jax_arap.py --n "$NE" --reps 30 --mode both
run "jax_eval_l$LE" "$T_JAX" "$PY" bench/peers/jax_arap.py --n "$NE_L" --reps 30 --mode jacfwd
[ "$HAVE_PXL" = 1 ] &&
  run "pxl_iter1_l${LE}_gpu" "$T_PXL1" "${PXL[@]}" mesh arap --level "$LE" --iterations 1 --backend gpu --json
if [ "$HAVE_PXL" = 1 ] && [ -n "${PXL_AD_EXTRA:-}" ]; then
  k=0
  IFS=';' read -ra extra <<< "$PXL_AD_EXTRA"
  for cmd in "${extra[@]}"; do
    k=$((k + 1))
    run "pxl_extra_$k" "$T_PXL" env "LD_LIBRARY_PATH=$LIBS_OB" bash -c "$cmd"
  done
fi
[ "$HAVE_CERES" = 1 ] &&
  run ceres_eval_openblas "$T_CERES" "${CERES_OB[@]}" --eval-random "$NE" --threads "$NPROC" --eval-reps 5

# The whole solve at level LS: Ceres (OpenBLAS, all cores; --progress lines
# go to their own file), pxl on the GPU; then pxl's CPU path.
if [ "$HAVE_CERES" = 1 ]; then
  run "ceres_solve_l${LS}_openblas" "$T_CERES" "${CERES_OB[@]}" "$W/arap$LS.txt" --threads "$NPROC" --eval-reps 3 --progress
  grep -v '^{' "$W/ceres_solve_l${LS}_openblas.out" > "$OUT/ceres_l${LS}_progress.txt" 2>/dev/null
fi
[ "$HAVE_PXL" = 1 ] &&
  run "pxl_solve_l${LS}_gpu" "$T_PXL" "${PXL[@]}" mesh arap --level "$LS" --backend gpu --json
[ "$HAVE_PXL" = 1 ] &&
  run "pxl_iter1_l${LE}_cpu" "$T_PXL1" "${PXL[@]}" mesh arap --level "$LE" --iterations 1 --backend cpu --threads "$NPROC" --json
[ "$HAVE_PXL" = 1 ] &&
  run "pxl_solve_l${LS}_cpu" "$T_PXL" "${PXL[@]}" mesh arap --level "$LS" --backend cpu --threads "$NPROC" --json
# Ceres' per-iteration cost with ATLAS and with one thread, for the record.
if [ "$HAVE_CERES" = 1 ] && [ "$CERES_ATLAS_ITERS" -gt 0 ]; then
  run "ceres_solve_l${LS}_atlas_${CERES_ATLAS_ITERS}it" "$T_CERES" "${CERES_AT[@]}" "$W/arap$LS.txt" \
    --threads "$NPROC" --eval-reps 1 --max-iter "$CERES_ATLAS_ITERS"
  run "ceres_solve_l${LS}_openblas_1thread_${CERES_ATLAS_ITERS}it" "$T_CERES" "${CERES_OB1[@]}" "$W/arap$LS.txt" \
    --threads 1 --eval-reps 1 --max-iter "$CERES_ATLAS_ITERS"
fi

say "done: $(date -u +%FT%TZ)"
# A short table last (the reply carries the end of the output).
"$PY" - "$J" <<'EOF' 2>/dev/null
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d.get("result") or {}
    keys = ["iterations", "initial_cost", "final_cost", "termination", "total_s", "linear_solver_s", "eval_s",
            "s_per_eval", "instances_per_s", "seconds"]
    brief = {k: r[k] for k in keys if k in r}
    print(f'{d["part"]:<34} rc={d.get("rc", "-")!s:<4} wall={d.get("wall_s", "-")!s:<9} {json.dumps(brief)[:300]}')
EOF
exit 0
