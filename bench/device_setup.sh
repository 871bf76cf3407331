# Sourced by the bench/device_*.sh scripts on the device machine: unpacks the
# Vulkan loader (.gl/, see ../shared/device/README.md), points it at NVIDIA's
# driver, makes $OUT, and builds a Release tree in build-dev/ (exits on failure).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-dev -j 16 >/dev/null || exit 1
