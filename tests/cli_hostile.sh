#!/usr/bin/env bash
# The pxl CLI against hostile inputs and outputs (one ctest per case, see
# tests/CMakeLists.txt): write errors on stdout, -o / --in-place targets that
# are not plain files, FIFOs and devices as inputs, unbounded inputs, JSON
# with non-UTF-8 bytes, JSON error objects. Every pxl call runs under
# `timeout`, so a hang is a failure, not a stuck test.
#
#   cli_hostile.sh PXL SOURCE_DIR WORK_DIR CASE
set -u
PXL=$1
SRC=$2
WORK=$3
CASE=$4
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
fails=0
fail() {
  echo "FAIL ($CASE): $*" >&2
  fails=$((fails + 1))
}
pxl() { timeout 20 "$PXL" "$@"; }
# strict JSON: bytes must be UTF-8 (Python's stdin would otherwise pass bad bytes through)
json_ok() { python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))'; }
json_error_object() {
  python3 -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); sys.exit(0 if d.get("ok") is False and d.get("error") else 1)'
}
mode_of() { stat -c %a "$1"; }

TXT=$SRC/tests/data/vm/v1_small.txt
pxl vm asm "$TXT" -o in.pxi >/dev/null || { echo "setup: vm asm failed" >&2; exit 1; }

case $CASE in
stdout_full)
  # every output to stdout is checked, through the final flush
  while IFS= read -r cmd; do
    # shellcheck disable=SC2086
    pxl $cmd >/dev/full 2>err.txt
    rc=$?
    [ $rc -ne 0 ] || fail "'pxl $cmd > /dev/full' exited 0"
    grep -q "pxl: writing to stdout: No space left on device" err.txt || fail "'pxl $cmd > /dev/full' said: $(cat err.txt)"
  done <<EOF
vm disasm $SRC/models/pixel-llm.pxi
vm disasm in.pxi --json
vm validate in.pxi
vm validate in.pxi --json
vm run in.pxi --backend cpu
vm run in.pxi --backend cpu --json --trace
vm asm $TXT -o out.pxi --json
vm show in.pxi -o show.png --json
info --backend cpu
info --backend cpu --json
bench dot --backend cpu --max 10 --reps 1 --json
--help
--version
vm --help
EOF
  # and a closed stdout
  pxl vm validate in.pxi >&- 2>err.txt && fail "validate with stdout closed exited 0"
  grep -q "writing to stdout" err.txt || fail "closed stdout: $(cat err.txt)"
  ;;

out_mode)
  # an existing file keeps its permission bits; a new file gets 0666 & ~umask
  umask 022
  for sub in "vm disasm in.pxi -o" "vm asm $TXT -o" "vm run in.pxi --backend cpu -o" "vm show in.pxi -o"; do
    rm -f t.out
    # shellcheck disable=SC2086
    pxl $sub t.out >/dev/null || fail "pxl $sub t.out failed"
    [ "$(mode_of t.out)" = 644 ] || fail "new file from '$sub' has mode $(mode_of t.out)"
    chmod 600 t.out
    # shellcheck disable=SC2086
    pxl $sub t.out >/dev/null || fail "pxl $sub t.out (existing) failed"
    [ "$(mode_of t.out)" = 600 ] || fail "0600 file rewritten by '$sub' has mode $(mode_of t.out)"
  done
  cp in.pxi inplace.pxi
  chmod 640 inplace.pxi
  pxl vm run inplace.pxi --backend cpu --in-place >/dev/null || fail "--in-place failed"
  [ "$(mode_of inplace.pxi)" = 640 ] || fail "--in-place changed 0640 to $(mode_of inplace.pxi)"
  ;;

out_readonly)
  # a read-only file is refused (even for root) and left as it was
  for sub in "vm disasm in.pxi -o" "vm asm $TXT -o" "vm run in.pxi --backend cpu -o" "vm show in.pxi -o"; do
    echo keep >ro.out
    chmod 444 ro.out
    # shellcheck disable=SC2086
    pxl $sub ro.out >/dev/null 2>err.txt && fail "'$sub' wrote over a 0444 file"
    grep -q "is read-only" err.txt || fail "'$sub' on a 0444 file said: $(cat err.txt)"
    [ "$(cat ro.out)" = keep ] || fail "'$sub' changed a 0444 file"
    [ "$(mode_of ro.out)" = 444 ] || fail "'$sub' changed a 0444 file's mode"
    rm -f ro.out
  done
  cp in.pxi ro.pxi
  chmod 444 ro.pxi
  pxl vm run ro.pxi --backend cpu --in-place >/dev/null 2>err.txt && fail "--in-place wrote over a 0444 file"
  grep -q "is read-only" err.txt || fail "--in-place on a 0444 file said: $(cat err.txt)"
  cmp -s in.pxi ro.pxi || fail "--in-place changed a 0444 file"
  ;;

