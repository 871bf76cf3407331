# One device call: the vkstats layer (built here with bench/vkstats/build.sh
# build-vkstats, carried as build-vkstats) under pxl's TinyLlama decode, the
# matvec cases of pxl bench ops and llama.cpp's Vulkan backend on the same
# model; each pipeline's statistics go to $OUT/*.txt, the SPIR-V of each
# shader module to $OUT/spv.tgz. Needs .gl, deps/dawn and .peers carried.
set -u
OUT=${OUT:-/tmp/out}
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
NO_CUDA=1 PHASE=prepare bash bench/llm_peers.sh tinyllama-1.1b qwen2.5-0.5b > $OUT/prep.txt 2>&1
P=/root/peers
export VK_LAYER_PATH=$PWD/build-vkstats VK_INSTANCE_LAYERS=VK_LAYER_PXL_vkstats
mkdir -p /tmp/spv/pxl /tmp/spv/llama
VKSTATS_DIR=/tmp/spv/pxl timeout 120 build-dev/pxl bench llm -m $P/m/tinyllama-1.1b-q4km.gguf --backend gpu --pp 16 --tg 16 --reps 1 > $OUT/pxl_llm.txt 2>&1
timeout 120 build-dev/pxl bench ops --only matvec --reps 3 > $OUT/pxl_ops.txt 2>&1
VKSTATS_DIR=/tmp/spv/llama timeout 120 $P/llbench -L $P/lib-vulkan -m $P/m/tinyllama-1.1b-q4km.gguf -p 16 -n 16 -r 1 > $OUT/llama_vk.txt 2>&1
tar czf $OUT/spv.tgz -C /tmp spv
ls -la $OUT
grep -c vkstats $OUT/*.txt
