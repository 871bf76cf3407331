#!/usr/bin/env bash
# Fetches the 27 problems of NIST's Statistical Reference Datasets for
# nonlinear regression (StRD, public domain: data, models, starting values
# and certified results) into deps/nist/ (git-ignored), for tests/nist_fit.py.
# They come from the Debian source package of Ceres Solver 2.1.0, whose
# data/nist/ holds NIST's .dat files (www.itl.nist.gov/div898/strd/nls/) as
# Ceres ships them (one misprint: Roszman1's certified b1, which
# tests/nist_fit.py corrects); the tarball is fetched from the Debian archive
# apt uses and checked against the sha256 Debian published (bookworm's
# Sources index), and every extracted file against the sha256 pinned below.
# Idempotent: prints nothing when the files are present. Called by scripts/deps.sh.
#   scripts/fetch_nist.sh [--check]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${PXL_NIST_DIR:-$ROOT/deps/nist}
# PXL_DEBIAN_MIRROR: another mirror of the Debian archive (the pinned sha256 still applies)
MIRROR=${PXL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TARBALL="ceres-solver_2.1.0+really2.1.0+dfsg.orig.tar.xz"
# the pool, then the snapshot archive (where the file stays when bookworm's
# pool moves on); the sha256 below decides
URLS="$MIRROR/pool/main/c/ceres-solver/$TARBALL
https://snapshot.debian.org/archive/debian/20240601T000000Z/pool/main/c/ceres-solver/$TARBALL"
TARBALL_SHA256="acd5774187a8ea92bdf9e6d1faeb22c00bf30b1ad226ef6e2ade8b7636bbc336"
FILES="
b34d160605b959c301d13aac6627b693743d32ad98a6c4f830a3f728cdff0f52 Bennett5.dat
fc44fbed04e3be16df6498e722d4c8aedfd0af210110bc396d9f99acecd77e21 BoxBOD.dat
d9a055dfe5af71a8754c00f073ef00f8fed2e3fd1c6fd20cea8fd62d7cc3ed84 Chwirut1.dat
c37e5522a34f9a57e18d7d10f8736202eabc0c33b8e7ad0010e618db04b57411 Chwirut2.dat
5eae83de8b34e34c631a5738d640183b0628913e728437ae77f066e832186e24 DanWood.dat
0c644f45b0e586cb1bb0613bad68f63c704efadacd086e768468d33d83f3e5d9 ENSO.dat
8ec2133b29a0a7cecbfccd51f7c61ee432f73c460bf5ce7106d672642e57a61e Eckerle4.dat
20d0b85ffc73681ce9bdd69c566e53969a65e0e2192c3de16ad4a1dcfdca6c27 Gauss1.dat
24fe86801c35c4f86140cced68894e31d73b6ed5738cf698474144f94bae3640 Gauss2.dat
24842a9e795db59c2c6cbc4c11047f90faedad014f8146faa6b5555259958d6d Gauss3.dat
7e885af48e18a222033a66cb22b491f0f5bc761b652142c0d9b28132daf63956 Hahn1.dat
cbd288dd9d8586ec97ca408277d1a27ef41b19b543c158d594af189de80ae61c Kirby2.dat
dc7a419a4d7e7c0891e378dcde953a3e5dd273618b64b2cee8301e51577b428a Lanczos1.dat
be1ac732e725ef75298f082bcdedab9e2ee9395ad77d8fad2ef37c95e0421572 Lanczos2.dat
bc998624541c49fedee08346ee2c1d495741c4ea1dd15c052d7c743ab3cf0efe Lanczos3.dat
6419da83fd9ab34615769413dc2a6d35b11372f512a9401628a1565067c51d10 MGH09.dat
a0eb140580fdd6dcf6fba2cbbd81afa598c5226f1e6d702d1313c72a7a6e6fb4 MGH10.dat
75edb5522ee639794ae1f0d0f4a1e3638e963c6854888b853e1f45cea3c2f4d7 MGH17.dat
9d3194d537d9a6bbf92eb819504070923a1885d0191f40b6b3aaeedd130b98e2 Misra1a.dat
dd27e310f787dcbc2addc50b9f8e5e3b82155f732926898b1858e4d08eead6a8 Misra1b.dat
012f75aa0ff112afabdff73880e324ab28e2dc267b678537611c403b959dc941 Misra1c.dat
4dfa39a381a5ffea3e5d9306af1bda9d53bc57226a8e6f0c19af6b9702580481 Misra1d.dat
82fe77ef1a79a4441e7af5083680fc5046f9eb29b33bc2f2b76c478ecbe976d7 Nelson.dat
fc97dd1f94fbcb381495065a053e279f23588a9ceb243276f2a2c36c8225985b Rat42.dat
36f08908d0f09b1d075e3701ca567701535c58ac0d795ff68fb3c04e172c2c5d Rat43.dat
6cca4a6b3ed24bca298e6d6cea3a550d8529278c40b8b9c3afdffb0fbb45b927 Roszman1.dat
806b8d00a5365eff907561db796fec3af8a26a5f353297d4311fd46ed5b0146f Thurber.dat
"

say() { echo "fetch_nist: $*" >&2; }

# shellcheck source=scripts/pinned_files.sh
source "$ROOT/scripts/pinned_files.sh"
pinned_present "$DIR" && exit 0
if [ "${1:-}" = "--check" ]; then say "missing files in $DIR"; exit 1; fi

say "fetching $TARBALL (NIST StRD nonlinear regression data)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok=0
while read -r url; do
  [ -n "$url" ] || continue
  if curl -fsSL --retry 2 -o "$tmp/$TARBALL" "$url"; then ok=1; break; fi
  say "could not fetch $url"
done <<< "$URLS"
[ $ok = 1 ] || { say "no source of $TARBALL could be reached"; exit 1; }
have=$(sha256sum "$tmp/$TARBALL" | cut -d' ' -f1)
if [ "$have" != "$TARBALL_SHA256" ]; then
  say "sha256 mismatch for $TARBALL"; say "  expected $TARBALL_SHA256"; say "  got      $have"; exit 1
fi
paths=()
while read -r sum name; do [ -n "$name" ] && paths+=("ceres-solver-2.1.0/data/nist/$name"); done <<< "$FILES"
tar -xJf "$tmp/$TARBALL" -C "$tmp" "${paths[@]}"
pinned_verify "$tmp/ceres-solver-2.1.0/data/nist"
pinned_install "$tmp/ceres-solver-2.1.0/data/nist" "$DIR"
echo "$TARBALL sha256 $TARBALL_SHA256 (data/nist/)" > "$DIR/SOURCE"
say "NIST StRD files installed in $DIR"