out_symlink)
  # a symlink is followed: its target gets the bytes, the link stays a link
  mkdir real
  echo old >real/target.txt
  ln -s real/target.txt link.txt
  pxl vm disasm in.pxi -o link.txt >/dev/null || fail "disasm -o through a symlink failed"
  [ -L link.txt ] || fail "the symlink was replaced by a file"
  grep -q "^.image 32 16" real/target.txt || fail "the symlink's target did not get the text"
  ln -s real/target.pxi link.pxi
  pxl vm run in.pxi --backend cpu -o link.pxi >/dev/null 2>err.txt
  rc=$?
  [ -L link.pxi ] && [ $rc -ne 0 ] || fail "run -o through a symlink that resolves nowhere was not refused"
  grep -q "symbolic link that does not resolve" err.txt || fail "dangling symlink: $(cat err.txt)"
  ln -sf target.txt real/link2.txt
  ln -s real/link2.txt chain.txt
  pxl vm disasm in.pxi -o chain.txt >/dev/null || fail "disasm -o through two symlinks failed"
  [ -L chain.txt ] && [ -L real/link2.txt ] || fail "a link of the chain was replaced"
  ;;

out_nonregular)
  # FIFOs and directories (and, for root, devices) are refused at once and left alone
  mkfifo fifo.out
  mkdir dir.out
  for t in fifo.out dir.out; do
    for sub in "vm disasm in.pxi -o" "vm asm $TXT -o" "vm run in.pxi --backend cpu -o" "vm show in.pxi -o"; do
      # shellcheck disable=SC2086
      pxl $sub $t >/dev/null 2>err.txt
      rc=$?
      [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "'$sub $t' exited $rc"
      grep -q "not a regular file" err.txt || fail "'$sub $t' said: $(cat err.txt)"
    done
  done
  [ -p fifo.out ] || fail "the FIFO was replaced"
  [ -d dir.out ] || fail "the directory was replaced"
  ;;

out_hardlink)
  # a file with two links is refused: replacing it would split them
  echo old >a.txt
  ln a.txt b.txt
  pxl vm disasm in.pxi -o a.txt >/dev/null 2>err.txt && fail "disasm -o wrote a hard-linked file"
  grep -q "2 hard links" err.txt || fail "hard link: $(cat err.txt)"
  [ "$(cat b.txt)" = old ] && [ "$(cat a.txt)" = old ] || fail "a hard-linked file changed"
  ;;

out_atomic)
  # a write that fails half way (file size limit) keeps the old file, leaves no temporary
  echo old >d.txt
  (
    trap '' XFSZ
    ulimit -f 8
    timeout 20 "$PXL" vm disasm "$SRC/models/pixel-llm.pxi" -o d.txt
  ) >/dev/null 2>err.txt && fail "disasm -o over the file size limit exited 0"
  grep -q "the old file is unchanged" err.txt || fail "disasm -o over the limit said: $(cat err.txt)"
  [ "$(cat d.txt)" = old ] || fail "disasm -o left a partial file"
  n=$(find . -name '*.tmp' | wc -l)
  [ "$n" = 0 ] || fail "$n temporary files left"
  (
    trap '' XFSZ
    ulimit -f 8
    timeout 20 "$PXL" vm show in.pxi --zoom 64 -o in.pxi.png
  ) >/dev/null 2>&1 && fail "show over the file size limit exited 0"
  [ ! -e in.pxi.png ] || fail "a failed show left a file"
  ;;

fifo_inputs)
  # a FIFO (or directory, or device) as an input fails at once, saying what it is
  mkfifo in.fifo
  mkdir in.dir
  for sub in "vm run" "vm validate" "vm disasm" "vm compare" "vm show -o s.png" "vm asm -o a.pxi"; do
    for inp in in.fifo in.dir /dev/zero; do
      # shellcheck disable=SC2086
      pxl $sub $inp >err.txt 2>&1 # (validate says why on stdout)
      rc=$?
      [ $rc -ne 124 ] || fail "'pxl $sub $inp' hangs"
      [ $rc -ne 0 ] || fail "'pxl $sub $inp' exited 0"
      grep -Eq "is (a FIFO|a directory|a character device), not a regular file|needs a GPU" err.txt ||
        fail "'pxl $sub $inp' said: $(cat err.txt)"
    done
  done
  ;;

