enable subgroups;

// Decode's Q6_K matrix-vector product (kmv6): common/kmv6_body.wgsl
// with its row groups' sums begun by subgroup shuffles (rows_out.wgsl, SGW > 1),
// for devices with subgroups of one fixed size (pxl_mv_sgw in src/ops/matmul.c).

#include "lanes_sg.wgsl"   // lane_xor_add
#include "kmv6_body.wgsl"
