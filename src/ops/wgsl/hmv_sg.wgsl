enable subgroups;

// The f16 and bf16 matrix-vector product (hmv): common/hmv_body.wgsl
// with its row groups' sums begun by subgroup shuffles (rows_out.wgsl, SGW > 1),
// for devices with subgroups of one fixed size (pxl_mv_sgw in src/ops/matmul.c).

#include "lanes_sg.wgsl"   // lane_xor_add
#include "hmv_body.wgsl"
