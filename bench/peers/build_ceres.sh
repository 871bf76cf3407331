#!/usr/bin/env bash
# Builds bench/peers/ceres_arap.cc against Debian's libceres-dev (Ceres 2.1)
# and packs it, with every shared library it needs beyond glibc, into
# .peers/ceres/ceres.tar.xz (git-ignored) for carrying to the device machine,
# which has none of these Debian packages. A peer to measure pxl against:
# nothing in pxl's build or tests uses it.
#
#   bash bench/peers/build_ceres.sh          (from the repository's root)
#
# Needs: apt-get install libceres-dev   (pulls Eigen, glog, gflags, SuiteSparse,
# BLAS/LAPACK). The archive unpacks to ceres/ with
#   bin/ceres_arap     DT_RPATH $ORIGIN/../lib, so it finds lib/ by itself
#   lib/               the libraries (sonames), plus libcholmod.so for linking
#   blas-atlas/        BLAS/LAPACK: ATLAS (libatlas3-base), and
#   blas-openblas/     Debian's OpenBLAS (pthreads; apt-get download, not
#                      installed here). Name one in LD_LIBRARY_PATH: nothing
#                      else provides libblas.so.3 on the device.
#   lib-cxx/           libstdc++ and libgcc_s of this build, only for a machine
#                      whose own are older (the run script adds them if needed)
#   include/suitesparse  CHOLMOD's headers (lets pxl's own build find CHOLMOD
#                      there through CMAKE_PREFIX_PATH)
#   MANIFEST           package versions, BLAS, the newest glibc symbol needed
set -euo pipefail
top=$(git rev-parse --show-toplevel)
cd "$top"
[ -f /usr/include/ceres/ceres.h ] || { echo "build_ceres.sh: no /usr/include/ceres/ceres.h: apt-get install libceres-dev" >&2; exit 1; }
command -v g++ >/dev/null || { echo "build_ceres.sh: g++ missing" >&2; exit 1; }

ex="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$ex")"
grep -qx '/.peers/' "$ex" 2>/dev/null || echo '/.peers/' >> "$ex"

stage=$(mktemp -d /tmp/ceres-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
d=$stage/ceres
mkdir -p "$d/bin" "$d/lib" "$d/lib-cxx" "$d/include"

# Generic x86-64 code (no -march=native: the device's CPU is another), -O3
# like pxl's Release build; Eigen and the Jets inline into this file.
g++ -std=c++17 -O3 -DNDEBUG -I/usr/include/eigen3 bench/peers/ceres_arap.cc -o "$d/bin/ceres_arap" \
  -lceres -lglog -lgflags -pthread -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'

# Every library the binary loads, except glibc's own (the device has its own,
# newer glibc), the C++ runtime (kept apart in lib-cxx) and BLAS/LAPACK, which
# go to blas-atlas/ (ATLAS, which libceres3 pulls in) and blas-openblas/ (Debian's
# OpenBLAS, pthreads) so that the run picks one through LD_LIBRARY_PATH. ATLAS's
# libf77blas is linked by libceres itself; in blas-openblas/ that name points at
# OpenBLAS, so no ATLAS routine stays in the process.
mkdir -p "$d/blas-atlas" "$d/blas-openblas"
atlas=/usr/lib/x86_64-linux-gnu/atlas
[ -f $atlas/libblas.so.3 ] && [ -f $atlas/liblapack.so.3 ] || { echo "build_ceres.sh: no ATLAS in $atlas (libatlas3-base)" >&2; exit 1; }
ldd "$d/bin/ceres_arap" | awk '/=> \//{print $1, $3}' | while read -r soname path; do
  case "$soname" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libresolv.so.*) ;;
    libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$d/lib-cxx/$soname" ;;
    # libblas/liblapack: ATLAS's own, whatever the system's alternative is
    libblas.so.*|liblapack.so.*) cp -L "$atlas/$soname" "$d/blas-atlas/$soname" ;;
    libf77blas.so.*|libatlas.so.*|libcblas.so.*|libopenblas*) cp -L "$path" "$d/blas-atlas/$soname" ;;
    *) cp -L "$path" "$d/lib/$soname" ;;
  esac
