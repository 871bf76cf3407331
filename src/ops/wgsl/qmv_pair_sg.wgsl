enable subgroups;

// Two one-row products of Q8_0, Q4_0 or Q5_0 weights in one dispatch
// (qmv_pair): common/qmv_pair_kernel.wgsl, its row groups' sums begun by
// subgroup shuffles (qmv_xs_body.wgsl, SGW > 1), for devices with subgroups
// of one fixed size (pxl_mv_sgw in src/ops/matmul.c).

#include "lanes_sg.wgsl"   // lane_xor_add, lane_xor
#include "qmv_pair_kernel.wgsl"
