# On the device machine: builds bench/probe_matvec_modes.c and runs it,
# with the GPU's clocks sampled every 50 ms beside it ($OUT/modes.txt,
# $OUT/clocks.csv).
source bench/device_setup.sh
cc -std=c11 -O2 -Iinclude bench/probe_matvec_modes.c build-dev/libpxl.a -lpng -lz -lpcre2-8 -lcholmod -lm -ldl -lpthread -o /tmp/modes || exit 1
export PXL_WEBGPU_LIB=$PWD/deps/dawn/libwebgpu_wrapper.so
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 50 > $OUT/clocks.csv 2>&1 &
SMI=$!
(timeout 150 /tmp/modes q4_k 14336 4096 5; timeout 100 /tmp/modes q8_0 14336 4096 3) 2>&1 | grep -v XDG | tee $OUT/modes.txt
kill $SMI
