#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test vocabularies into deps/vocab/ (git-ignored):
# models/ggml-vocab-{llama-spm,llama-bpe,qwen2,gpt-2,phi-3}.gguf with their
# .gguf.inp (cases) and .gguf.out (expected ids), as of llama.cpp v0.5.0.
# They come from the npm package node-llama-cpp@3.22.1, whose tarball holds
# llama/gitRelease.bundle, a git bundle of that llama.cpp tree. The tarball's
# sha512 is checked against the integrity npm published, and every extracted
# file against the sha256 pinned below.
# Idempotent: prints nothing when the files are present. Called by scripts/deps.sh.
#   scripts/fetch_vocab.sh [--check]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR="$ROOT/deps/vocab"
PKG="node-llama-cpp@3.22.1"
# `npm view node-llama-cpp@3.22.1 dist.integrity`
INTEGRITY="sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=="
FILES="
16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69 ggml-vocab-llama-spm.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0 ggml-vocab-llama-spm.gguf.inp
ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29 ggml-vocab-llama-spm.gguf.out
97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e ggml-vocab-llama-bpe.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0 ggml-vocab-llama-bpe.gguf.inp
118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b ggml-vocab-llama-bpe.gguf.out
44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c ggml-vocab-qwen2.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0 ggml-vocab-qwen2.gguf.inp
de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363 ggml-vocab-qwen2.gguf.out
cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac ggml-vocab-gpt-2.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0 ggml-vocab-gpt-2.gguf.inp
48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60 ggml-vocab-gpt-2.gguf.out
967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326 ggml-vocab-phi-3.gguf
be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0 ggml-vocab-phi-3.gguf.inp
ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29 ggml-vocab-phi-3.gguf.out
"

say() { echo "fetch_vocab: $*" >&2; }

# shellcheck source=scripts/pinned_files.sh
source "$ROOT/scripts/pinned_files.sh"
pinned_present "$DIR" && exit 0
if [ "${1:-}" = "--check" ]; then say "missing files in $DIR"; exit 1; fi

say "fetching $PKG (llama.cpp's tokenizer test vocabularies)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$PKG" >/dev/null 2>"$tmp/npm.log") || { cat "$tmp/npm.log" >&2; say "npm pack $PKG failed"; exit 1; }
tgz=$(ls "$tmp"/*.tgz)
got="sha512-$(openssl dgst -sha512 -binary "$tgz" 2>/dev/null | base64 -w0 || true)"
if [ "$got" = "sha512-" ]; then
  got="sha512-$(python3 -c 'import hashlib,base64,sys;print(base64.b64encode(hashlib.sha512(open(sys.argv[1],"rb").read()).digest()).decode())' "$tgz")"
fi
if [ "$got" != "$INTEGRITY" ]; then
  say "integrity mismatch for $PKG"; say "  expected $INTEGRITY"; say "  got      $got"; exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle
git init -q --bare "$tmp/src.git"
git -C "$tmp/src.git" fetch -q "$tmp/package/llama/gitRelease.bundle" HEAD
paths=()
while read -r sum name; do [ -n "$name" ] && paths+=("models/$name"); done <<< "$FILES"
mkdir -p "$tmp/out"
git -C "$tmp/src.git" archive FETCH_HEAD "${paths[@]}" | tar -x -C "$tmp/out"
pinned_verify "$tmp/out/models"
pinned_install "$tmp/out/models" "$DIR"
echo "$PKG $INTEGRITY (llama.cpp v0.5.0 models/)" > "$DIR/SOURCE"
say "vocabularies installed in deps/vocab/"
