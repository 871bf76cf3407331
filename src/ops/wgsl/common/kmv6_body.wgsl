// Matrix-vector products with Q6_K weights for one row of A (M = 1):
// C = alpha * A . B^T + beta * C (beta = 0: C not read), B [N, K] in
// 210-byte blocks of 256 elements (layout: PXL_Q6_K in include/pxl/ops.h;
// host side: src/ops/matmul_quant.c).
//
// The unit of work is 16 elements of one block: with u = 16 * block + 8h + i
// (h = 0, 1 the block half, i = 0..7), l = 4i .. 4i+3 and the elements
// 128h + 32g + l for g = 0..3, from ql bytes 64h + l (g = 0, 2: low, high
// nibble) and 64h + 32 + l (g = 1, 3), the high bits 2g, 2g+1 of qh bytes
// 32h + l, and scales 8h + l / 16 + 2g. Invocation t of a row group of TPR
// takes units t, t + TPR, ..., so neighbouring invocations read neighbouring
// words. Blocks sit at even offsets: a word at offset 2 mod 4 is assembled
// from two. Values are formed in the CPU decoder's order: (d * scale) * (q - 32).
// With NORM the loop also sums the squares of A and the epilogue applies the
// norm's inverse (rows_out.wgsl), as in kmv4.

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override ROWS: u32 = 2u;    // rows of B per row group, sharing the loads of A (1 .. 8)

const NCOL: u32 = 1u;       // one row of A (norm_mv.wgsl)

var<workgroup> red: array<f32, WG * (ROWS + 1u)>;   // partial sums (rows_out.wgsl); sized by the overrides, so that no more is zeroed than used

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (nweight, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)
#include "rows_out.wgsl"   // group_n0, group_row; rows_out: the sums reduced, normalised and stored
#include "bytes.wgsl"   // bytes4, half_of

#include "word_at.wgsl"   // word_at

// The signed scale byte k (0..3) of w, as a float.
fn sbyte(w: u32, k: u32) -> f32 { return f32(bitcast<i32>((w >> (8u * k)) << 24u) >> 24u); }

@compute @workgroup_size(WG)
fn kmv6(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    let abase = (p.off_a + wid.z * p.stride_a) >> 2u;   // in vec4
    var acc: array<f32, 8>;    // the group's sums, one a row (zero-initialised)
    var rows: array<u32, 8>;   // byte offsets of the group's B rows (clamped to the last row)
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = group_row(n0, r, wid.z, p.row_bytes); }
    var ss = 0.0;   // the sum of squares of A (NORM)
    let units = p.nb * 16u;
    for (var u = t; u < units; u = u + TPR) {
        let blk = u >> 4u;
        let h = (u >> 3u) & 1u;
        let i = u & 7u;
        let ai = abase + blk * 64u + 32u * h + i;   // elements 256 blk + 128 h + 4 i, then + 32 g
        let aj = ai - abase;   // the vec4 index within the row (nweight)
        var x0 = A[ai];
        var x1 = A[ai + 8u];
        var x2 = A[ai + 16u];
        var x3 = A[ai + 24u];
        if (NORM) {
            ss = ss + dot(x0, x0) + dot(x1, x1) + dot(x2, x2) + dot(x3, x3);
            x0 = nweight(x0, aj);
            x1 = nweight(x1, aj + 8u);
            x2 = nweight(x2, aj + 16u);
            x3 = nweight(x3, aj + 24u);
        }
        let k = i >> 2u;   // l / 16
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let base = rows[r] + blk * 210u;
            let qa = word_at(base + 64u * h + 4u * i);
            let qb = word_at(base + 64u * h + 32u + 4u * i);
            let qh = word_at(base + 128u + 32u * h + 4u * i);
            let s0 = word_at(base + 192u + 8u * h);   // scales 8h .. 8h + 3
            let s1 = word_at(base + 196u + 8u * h);   // 8h + 4 .. 8h + 7
            let d = half_of(B[(base + 208u) >> 2u], base + 208u);
            let v0 = (d * sbyte(s0, k)) * bytes4((qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u), 32.0);
            let v1 = (d * sbyte(s0, k + 2u)) * bytes4((qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u), 32.0);
            let v2 = (d * sbyte(s1, k)) * bytes4(((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u), 32.0);
            let v3 = (d * sbyte(s1, k + 2u)) * bytes4(((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u), 32.0);
            acc[r] = acc[r] + dot(v0, x0) + dot(v1, x1) + dot(v2, x2) + dot(v3, x3);
        }
    }
    rows_out(lid.x, t, n0, wid.z, acc, ss);
}
