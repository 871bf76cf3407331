// The kernel of qmv_pair.wgsl and qmv_pair_sg.wgsl (which include
// lanes.wgsl or lanes_sg.wgsl first): two one-row products of one A in one
// dispatch (pxl_matmul_multi), each
// with Q8_0, Q4_0 or Q5_0 weights: the N rows of C at off_c from B (binding
// 1, the format by overrides Q4 and Q5) and the n2 rows at off_c2 from B2
// (binding 6, from byte off_b2, the format by Q4B and Q5B), each row group
// as qmv_xs computes it alone (common/qmv_xs_body.wgsl: the
// same floats, since a row's sum depends only on XT, XKCH, XRB and SGW, which K
// and the device set). The first workgroups take the first product's row groups, the rest
// the second's, p.rpg rows each; the norm (NORM) on both; BIAS and BIAS2 add
// each product's bias row (binding 5, from floats off_s and off_s2) as C is
// stored. One row of A, no batch. A decoded token's Q and K weights with V
// weights of another type, as Qwen2.5's Q4_K_M file stores them (Q5_0 and
// Q8_0): one dispatch instead of two.

override Q4: bool = false;    // the first product's format: Q8_0, Q4_0 (Q4), Q5_0 (Q4 and Q5)
override Q5: bool = false;
override Q4B: bool = false;   // the second's
override Q5B: bool = false;
override BIAS: bool = false;    // the first product's bias row (off_s)
override BIAS2: bool = false;   // the second's (off_s2)
override WG: u32 = 256u;        // invocations per workgroup (power of two)

#include "qmv_xs_io.wgsl"   // A, B, C, p, BS (the bias rows of BIAS and BIAS2), norm_mv.wgsl, q_elems.wgsl

@group(0) @binding(6) var<storage, read> B2: array<u32>;

// qmv_xs_body.wgsl's reader: word i of B, or of B2 (second)
fn bword(i: u32, second: bool) -> u32 {
    if (second) { return B2[i]; }
    return B[i];
}

#include "qmv_xs_body.wgsl"   // XT, XKCH, XRB, xs_rows

@compute @workgroup_size(WG)
fn qmv_pair(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let f = wid.y * nwg.x + wid.x;
    let per = (WG / XT) * p.rpg;   // rows a workgroup
    let g1 = (p.N + per - 1u) / per;
    let xa = p.off_a / 4u;
    if (f < g1) {
        xs_rows(lid.x, f * (WG / XT) + lid.x / XT, xa, Q4, Q5, false, p.N, p.off_b, p.row_bytes, p.off_c, p.off_s,
                BIAS, false, 0u);
    } else {
        xs_rows(lid.x, (f - g1) * (WG / XT) + lid.x / XT, xa, Q4B, Q5B, true, p.n2, p.off_b2,
                p.nb * block_bytes_of(Q4B, Q5B), p.off_c2, p.off_s2, BIAS2, false, 0u);
    }
}
