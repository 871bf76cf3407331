#!/usr/bin/env bash
# Installs a pxl build into a temporary prefix (`make install`) and builds
# programs outside the tree against it (.ci/consumer/):
#   - find_package(pxl) with pxl::pxl, and pxl::pxl_shared when installed;
#   - pkg-config (the shared library when installed, else the static one);
#   - no source or build path of this tree in the installed binaries.
# .ci/consumer.sh <build dir> [subdir]: with "subdir", also a project that
# add_subdirectory()s this tree.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$1
PREFIX=$(mktemp -d /tmp/pxl-prefix.XXXXXX)
WORK=$(mktemp -d /tmp/pxl-consumer.XXXXXX)
trap 'rm -rf "$PREFIX" "$WORK"' EXIT
JOBS=$(nproc 2>/dev/null || echo 2)

echo "-- make install into $PREFIX"
make -C "$ROOT" --no-print-directory install BUILD="$BUILD" PREFIX="$PREFIX" >/dev/null
PC_DIR=$(dirname "$(find "$PREFIX" -name pxl.pc | head -1)")
LIB_DIR=$(dirname "$PC_DIR")
test -f "$PREFIX/share/doc/pxl/LICENSE"

echo "-- no path of $ROOT in the installed binaries"
for f in "$PREFIX"/bin/pxl "$LIB_DIR"/libpxl.*; do
  [ -L "$f" ] && continue
  if strings -a "$f" | grep -F "$ROOT"; then echo "CI: $f holds a build-tree path" >&2; exit 1; fi
done

run() { # the consumer must say "consumer ok"
  "$@" | tee "$WORK/out"; grep -qx "consumer ok" "$WORK/out"
}

echo "-- find_package(pxl): pxl::pxl"
cmake -S "$ROOT/.ci/consumer" -B "$WORK/pkg" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/pkg" >/dev/null
run "$WORK/pkg/consumer"
# (ldd's output is captured first: with pipefail, `ldd | grep -q` fails at
# random when grep exits on its match and ldd then writes into a closed pipe)
deps_static=$(ldd "$WORK/pkg/consumer")
if grep -q libpxl <<<"$deps_static"; then echo "CI: pxl::pxl should be static" >&2; exit 1; fi

if [ -e "$LIB_DIR/libpxl.so" ]; then
  echo "-- find_package(pxl): pxl::pxl_shared"
  cmake -S "$ROOT/.ci/consumer" -B "$WORK/shared" -DCMAKE_PREFIX_PATH="$PREFIX" -DPXL_TARGET=pxl::pxl_shared \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$WORK/shared" >/dev/null
  deps_shared=$(ldd "$WORK/shared/consumer")
  grep -q "$LIB_DIR/libpxl.so" <<<"$deps_shared" || { echo "CI: not linked to the installed libpxl.so" >&2; exit 1; }
  run "$WORK/shared/consumer"
fi

echo "-- pkg-config"
export PKG_CONFIG_PATH="$PC_DIR"
# shellcheck disable=SC2046
cc -std=c11 -o "$WORK/pc" "$ROOT/.ci/consumer/main.c" $(pkg-config --cflags --libs pxl)
LD_LIBRARY_PATH="$LIB_DIR" run "$WORK/pc"

if [ "${2:-}" = subdir ]; then
  echo "-- add_subdirectory(pxl)"
  cmake -S "$ROOT/.ci/consumer" -B "$WORK/sub" -DPXL_FROM=subdir -DPXL_SOURCE="$ROOT" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$WORK/sub" -j "$JOBS" --target consumer >/dev/null
  run "$WORK/sub/consumer"
fi
echo "-- consumers ok"
