#!/usr/bin/env bash
# Downloads (here, amd64) the Debian 12 packages that building pxl on the H100
# machine needs beyond its own: PCRE2 and CHOLMOD (SuiteSparse) with what they
# link, into .gl/suitesparse/, which bench/device_setup.sh unpacks there
# without overwriting the machine's own files. Run once per checkout, after
# ../shared/device/prepare-gl.sh (which makes .gl/ and keeps it out of git).
set -euo pipefail
top=$(git rev-parse --show-toplevel)
mkdir -p "$top/.gl/suitesparse" /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
apt-get $o update >/dev/null
cd "$top/.gl/suitesparse"
apt-get $o download libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 \
  libsuitesparse-dev libsuitesparseconfig5 libcholmod3 libamd2 libcamd2 libcolamd2 libccolamd2 libmetis5 \
  libbtf1 libcxsparse3 libklu1 libldl2 librbio2 libspqr2 libumfpack5 libmongoose2 libsliplu1 \
  libblas3 liblapack3 libblas-dev liblapack-dev libgfortran5 libquadmath0 libgmp10 libmpfr6 2>&1 | grep -v '^W:' || true
ls -1 | wc -l
