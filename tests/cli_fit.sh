#!/usr/bin/env bash
# `pxl fit` as a user runs it: a good fit (text, JSON, stdin, lhs = rhs, a
# robust loss), and every kind of bad input, each with its exit status and a
# message that says what and where, under --json a JSON error object, and
# writes to a full stdout. Each command runs under a timeout, so a hang is a
# failure, not a stuck test.
#
#   cli_fit.sh PXL WORK_DIR CASE
set -u
PXL=$1
WORK=$2
CASE=$3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK" || exit 1
fails=0
fail() {
  echo "FAIL ($CASE): $*" >&2
  fails=$((fails + 1))
}
pxl() { timeout 20 "$PXL" "$@"; }
json_field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); print(eval(sys.argv[1]))' "$1"; }
json_error_object() {
  python3 -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); sys.exit(0 if d.get("ok") is False and d.get("error") else 1)'
}

# NIST StRD Misra1a: y = b1*(1-exp(-b2*x)), certified b1 = 2.3894212918E+02
# +- 2.7070075241E+00, b2 = 5.5015643181E-04 +- 7.2668688436E-06. Its data
# come from deps/nist (scripts/fetch_nist.sh, checksums pinned), as a header
# line "y x" and 14 rows.
NIST=${PXL_NIST_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deps/nist}
if [ ! -f "$NIST/Misra1a.dat" ]; then
  [ -n "${PXL_REQUIRE_NIST:-}" ] && { echo "FAIL ($CASE): $NIST/Misra1a.dat is missing (scripts/fetch_nist.sh)" >&2; exit 1; }
  echo "skipped: $NIST/Misra1a.dat is missing (scripts/fetch_nist.sh)" >&2
  exit 77
fi
{
  echo "# NIST StRD Misra1a"
  echo "y x"
  sed -n '/^Data: *y/,$p' "$NIST/Misra1a.dat" | tail -n +2 | tr -d '\r' | awk 'NF == 2 { print $1, $2 }'
} >misra.txt
[ "$(grep -c '^[0-9]' misra.txt)" = 14 ] || { echo "FAIL ($CASE): Misra1a.dat: expected 14 rows" >&2; exit 1; }
MODEL='b1*(1-exp(-b2*x))'
START='b1=500,b2=1e-4'

# expect RC MESSAGE-REGEX ARGS...: exit status RC and stderr matching the regex
expect() {
  want_rc=$1
  want_msg=$2
  shift 2
  pxl "$@" >out.txt 2>err.txt
  rc=$?
  [ $rc -eq "$want_rc" ] || fail "'pxl $*' exited $rc, want $want_rc: $(cat err.txt)"
  grep -qE -- "$want_msg" err.txt || fail "'pxl $*' said '$(cat err.txt)', want /$want_msg/"
}

case $CASE in
good)
  pxl fit --model "$MODEL" --data misra.txt --start "$START" >out.txt 2>err.txt || fail "the Misra1a fit failed: $(cat err.txt)"
  grep -qE '^b1 +238\.9421291' out.txt || fail "b1: $(cat out.txt)"
  grep -qE '^b2 +0\.00055015643' out.txt || fail "b2: $(cat out.txt)"
  grep -qE '^residual sum of squares +0\.12455138894' out.txt || fail "RSS: $(cat out.txt)"
  grep -qE '^degrees of freedom +12 ' out.txt || fail "dof: $(cat out.txt)"
  pxl fit --model "$MODEL" --data misra.txt --start "$START" --json >out.json || fail "--json failed"
  b1=$(json_field 'd["parameters"][0]["value"]' <out.json)
  se1=$(json_field 'd["parameters"][0]["std_error"]' <out.json)
  python3 -c "import sys; sys.exit(0 if abs($b1/2.3894212918E+02-1) < 1e-9 and abs($se1/2.7070075241E+00-1) < 1e-8 else 1)" ||
    fail "--json b1 $b1 +- $se1"
  [ "$(json_field 'd["converged"] and d["dof"] == 12 and d["rows"] == 14' <out.json)" = True ] || fail "--json: $(cat out.json)"
  # stdin, comma-separated, --columns over a header, lhs = rhs
  tr -s ' ' ',' <misra.txt | grep -v '^#' | pxl fit --model "$MODEL" --data - --columns y,x --start "$START" >out.txt ||
    fail "CSV on stdin failed"
  grep -qE '^b1 +238\.9421291' out.txt || fail "CSV b1: $(cat out.txt)"
  pxl fit --model "log(y) = log(b1) + log(1-exp(-b2*x))" --data misra.txt --start "$START" >out.txt ||
    fail "lhs = rhs failed"
  grep -qE '^b1 ' out.txt || fail "lhs = rhs: $(cat out.txt)"
  pxl fit --model "$MODEL" --data misra.txt --start "$START" --loss cauchy:0.5 --json >out.json || fail "--loss failed"
  [ "$(json_field 'd["converged"]' <out.json)" = True ] || fail "--loss: $(cat out.json)"
  pxl fit --help | grep -q "usage: pxl fit" || fail "--help"
  ;;

