enable subgroups;

// Decode's Q4_K and Q5_K matrix-vector products (kmv4, kmv4q) and the Q6_K
// one on 8-bit A (kmv6q): common/kmv4_body.wgsl
// with its row groups' sums begun by subgroup shuffles (rows_out.wgsl, SGW > 1),
// for devices with subgroups of one fixed size (pxl_mv_sgw in src/ops/matmul.c).

#include "lanes_sg.wgsl"   // lane_xor_add, lane_xor
#include "kmv4_body.wgsl"

// kmv6q_sums' reader of the Q6_K weights: B's 16-byte word i
fn q6v(i: u32) -> vec4<u32> { return B[i]; }
