// Matrix-vector products with Q4_K weights read 16 bytes at a time:
// C = alpha * A . B^T + beta * C (beta = 0: C not read) for one row of A
// (M = 1), B [N, K] in 144-byte blocks of 256 elements (layout: PXL_Q4_K in
// include/pxl/ops.h; host side: src/ops/matmul_quant.c).
//
// A block is nine 16-byte words: the header (d, dmin as f16, then the 12
// scale bytes) and eight words of quants. Quant word c (0..7) holds bytes
// 16c .. 16c+15 of the 128: with j = c / 2 and h = c % 2, their low nibbles
// are elements 64j + 16h + (0..15) and their high nibbles elements
// 64j + 32 + 16h + (0..15) (sub-blocks 2j and 2j + 1). The unit of work is
// one quant word of one block for ROWS rows of B: invocation t of a row group
// of TPR takes units t, t + TPR, ..., so neighbouring invocations read
// neighbouring words and the block's 256 floats of A. Values are formed in the
// CPU decoder's order: (d * scale) * q - dmin * min. With NORM the loop also
// sums the squares of A, which each row group reads whole, and the epilogue
// applies the norm's inverse (rows_out.wgsl): no pass over A comes first.

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c (here off_b on 16 bytes)

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override ROWS: u32 = 2u;    // rows of B per row group, sharing the loads of A (1 .. 8)

const NCOL: u32 = 1u;       // one row of A (norm_mv.wgsl)

var<workgroup> red: array<f32, 2304>;   // WG * (ROWS + 1) partial sums (rows_out.wgsl)

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (nweight, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)
#include "rows_out.wgsl"   // group_n0, group_row; rows_out: the sums reduced, normalised and stored
#include "bytes.wgsl"   // bytes4, k_scale_min

@compute @workgroup_size(WG)
fn kmv4(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    let abase = (p.off_a + wid.z * p.stride_a) >> 2u;   // in vec4
    var acc: array<f32, 8>;    // the group's sums, one a row (zero-initialised)
    var rows: array<u32, 8>;   // the group's B rows, in 16-byte words (clamped to the last row)
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = group_row(n0, r, wid.z, p.row_bytes) >> 4u; }
    var ss = 0.0;   // the sum of squares of A (NORM)
    let units = p.nb * 8u;
    for (var u = t; u < units; u = u + TPR) {
        let blk = u >> 3u;
        let c = u & 7u;
        let j = c >> 1u;
        // A: elements 256 blk + 64 j + 16 (c % 2) + (0..15), and 32 further
        let ai = abase + blk * 64u + 16u * j + 4u * (c & 1u);
        let aj = ai - abase;   // the vec4 index within the row (nweight)
        var x0 = A[ai];
        var x1 = A[ai + 1u];
        var x2 = A[ai + 2u];
        var x3 = A[ai + 3u];
        var y0 = A[ai + 8u];
        var y1 = A[ai + 9u];
        var y2 = A[ai + 10u];
        var y3 = A[ai + 11u];
        if (NORM) {
            ss = ss + dot(x0, x0) + dot(x1, x1) + dot(x2, x2) + dot(x3, x3) + dot(y0, y0) + dot(y1, y1) +
                 dot(y2, y2) + dot(y3, y3);
            x0 = nweight(x0, aj);
            x1 = nweight(x1, aj + 1u);
            x2 = nweight(x2, aj + 2u);
            x3 = nweight(x3, aj + 3u);
            y0 = nweight(y0, aj + 8u);
            y1 = nweight(y1, aj + 9u);
            y2 = nweight(y2, aj + 10u);
            y3 = nweight(y3, aj + 11u);
        }
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let wb = rows[r] + blk * 9u;
            let hd = B[wb];
            let q = B[wb + 1u + c];
            let dm = unpack2x16float(hd.x);
            let sm0 = k_scale_min(hd.y, hd.z, hd.w, 2u * j);
            let sm1 = k_scale_min(hd.y, hd.z, hd.w, 2u * j + 1u);
            let a0 = dm.x * f32(sm0.x);
            let m0 = dm.y * f32(sm0.y);
            let a1 = dm.x * f32(sm1.x);
            let m1 = dm.y * f32(sm1.y);
            let lo = vec4<u32>(0x0f0f0f0fu);
            var s = dot(a0 * bytes4(q.x & lo.x, 0.0) - m0, x0) + dot(a0 * bytes4(q.y & lo.x, 0.0) - m0, x1) +
                    dot(a0 * bytes4(q.z & lo.x, 0.0) - m0, x2) + dot(a0 * bytes4(q.w & lo.x, 0.0) - m0, x3);
            s = s + dot(a1 * bytes4((q.x >> 4u) & lo.x, 0.0) - m1, y0) + dot(a1 * bytes4((q.y >> 4u) & lo.x, 0.0) - m1, y1) +
                dot(a1 * bytes4((q.z >> 4u) & lo.x, 0.0) - m1, y2) + dot(a1 * bytes4((q.w >> 4u) & lo.x, 0.0) - m1, y3);
            acc[r] = acc[r] + s;
        }
    }
    rows_out(lid.x, t, n0, wid.z, acc, ss);
}
