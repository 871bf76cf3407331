# Sourced by the bench/device_*.sh scripts on the device machine: unpacks the
# Vulkan loader (.gl/, see ../shared/device/README.md), points it at NVIDIA's
# driver, makes $OUT, and builds a Release tree in build-dev/ (exits on failure).
for f in .gl/*.deb; do dpkg -x "$f" /; done
# CHOLMOD and what it links (.gl/suitesparse/, Debian 12's debs): unpacked
# without overwriting what the machine has (its own libgomp, BLAS ...); the
# BLAS and LAPACK of Debian live in alternatives directories
if [ -d .gl/suitesparse ]; then
  rm -rf /tmp/pxl-ss && mkdir -p /tmp/pxl-ss
  for f in .gl/suitesparse/*.deb; do dpkg -x "$f" /tmp/pxl-ss; done
  cp -rn /tmp/pxl-ss/usr / 2>/dev/null || true
  printf '/usr/lib/x86_64-linux-gnu/blas\n/usr/lib/x86_64-linux-gnu/lapack\n' > /etc/ld.so.conf.d/pxl-blas.conf
fi
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-dev -j 16 >/dev/null || exit 1
