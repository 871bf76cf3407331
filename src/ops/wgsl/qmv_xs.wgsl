// Decode's one-row products of Q8_0, Q4_0 and Q5_0 weights (qmv_xs):
// common/qmv_xs_kernel.wgsl, its row groups' sums through workgroup memory.
// qmv_xs_sg.wgsl is the same kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add, lane_xor (not called: SGW = 1)
#include "qmv_xs_kernel.wgsl"
