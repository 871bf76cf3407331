// Decode's Q4_K and Q5_K matrix-vector products (kmv4, kmv4q) and the Q6_K
// one on 8-bit A (kmv6q): common/kmv4_body.wgsl
// with its reduction in workgroup memory (rows_out.wgsl, SGW = 1). kmv4_sg.wgsl
// is the same kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add, lane_xor (not called)
#include "kmv4_body.wgsl"

// kmv6q_sums' reader of the Q6_K weights: B's 16-byte word i
fn q6v(i: u32) -> vec4<u32> { return B[i]; }