text_cap)
  # text input is capped (64 MiB) and the reason is said
  head -c $((64 * 1024 * 1024 + 1)) /dev/zero | pxl vm asm - -o z.pxi >/dev/null 2>err.txt && fail "70 MB of stdin accepted"
  grep -q "<stdin> is too large: over the 67108864-byte limit" err.txt || fail "stdin over the cap said: $(cat err.txt)"
  head -c $((64 * 1024 * 1024 + 1)) /dev/zero >big.txt
  pxl vm asm big.txt -o z.pxi >/dev/null 2>err.txt && fail "a 64 MiB + 1 file accepted"
  grep -q "big.txt is too large" err.txt || fail "file over the cap said: $(cat err.txt)"
  pxl vm asm - -o z.pxi </dev/null >/dev/null 2>err.txt && fail "empty stdin assembled"
  grep -q "<stdin>" err.txt || fail "empty stdin said: $(cat err.txt)"
  ;;

json_non_utf8)
  # paths with bytes that are not UTF-8 (and control characters) still give valid JSON
  bad=$(printf 'bad\xff\xfe\xed\xa0\x80\xc0\xaf\x01\x7f"\\name')
  cp in.pxi "$bad.pxi"
  for sub in "vm validate" "vm run --backend cpu" "vm disasm" "vm asm" "vm show"; do
    case $sub in
    "vm asm") args=("$TXT" -o "$bad.pxi") ;;
    "vm show") args=("$bad.pxi" -o "$bad.png") ;;
    *) args=("$bad.pxi") ;;
    esac
    # shellcheck disable=SC2086
    pxl $sub --json "${args[@]}" >out.json 2>/dev/null || fail "'$sub' on a non-UTF-8 path failed"
    json_ok <out.json || fail "'$sub --json' on a non-UTF-8 path: invalid JSON: $(cat out.json)"
  done
  grep -q 'bad\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\u0001\\u007f\\"\\\\name' out.json ||
    fail "the path is not escaped byte by byte: $(cat out.json)"
  # and a failing command under --json with such a path
  pxl vm validate --json "$bad.missing" >out.json 2>/dev/null && fail "validate of a missing file exited 0"
  json_ok <out.json || fail "validate --json of a missing non-UTF-8 path: invalid JSON: $(cat out.json)"
  pxl vm run --json "$bad.missing" >out.json 2>/dev/null && fail "run of a missing file exited 0"
  json_error_object <out.json || fail "run --json of a missing non-UTF-8 path: $(cat out.json)"
  ;;

json_errors)
  # every failing command under --json prints one JSON error object on stdout
  while IFS= read -r cmd; do
    # shellcheck disable=SC2086
    pxl $cmd >out.json 2>/dev/null
    rc=$?
    [ $rc -ne 0 ] || fail "'pxl $cmd' exited 0"
    json_error_object <out.json || fail "'pxl $cmd': not a JSON error object: $(cat out.json)"
  done <<EOF
info --json --backend gpu --webgpu-lib /nonexistent/libwebgpu.so
bench ops --json --webgpu-lib /nonexistent/libwebgpu.so
bench dot --json --min nonsense
bench --json frobnicate
bench dot --json --backend gpu --webgpu-lib /nonexistent/libwebgpu.so --max 10
vm --json frobnicate
vm run --json missing.pxi --backend cpu
vm run --json in.pxi --backend cpu --trace --repeat 2
vm run --json in.pxi in.pxi
vm compare --json missing.pxi --webgpu-lib /nonexistent/libwebgpu.so
vm asm --json $TXT
vm asm --json missing.txt -o x.pxi
vm asm --json $SRC/tests/data/vm/bad_mnemonic.txt -o x.pxi
vm disasm --json missing.pxi
vm disasm --json in.pxi -o in.pxi
vm show --json missing.pxi -o s.png
vm validate in.pxi --json --frobnicate
EOF
  # vm validate keeps its own shape: {"file","valid":false,"error"}
  echo junk >junk.pxi
  pxl vm validate --json junk.pxi >out.json 2>/dev/null && fail "validate of junk exited 0"
  python3 -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); sys.exit(0 if d["valid"] is False and d["error"] else 1)' <out.json ||
    fail "validate --json of junk: $(cat out.json)"
  ;;

no_gpu_reason)
  # "needs a GPU ()" had an empty reason
  # (bench ops --backend cpu times the CPU cases; without a WebGPU library it needs a GPU)
  pxl bench ops --webgpu-lib /nonexistent/libwebgpu.so >/dev/null 2>err.txt
  [ $? -eq 77 ] || fail "bench ops without a WebGPU library did not exit 77"
  grep -q "needs a GPU (.\+)" err.txt || fail "bench ops without a WebGPU library said: $(cat err.txt)"
  grep -q "()" err.txt && fail "an empty reason: $(cat err.txt)"
  pxl info --backend cpu --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["gpu_unavailable_reason"] else 1)' ||
    fail "info --json --backend cpu gives an empty gpu_unavailable_reason"
  ;;

*)
  echo "unknown case $CASE" >&2
  exit 2
  ;;
esac
[ $fails -eq 0 ] || exit 1
echo "$CASE: ok"
