#!/bin/sh
# Builds the vkstats Vulkan layer (vkstats_layer.c) and its manifest into DIR
# (default build-vkstats). Needs the Vulkan headers (Debian: libvulkan-dev).
# Use: VK_LAYER_PATH=DIR VK_INSTANCE_LAYERS=VK_LAYER_PXL_vkstats PROGRAM ...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build-vkstats}
mkdir -p "$out"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
    -o "$out/libpxl_vkstats.so" "$here/vkstats_layer.c"
cat > "$out/pxl_vkstats.json" <<JSON
{
  "file_format_version": "1.1.2",
  "layer": {
    "name": "VK_LAYER_PXL_vkstats",
    "type": "GLOBAL",
    "library_path": "./libpxl_vkstats.so",
    "api_version": "1.3.0",
    "implementation_version": "1",
    "description": "prints the driver's statistics of each compute pipeline (pxl bench/vkstats)",
    "functions": {
      "vkGetInstanceProcAddr": "vkstats_GetInstanceProcAddr",
      "vkGetDeviceProcAddr": "vkstats_GetDeviceProcAddr",
      "vkNegotiateLoaderLayerInterfaceVersion": "vkNegotiateLoaderLayerInterfaceVersion"
    }
  }
}
JSON
echo "$out/libpxl_vkstats.so"
