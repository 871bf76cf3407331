// Decode's Q6_K matrix-vector product (kmv6): common/kmv6_body.wgsl
// with its reduction in workgroup memory (rows_out.wgsl, SGW = 1). kmv6_sg.wgsl
// is the same kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add (not called)
#include "kmv6_body.wgsl"
