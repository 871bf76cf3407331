// Two one-row products of Q8_0, Q4_0 or Q5_0 weights in one dispatch
// (qmv_pair): common/qmv_pair_kernel.wgsl, its row groups' sums through
// workgroup memory. qmv_pair_sg.wgsl is the same kernel for devices with
// subgroups.

#include "lanes.wgsl"   // lane_xor_add, lane_xor (not called: SGW = 1)
#include "qmv_pair_kernel.wgsl"
