enable subgroups;

// kmv46.wgsl with its row groups' sums begun by subgroup shuffles
// (rows_out.wgsl, SGW > 1), for devices with subgroups of one fixed size.

#include "lanes_sg.wgsl"   // lane_xor_add, lane_xor
#include "kmv46_body.wgsl"
