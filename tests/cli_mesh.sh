#!/bin/bash
# pxl mesh as a user runs it: arap at level 2 and developable at level 1 write
# their files into DIR; each file is checked for its format and size.
# usage: cli_mesh.sh PXL DIR
set -u
PXL=$1
D=$2
rm -rf "$D" && mkdir -p "$D" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
png_ok() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }

"$PXL" mesh arap --level 2 --backend cpu --quiet --out-mesh "$D/arap.obj" --out-png "$D/arap.png" \
    --export "$D/arap.txt" --json > "$D/arap.json" || bad "arap exited $?"
grep -q '"ok":true,"command":"mesh arap","level":2,"vertices":162,"edges":480,"faces":320' "$D/arap.json" || bad "arap JSON: $(cat "$D/arap.json")"
grep -q '"termination":"CONVERGED_' "$D/arap.json" || bad "arap did not converge"
[ "$(grep -c '^v ' "$D/arap.obj")" = 162 ] || bad "arap.obj: vertex lines"
[ "$(grep -c '^f ' "$D/arap.obj")" = 320 ] || bad "arap.obj: face lines"
png_ok "$D/arap.png" || bad "arap.png is not a PNG"
[ "$(head -n 1 "$D/arap.txt")" = "pxl-arap 1" ] || bad "arap.txt: first line"
read -r V E H < <(sed -n 2p "$D/arap.txt")
[ "$V" = 162 ] && [ "$E" = 960 ] || bad "arap.txt: counts $V $E $H"
[ "$(wc -l < "$D/arap.txt")" = $((2 + V + E + H)) ] || bad "arap.txt: line count"

"$PXL" mesh developable --level 1 --iterations 30 --backend cpu --quiet --out-mesh "$D/dev.ply" \
    --out-png "$D/dev.png" --json > "$D/dev.json" || bad "developable exited $?"
grep -q '"valence":{"5":12,"6":30}' "$D/dev.json" || bad "developable JSON: $(cat "$D/dev.json")"
grep -q '"groups":\[{"instances":12,.*},{"instances":30,' "$D/dev.json" || bad "developable: not 2 kernels"
e0=$(sed -n 's/.*"initial_energy":\([^,]*\),.*/\1/p' "$D/dev.json")
e1=$(sed -n 's/.*"final_energy":\([^,]*\),.*/\1/p' "$D/dev.json")
awk -v a="$e0" -v b="$e1" 'BEGIN { exit !(b < a && b > 0) }' || bad "developable: energy $e0 -> $e1"
hl=$(grep -a -b -m1 '^end_header$' "$D/dev.ply" | cut -d: -f1)
[ "$(head -c 3 "$D/dev.ply")" = ply ] || bad "dev.ply: magic"
grep -a -q '^element vertex 42$' "$D/dev.ply" && grep -a -q '^element face 80$' "$D/dev.ply" || bad "dev.ply: counts"
[ "$(stat -c %s "$D/dev.ply")" = $((hl + 11 + 12 * 42 + 13 * 80)) ] || bad "dev.ply: size"
png_ok "$D/dev.png" || bad "dev.png is not a PNG"

# usage errors: exit 2 with a message
"$PXL" mesh arap --level 8 > /dev/null 2>&1; [ $? = 2 ] || bad "--level 8 accepted"
"$PXL" mesh twist > /dev/null 2>&1; [ $? = 2 ] || bad "unknown subcommand accepted"
[ $fail = 0 ] && echo "cli_mesh: all checks passed"
exit $fail
