#!/usr/bin/env bash
# Installs what pxl needs to build and test, and nothing else.
# Idempotent: when everything is present it prints nothing and exits 0.
#
#   scripts/deps.sh            Debian packages + the Dawn WebGPU library + the test
#                              vocabularies (scripts/fetch_vocab.sh) + the NIST StRD
#                              regression problems (scripts/fetch_nist.sh)
#   scripts/deps.sh --check    report what is missing, install nothing (exit 1 if any)
#   scripts/deps.sh --swiftshader   also SwiftShader's Vulkan driver (Debian's chromium)
#                              and the Vulkan loader: a GPU-less Vulkan adapter, so that
#                              Dawn's SPIR-V path can be tested (.ci/run does)
#
# The Dawn library comes from the npm package bun-webgpu-linux-x64@0.1.7. Its
# tarball is fetched with `npm pack`, its sha512 checked against the integrity
# the npm registry published for that version (pinned below), and the shared
# library unpacked into deps/dawn/ (git-ignored). Nothing is downloaded at run time.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DAWN_DIR="$ROOT/deps/dawn"
DAWN_PKG="bun-webgpu-linux-x64@0.1.7"
DAWN_SO="libwebgpu_wrapper.so"
# `npm view bun-webgpu-linux-x64@0.1.7 dist.integrity`
DAWN_INTEGRITY="sha512-UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw=="

CHECK_ONLY=0
SWIFTSHADER=0
[ "${1:-}" = "--check" ] && CHECK_ONLY=1
[ "${1:-}" = "--swiftshader" ] && SWIFTSHADER=1

say() { echo "deps: $*" >&2; }

# --- Debian packages -------------------------------------------------------
# package : a file or command whose presence means it is installed
missing=()
need_file() { [ -e "$2" ] || missing+=("$1"); }
need_cmd()  { command -v "$2" >/dev/null 2>&1 || missing+=("$1"); }
libdir=/usr/lib/x86_64-linux-gnu
[ -d "$libdir" ] || libdir=/usr/lib/$(uname -m)-linux-gnu

need_cmd  gcc              cc
need_file libc6-dev        /usr/include/stdio.h
need_cmd  make             make
need_cmd  cmake            cmake
need_cmd  pkg-config       pkg-config
need_file libpng-dev       /usr/include/png.h
need_file libpcre2-dev     /usr/include/pcre2.h     # the llm layer's tokenizer regexes
need_file libsuitesparse-dev /usr/include/suitesparse/cholmod.h # the ad layer's sparse Cholesky (CHOLMOD)
need_file libegl1          "$libdir/libEGL.so.1"
need_file libegl-dev       "$libdir/libEGL.so"      # Dawn dlopens the unversioned name
need_file libegl-mesa0     "$libdir/libEGL_mesa.so.0"
need_file libgles2         "$libdir/libGLESv2.so.2"
need_file libgl1-mesa-dri  "$libdir/dri/swrast_dri.so"
if [ $SWIFTSHADER = 1 ]; then
  need_file chromium       /usr/lib/chromium/vk_swiftshader_icd.json
  need_file libvulkan1     "$libdir/libvulkan.so.1"
fi
need_cmd  npm              npm
need_cmd  python3          python3
need_cmd  git              git                    # scripts/fetch_vocab.sh opens llama.cpp's source bundle
need_file ca-certificates  /etc/ssl/certs/ca-certificates.crt
need_cmd  curl             curl                   # scripts/fetch_nist.sh fetches from the Debian archive
need_cmd  xz-utils         xz                     # ... an .orig.tar.xz
need_cmd  bible-kjv        bible                  # Pixel-LLM's corpus (public domain), read by `pxl vm train`
# CI: the clang build and the libFuzzer targets (libFuzzer is in libclang-rt-14-dev on Debian 12)
need_cmd  clang            clang
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(uname -m).a" >/dev/null ||
  missing+=(libclang-rt-14-dev)

if [ ${#missing[@]} -gt 0 ]; then
  if [ $CHECK_ONLY = 1 ]; then say "missing Debian packages: ${missing[*]}"; exit 1; fi
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { say "need root (or sudo) to install: ${missing[*]}"; exit 1; }
    SUDO="sudo -n"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Dawn ------------------------------------------------------------------
if [ ! -f "$DAWN_DIR/$DAWN_SO" ]; then
  if [ $CHECK_ONLY = 1 ]; then say "missing $DAWN_DIR/$DAWN_SO"; exit 1; fi
  say "fetching $DAWN_PKG (Dawn WebGPU library)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$DAWN_PKG" >/dev/null 2>"$tmp/npm.log") \
    || { cat "$tmp/npm.log" >&2; say "npm pack $DAWN_PKG failed"; exit 1; }
  tgz=$(ls "$tmp"/*.tgz)
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" 2>/dev/null | base64 -w0 || true)"
  if [ "$got" = "sha512-" ]; then
    got="sha512-$(python3 -c 'import hashlib,base64,sys;print(base64.b64encode(hashlib.sha512(open(sys.argv[1],"rb").read()).digest()).decode())' "$tgz")"
  fi
  if [ "$got" != "$DAWN_INTEGRITY" ]; then
    say "integrity mismatch for $DAWN_PKG"
    say "  expected $DAWN_INTEGRITY"
    say "  got      $got"
    exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/$DAWN_SO package/LICENSE
  mkdir -p "$DAWN_DIR"
  install -m 0644 "$tmp/package/LICENSE" "$DAWN_DIR/LICENSE"
  # Write under a temporary name, then rename: an interrupted run leaves no half file.
  install -m 0755 "$tmp/package/$DAWN_SO" "$DAWN_DIR/$DAWN_SO.part"
  mv "$DAWN_DIR/$DAWN_SO.part" "$DAWN_DIR/$DAWN_SO"
  echo "$DAWN_PKG $DAWN_INTEGRITY" > "$DAWN_DIR/SOURCE"
  say "Dawn installed in deps/dawn/"
fi

# --- llama.cpp's tokenizer test vocabularies (deps/vocab/) -----------------
if [ $CHECK_ONLY = 1 ]; then "$ROOT/scripts/fetch_vocab.sh" --check; else "$ROOT/scripts/fetch_vocab.sh"; fi

# --- NIST StRD nonlinear regression problems (deps/nist/) ------------------
if [ $CHECK_ONLY = 1 ]; then "$ROOT/scripts/fetch_nist.sh" --check; else "$ROOT/scripts/fetch_nist.sh"; fi