bad_input)
  printf '' >empty.txt
  printf '# nothing\n\n' >comments.txt
  printf 'x y\n1 2\n3 4 5\n' >mismatch.txt
  printf 'x y\n1 2\n3 abc\n' >notnum.txt
  printf 'x y\n1 2\n3 nan\n' >nan.txt
  expect 1 "column 15: 'z' is neither a parameter \(--start: b1, b2\) nor a data column \(y, x\)" \
    fit --model 'b1*(1-exp(-b2*z))' --data misra.txt --start "$START"
  expect 1 "column 7: unknown function 'expp'" fit --model 'b1*(1-expp(-b2*x))' --data misra.txt --start "$START"
  expect 1 "column 17: expected '\)' to match '\(' at column 4, found the end" \
    fit --model 'b1*(1-exp(-b2*x)' --data misra.txt --start "$START"
  expect 1 "column 5: expected a number, a name or '\(', found the end" fit --model 'b1**' --data misra.txt --start b1=1
  expect 1 "column 1: empty expression" fit --model '' --data misra.txt --start b1=1
  expect 1 "column 8: a second '='" fit --model 'y = b1 = x' --data misra.txt --start b1=1
  expect 1 "nested deeper than" fit --model "$(printf '(%.0s' $(seq 1 300))b1" --data misra.txt --start b1=1
  expect 1 "empty.txt: no data rows \(the input is empty\)" fit --model "$MODEL" --data empty.txt --start "$START"
  expect 1 "no data rows \(the input is blank or comments only\)" fit --model "$MODEL" --data comments.txt --start "$START"
  expect 1 "mismatch.txt: line 3, column 5: 3 fields, but line 1 has 2" fit --model 'b1*x' --data mismatch.txt --start b1=1
  expect 1 "notnum.txt: line 3, column 3: 'abc' is not a number" fit --model 'b1*x' --data notnum.txt --start b1=1
  expect 1 "line 3, column 3: 'nan' is not a finite number" fit --model 'b1*x' --data nan.txt --start b1=1
  expect 1 "3 column names given, but the data has 2 columns" fit --model 'b1*x' --data misra.txt --start b1=1 --columns a,b,c
  expect 1 "missing.txt" fit --model 'b1*x' --data missing.txt --start b1=1
  expect 1 "parameter 'b3' in --start does not appear in the model" fit --model "$MODEL" --data misra.txt --start "$START,b3=1"
  expect 1 "'x' is both a parameter \(--start\) and a column of the data" fit --model 'x*y' --data misra.txt --start x=1
  expect 2 "--start column 11: the start of 'b2' is not finite" fit --model "$MODEL" --data misra.txt --start b1=500,b2=inf
  expect 2 "--start column 11: 'abc' is not a number" fit --model "$MODEL" --data misra.txt --start b1=500,b2=abc
  expect 2 "--start column 10: expected '=' after 'b2'" fit --model "$MODEL" --data misra.txt --start b1=500,b2
  expect 2 "--start column 6: 'b1' is given twice" fit --model "$MODEL" --data misra.txt --start b1=5,b1=6
  expect 2 "--start is empty" fit --model "$MODEL" --data misra.txt --start ''
  expect 2 "--loss: .*unknown loss 'hubr'" fit --model "$MODEL" --data misra.txt --start "$START" --loss hubr
  expect 2 "--loss: .*not a finite number > 0" fit --model "$MODEL" --data misra.txt --start "$START" --loss huber:-1
  expect 2 "--columns: an empty name" fit --model "$MODEL" --data misra.txt --start "$START" --columns 'y,,x'
  expect 2 "--model EXPR is required" fit --data misra.txt --start "$START"
  expect 2 "--data FILE is required" fit --model "$MODEL" --start "$START"
  expect 2 "--start .* is required" fit --model "$MODEL" --data misra.txt
  # a model that cannot be evaluated at the start: the solver refuses, with why
  expect 1 "the solver failed: .*not finite" fit --model 'b1/(x-x)' --data misra.txt --start b1=1
  # no convergence within --max-iterations: the results, a warning and exit status 3
  expect 3 "warning: 2 iterations without convergence" fit --model "$MODEL" --data misra.txt --start "$START" --max-iterations 2
  grep -qE '^b1 ' out.txt || fail "no results printed without convergence: $(cat out.txt)"
  ;;

json_errors)
  # every failure under --json prints one JSON error object on stdout
  while IFS= read -r args; do
    eval "set -- $args"
    pxl fit --json "$@" >out.json 2>/dev/null
    rc=$?
    [ $rc -ne 0 ] || fail "'pxl fit --json $args' exited 0"
    json_error_object <out.json || fail "'pxl fit --json $args': not a JSON error object: $(cat out.json)"
  done <<'EOF'
--model 'b1*(1-exp(-b2*z))' --data misra.txt --start b1=500,b2=1e-4
--model 'b1*(1-expp(-b2*x))' --data misra.txt --start b1=500,b2=1e-4
--model 'b1*x' --data missing.txt --start b1=1
--model 'b1*x' --data misra.txt --start b1=inf
--model 'b1*x' --data misra.txt --start b1=1 --loss nonsense
--model 'b1*x' --data misra.txt --start b1=1,b2=2
--model 'b1/(x-x)' --data misra.txt --start b1=1
--data misra.txt --start b1=1
EOF
  ;;

stdout_full)
  for extra in "" "--json"; do
    # shellcheck disable=SC2086
    pxl fit --model "$MODEL" --data misra.txt --start "$START" $extra >/dev/full 2>err.txt
    [ $? -ne 0 ] || fail "'pxl fit $extra > /dev/full' exited 0"
    grep -q "pxl: writing to stdout: No space left on device" err.txt || fail "'pxl fit $extra > /dev/full' said: $(cat err.txt)"
  done
  ;;

*)
  echo "unknown case $CASE" >&2
  exit 2
  ;;
esac
[ $fails -eq 0 ] || exit 1
echo "$CASE: ok"
