// The kernel of qmv_xs.wgsl and qmv_xs_sg.wgsl (which include lanes.wgsl
// or lanes_sg.wgsl first): C = alpha * A . B^T + beta * C (beta = 0: C not
// read) for one row of A (M = 1, the decode case; batches along grid z), B
// a GGUF Q8_0, Q4_0 or Q5_0 matrix [N, K] (overrides Q4, and Q4 with Q5,
// pick the format; common/q_elems.wgsl reads the blocks) whose rows have
// 32 <= 2 * nb <= 4 * WG half blocks: common/qmv_xs_body.wgsl. With SWIGLU
// the gate rows at off_b and the up rows at off_u2, p.rpg / 2 outputs a row
// group; with BIAS the bias row (binding 5, from float off_s) added to C
// last; with NORM the rmsnorm of A (norm_mv.wgsl).

override Q4: bool = false;
override Q5: bool = false;   // with Q4: Q5_0
override BIAS: bool = false;
override SWIGLU: bool = false;
override WG: u32 = 256u;     // invocations per workgroup (power of two)

#include "qmv_xs_io.wgsl"   // A, B, C, p, BS (the bias row of BIAS: pxl_matmul_options.bias), norm_mv.wgsl, q_elems.wgsl

fn bword(i: u32, second: bool) -> u32 { return B[i]; }   // qmv_xs_body.wgsl's reader: one product here

#include "qmv_xs_body.wgsl"   // XT, XKCH, XRB, SGW, xs_rows

@compute @workgroup_size(WG)
fn qmv_xs(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let grp = (wid.y * nwg.x + wid.x) * (WG / XT) + lid.x / XT;
    xs_rows(lid.x, grp, (p.off_a + wid.z * p.stride_a) / 4u, Q4, Q5, false, p.N, p.off_b + wid.z * p.stride_b,
            p.row_bytes, p.off_c + wid.z * p.stride_c, p.off_s, BIAS, SWIGLU, p.off_u2 + wid.z * p.stride_b);
}