done
ob=$stage/openblas
mkdir -p "$ob"
if [ "${CERES_OPENBLAS:-1}" = 1 ] && (cd "$ob" && apt-get download libopenblas0-pthread >/dev/null 2>&1); then
  dpkg -x "$ob"/libopenblas0-pthread_*.deb "$ob/x"
  src="$ob/x/usr/lib/x86_64-linux-gnu/openblas-pthread"
  cp -L "$src/libblas.so.3" "$src/liblapack.so.3" "$src/libopenblas.so.0" "$d/blas-openblas/"
  ln -s libopenblas.so.0 "$d/blas-openblas/libf77blas.so.3"
  openblas_deb=$(dpkg-deb -f "$ob"/libopenblas0-pthread_*.deb Package Version | tr '\n' ' ')
else
  echo "build_ceres.sh: no OpenBLAS (apt-get download libopenblas0-pthread failed or CERES_OPENBLAS=0): blas-atlas only" >&2
  rmdir "$d/blas-openblas"
  openblas_deb=none
fi
ln -s libcholmod.so.3 "$d/lib/libcholmod.so"
cp -r /usr/include/suitesparse "$d/include/"

# Each BLAS must leave no symbol undefined and bind dgemm_ to itself.
for b in "$d"/blas-*; do
  if LD_LIBRARY_PATH=$b ldd -r "$d/bin/ceres_arap" 2>&1 | grep -q 'undefined symbol'; then
    echo "build_ceres.sh: undefined symbols with $b" >&2; exit 1
  fi
  LD_LIBRARY_PATH=$b LD_BIND_NOW=1 LD_DEBUG=bindings "$d/bin/ceres_arap" --version 2>&1 >/dev/null |
    grep "libcholmod.so.3 .*normal symbol \`dgemm_'" | sed "s|.*binding file|$(basename "$b"): binding|" || true
done

# The run check: the binary must start with lib/ only (and no system copies).
LD_LIBRARY_PATH=$d/blas-atlas "$d/bin/ceres_arap" --version

newest=$(for f in "$d"/bin/* "$d"/lib/*.so.* "$d"/blas-*/*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
newest_lcxx=$(for f in "$d"/lib-cxx/*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
newest_cxx=$(for f in "$d"/bin/* "$d"/lib/*.so.* "$d"/blas-*/*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
{
  echo "ceres_arap built $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(g++ --version | head -1)"
  echo "source: bench/peers/ceres_arap.cc at $(git rev-parse --short HEAD)"
  dpkg-query -W -f='${Package} ${Version}\n' libceres-dev libceres3 libsuitesparse-dev libgoogle-glog0v6 libgflags2.2 2>/dev/null || true
  echo "blas-atlas: $(dpkg-query -W -f='${Package} ${Version}' libatlas3-base 2>/dev/null), $(readlink -f $atlas/libblas.so.3), $(readlink -f $atlas/liblapack.so.3)"
  echo "blas-openblas: $openblas_deb"
  echo "newest glibc symbol needed: $newest by bin/ and lib/, $newest_lcxx by lib-cxx/; newest libstdc++ symbol needed: $newest_cxx"
  echo "libraries:"; (cd "$d" && find lib lib-cxx blas-* -printf '  %p %s %l\n' | sort)
} > "$d/MANIFEST"

mkdir -p .peers/ceres
tar -C "$stage" -cJf .peers/ceres/ceres.tar.xz ceres
cp "$d/MANIFEST" .peers/ceres/MANIFEST
cat .peers/ceres/MANIFEST
echo "unpacked: $(du -sh "$d" | cut -f1); carried: .peers/ceres = $(du -sb .peers/ceres | cut -f1) bytes"
