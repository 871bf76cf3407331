// Decode's Q4_K and Q5_K matrix-vector products (kmv4, kmv4q): common/kmv4_body.wgsl
// with its reduction in workgroup memory (rows_out.wgsl, SGW = 1). kmv4_sg.wgsl
// is the same kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add (not called)
#include "kmv4_body.wgsl"
