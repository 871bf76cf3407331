// The f16 and bf16 matrix-vector product (hmv): common/hmv_body.wgsl
// with its reduction in workgroup memory (rows_out.wgsl, SGW = 1). hmv_sg.wgsl
// is the same kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add (not called)
#include "hmv_body.wgsl"
