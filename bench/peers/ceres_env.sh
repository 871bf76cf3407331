# shellcheck shell=bash disable=SC2034
# Sourced (bash) on the device machine, from the repository's root, with
# .peers/ceres carried: unpacks .peers/ceres/ceres.tar.xz (made by
# bench/peers/build_ceres.sh) to /tmp/peers/ceres once, and sets
#   CMAKE_PREFIX_PATH, LDFLAGS   exported, so that a following
#                                `source bench/device_setup.sh` finds CHOLMOD
#                                (headers and libcholmod) in the bundle on a
#                                machine without SuiteSparse
#   PEERS_LIBS                   not exported: the library path for pxl and
#                                Ceres processes, to be given to them alone
#                                (LD_LIBRARY_PATH=$PEERS_LIBS build-dev/pxl ..),
#                                never to python (its own libraries differ)
#   PEERS_CERES                  /tmp/peers/ceres, or empty when the bundle is
#                                missing or its program does not start
# PEERS_BLAS=openblas (default) or atlas picks the BLAS in PEERS_LIBS.
PEERS_CERES=
PEERS_LIBS=
_pc=/tmp/peers/ceres
if [ ! -x "$_pc/bin/ceres_arap" ] && [ -f .peers/ceres/ceres.tar.xz ]; then
  rm -rf /tmp/peers && mkdir -p /tmp/peers
  tar -C /tmp/peers -xJf .peers/ceres/ceres.tar.xz 2>/dev/null ||
    python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall('/tmp/peers')" .peers/ceres/ceres.tar.xz
fi
if [ -x "$_pc/bin/ceres_arap" ]; then
  PEERS_LIBS=$_pc/lib:$_pc/blas-${PEERS_BLAS:-openblas}
  # lib-cxx only where the machine's C++ runtime is older than the build's
  LD_LIBRARY_PATH=$PEERS_LIBS "$_pc/bin/ceres_arap" --version >/dev/null 2>&1 || PEERS_LIBS=$PEERS_LIBS:$_pc/lib-cxx
  if LD_LIBRARY_PATH=$PEERS_LIBS "$_pc/bin/ceres_arap" --version >/dev/null 2>&1; then
    PEERS_CERES=$_pc
  fi
  export CMAKE_PREFIX_PATH=$_pc${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LDFLAGS="${LDFLAGS:-} -Wl,-rpath-link,$_pc/lib:$_pc/blas-${PEERS_BLAS:-openblas}"
fi
unset _pc
