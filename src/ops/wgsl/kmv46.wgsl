// Two products of one row of A in one dispatch (pxl_matmul_multi): the N
// rows of C at off_c from Q4_K or Q5_K weights (B, binding 1: kmv4's loop,
// or kmv4q's on A rounded to 8 bits), and the n2 rows at off_c2 from Q6_K
// weights (B6, binding 6, from byte off_b2: kmv6's loop, or with Q8A2
// kmv6q's on A rounded to 8 bits). A decoded token's
// Q and K weights with its V weights of another type, as a Q4_K_M file
// stores them: one dispatch instead of two. The first workgroups take the
// first product's row groups (TPR invocations, as kmv4 or kmv4q), the rest
// the second's (TPR2, as kmv6 or kmv6q), ROWS rows each, the norm (NORM) on both;
// BIAS and BIAS2 add each product's bias row (binding 5, from floats off_s
// and off_s2) as C is stored; one row of A, no batch, no SWIGLU. kmv46_sg.wgsl is the same
// kernel for devices with subgroups.

#include "lanes.wgsl"   // lane_xor_add, lane_xor (not called)
#include "kmv46_body.wgsl"
