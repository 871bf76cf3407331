// Matrix-vector products with Q4_K (or Q5_K) weights read 16 bytes at a time
// (and kmv6q, Q6_K weights on 8-bit A, at the end):
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
//
// With the override Q5 the weights are Q5_K (176-byte blocks, PXL_Q5_K):
// eleven words, the same header, two words of high bits (qh) and the same
// eight words of quants. Quant word c takes qh word c % 2, whose bytes hold
// the fifth bits of the same byte positions: bit 2 j for the low nibbles and
// bit 2 j + 1 for the high ones (kmv4 and kmv4q).

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c (here off_b on 16 bytes)

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override ROWS: u32 = 2u;    // rows of B per row group, sharing the loads of A (1 .. 8)
override Q5: bool = false;  // Q5_K weights (kmv4, kmv4q)

const NCOL: u32 = 1u;       // one row of A (norm_mv.wgsl)

var<workgroup> red: array<f32, WG * (ROWS + 2u)>;   // partial sums (rows_out.wgsl: ROWS + 1 rows; kmv4q's round_a: 3), sized by the overrides

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (nweight, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)
#include "rows_out.wgsl"   // group_n0, group_row; rows_out: the sums reduced, normalised and stored
#include "mv_sums.wgsl"   // MvSums: what the loops hand to rows_out
#include "bytes.wgsl"   // bytes4, k_scale_min
#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits (q8_round.wgsl)
#include "q8_round.wgsl"   // q8_scale, q8_pack16, q8_sum16, q8_amax16 (kmv4q)
#include "kmv6q_sums.wgsl"   // kmv6q_sums (reads the Q6_K weights through the including module's q6v)

// Invocation t's sums over its units of the ROWS rows of B starting at
// 16-byte words rows[r], with A's row at vec4 abase.
fn kmv4_sums(t: u32, abase: u32, rows: array<u32, 8>) -> MvSums {
    var acc: array<f32, 8>;    // the group's sums, one a row (zero-initialised)
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
            let wb = rows[r] + blk * select(9u, 11u, Q5);
            let hd = B[wb];
            let q = B[wb + select(1u, 3u, Q5) + c];
            let dm = unpack2x16float(hd.x);
            let sm0 = k_scale_min(hd.y, hd.z, hd.w, 2u * j);
            let sm1 = k_scale_min(hd.y, hd.z, hd.w, 2u * j + 1u);
            let a0 = dm.x * f32(sm0.x);
            let m0 = dm.y * f32(sm0.y);
            let a1 = dm.x * f32(sm1.x);
            let m1 = dm.y * f32(sm1.y);
            let lo = vec4<u32>(0x0f0f0f0fu);
            var ql = q & lo;          // the low nibbles, one a byte
            var qu = (q >> vec4<u32>(4u)) & lo;   // the high nibbles
            if (Q5) {
                let qh = B[wb + 1u + (c & 1u)];
                let one = vec4<u32>(0x01010101u);
                ql = ql | (((qh >> vec4<u32>(2u * j)) & one) << vec4<u32>(4u));
                qu = qu | (((qh >> vec4<u32>(2u * j + 1u)) & one) << vec4<u32>(4u));
            }
            var s = dot(a0 * bytes4(ql.x, 0.0) - m0, x0) + dot(a0 * bytes4(ql.y, 0.0) - m0, x1) +
                    dot(a0 * bytes4(ql.z, 0.0) - m0, x2) + dot(a0 * bytes4(ql.w, 0.0) - m0, x3);
            s = s + dot(a1 * bytes4(qu.x, 0.0) - m1, y0) + dot(a1 * bytes4(qu.y, 0.0) - m1, y1) +
                dot(a1 * bytes4(qu.z, 0.0) - m1, y2) + dot(a1 * bytes4(qu.w, 0.0) - m1, y3);
            acc[r] = acc[r] + s;
        }
    }
    return MvSums(acc, ss);
}

// The group's B rows, in 16-byte words (clamped to the last row)
fn kmv4_rows(n0: u32, z: u32) -> array<u32, 8> {
    var rows = group_rows(n0, z, p.row_bytes);
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = rows[r] >> 4u; }
    return rows;
}

@compute @workgroup_size(WG)
fn kmv4(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    let sums = kmv4_sums(t, (p.off_a + wid.z * p.stride_a) >> 2u, kmv4_rows(n0, wid.z));
    rows_out(lid.x, t, n0, wid.z, sums.acc, sums.ss);
}

// ---- kmv4q: the same product with A rounded to 8 bits (pxl_matmul_options.a_q8) ----
//
// Each workgroup first rounds its row of A into workgroup memory, 32 values
// to a scale d = amax / 127 (kept as an f16, as the CPU's 8-bit path and
// llama.cpp keep it) and 32 integers q = round(a / d) in [-127, 127], with
// d * sum(q) beside them; the product then reads 16 bytes of A per 16 bytes
// of B instead of 128, and multiplies four quants at a time with
// dot4I8Packed: a Q4_K value (d sc) q4 - dmin m times d_a qa sums per
// sub-block to (d sc) d_a (q4 . qa) - dmin m (d_a sum qa). With NORM the
// rounded values are A times the norm's weights, and inv (the epilogue's)
// scales the sums: the same integers as rounding the normalised row (the
// rounding is scale-free), with d rounded before instead of after the
// multiplication by inv.

override KQ: u32 = 256u;   // the largest K kmv4q takes (a multiple of 256): the size of aq and ad

var<workgroup> aq: array<vec4<u32>, KQ / 16u>;   // A rounded, 16 values a word (value 16 i + 4 w + b: word i, lane w, byte b)
var<workgroup> ad: array<vec4<f32>, KQ / 32u>;   // per 32 values: (d, d * sum q, sum of squares of A (NORM), 0)

// Rounds the workgroup's row of A, at vec4 abase, into aq and ad. Piece i is
// values 16 i .. 16 i + 15 (word aq[i]); the two pieces of a 32-block are
// neighbouring invocations, which trade their maxima and sums by subgroup
// shuffles (SGW > 1: the _sg builds; one barrier in all) or through `red`
// (3 WG floats, three barriers a pass). The same values either way. Every
// invocation must call it (barriers). Its latency comes before any weight
// is read: the shuffles and q8_scale's quick f16 rounding took 0.3-0.7 us
// off an H200's products (2048 x 2048 to 4096 x 14336, docs/BENCHMARKS.md).
fn round_a(lid: u32, abase: u32) {
    let np = p.K / 16u;
    for (var it = 0u; it < (np + WG - 1u) / WG; it = it + 1u) {
        let i = it * WG + lid;
        let pi = min(i, np - 1u);
        let aj = pi * 4u;   // the vec4 index within the row (nweight)
        var x0 = A[abase + aj];
        var x1 = A[abase + aj + 1u];
        var x2 = A[abase + aj + 2u];
        var x3 = A[abase + aj + 3u];
        var ss = 0.0;
        if (NORM) {
            ss = dot(x0, x0) + dot(x1, x1) + dot(x2, x2) + dot(x3, x3);
            x0 = nweight(x0, aj);
            x1 = nweight(x1, aj + 1u);
            x2 = nweight(x2, aj + 2u);
            x3 = nweight(x3, aj + 3u);
        }
        let m = q8_amax16(x0, x1, x2, x3);
        var mo: f32;    // the other piece's maximum, and sum of squares
        var sso: f32;
        if (SGW > 1u) {
            mo = lane_xor(m, 1u);
            sso = lane_xor(ss, 1u);
        } else {
            red[lid] = m;
            red[WG + lid] = ss;
            workgroupBarrier();
            mo = red[lid ^ 1u];
            sso = red[WG + (lid ^ 1u)];
        }
        let sc = q8_scale(max(m, mo));
        let d = sc.x;
        let w = q8_pack16(x0, x1, x2, x3, sc.y);
        let qs = f32(q8_sum16(w));   // exact: |qs| <= 16 * 127
        var qo: f32;
        if (SGW > 1u) {
            qo = lane_xor(qs, 1u);
        } else {
            red[2u * WG + lid] = qs;
            workgroupBarrier();
            qo = red[2u * WG + (lid ^ 1u)];
        }
        if (i < np) {
            aq[i] = w;
            if ((lid & 1u) == 0u) { ad[i >> 1u] = vec4<f32>(d, d * (qs + qo), ss + sso, 0.0); }
        }
        if (SGW == 1u) { workgroupBarrier(); }   // red is used again
    }
    if (SGW > 1u) { workgroupBarrier(); }
}

// Invocation t's sums over its units of the ROWS rows of B starting at
// 16-byte words rows[r], from A as round_a left it in aq and ad. With Q5 the
// weights are Q5_K: the fifth bits join the nibbles as integers (0 .. 31),
// and the sums are Q4_K's.
fn kmv4q_sums(t: u32, rows: array<u32, 8>) -> MvSums {
    var acc: array<f32, 8>;
    var ss = 0.0;   // the group's share of the sum of squares (NORM), summed over the group by rows_out
    if (NORM) {
        for (var b = t; b < p.K / 32u; b = b + TPR) { ss = ss + ad[b].z; }
    }
    let lo = vec4<u32>(0x0f0f0f0fu);
    let one = vec4<u32>(0x01010101u);
    let units = p.nb * 8u;
    for (var u = t; u < units; u = u + TPR) {
        let blk = u >> 3u;
        let c = u & 7u;
        let j = c >> 1u;
        let h = c & 1u;
        // A: values 256 blk + 64 j + 16 h + (0..15) (sub-block 2 j) and 32 further (2 j + 1)
        let qa0 = aq[blk * 16u + 4u * j + h];
        let qa1 = aq[blk * 16u + 4u * j + 2u + h];
        let e0 = ad[blk * 8u + 2u * j];
        let e1 = ad[blk * 8u + 2u * j + 1u];
        let hm = select(0.0, 1.0, h == 0u);   // the sub-blocks' min terms, once (in the h = 0 unit)
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let wb = rows[r] + blk * select(9u, 11u, Q5);
            let hd = B[wb];
            let q = B[wb + select(1u, 3u, Q5) + c];
            let dm = unpack2x16float(hd.x);
            let sm0 = k_scale_min(hd.y, hd.z, hd.w, 2u * j);
            let sm1 = k_scale_min(hd.y, hd.z, hd.w, 2u * j + 1u);
            var ql = q & lo;                        // sub-block 2 j's values, one a byte
            var qu = (q >> vec4<u32>(4u)) & lo;     // sub-block 2 j + 1's
            if (Q5) {
                let qh = B[wb + 1u + h];
                ql = ql | (((qh >> vec4<u32>(2u * j)) & one) << vec4<u32>(4u));
                qu = qu | (((qh >> vec4<u32>(2u * j + 1u)) & one) << vec4<u32>(4u));
            }
            let i0 = dot4I8Packed(ql.x, qa0.x) + dot4I8Packed(ql.y, qa0.y) + dot4I8Packed(ql.z, qa0.z) +
                     dot4I8Packed(ql.w, qa0.w);
            let i1 = dot4I8Packed(qu.x, qa1.x) + dot4I8Packed(qu.y, qa1.y) + dot4I8Packed(qu.z, qa1.z) +
                     dot4I8Packed(qu.w, qa1.w);
            let s = dm.x * (f32(sm0.x) * e0.x * f32(i0) + f32(sm1.x) * e1.x * f32(i1)) -
                    hm * dm.y * (f32(sm0.y) * e0.y + f32(sm1.y) * e1.y);
            acc[r] = acc[r] + s;
        }
    }
    return MvSums(acc, ss);
}

@compute @workgroup_size(WG)
fn kmv4q(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    round_a(lid.x, (p.off_a + wid.z * p.stride_a) >> 2u);
    let sums = kmv4q_sums(t, kmv4_rows(n0, wid.z));
    rows_out(lid.x, t, n0, wid.z, sums.acc, sums.ss);
}

// ---- kmv6q: Q6_K weights on A rounded to 8 bits, as kmv4q (kmv6q_sums.wgsl) ----
//
// B's rows as byte offsets (Q6_K rows sit on 2 bytes); the weights are read
// through q6v, which kmv4.wgsl and kmv4_sg.wgsl define over B.

@compute @workgroup_size(WG)
fn kmv6q(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    round_a(lid.x, (p.off_a + wid.z * p.stride_a) >> 2u);
    let sums = kmv6q_sums(t, TPR, group_rows(n0, wid.z, p.row_bytes));
    rows_out(lid.x, t, n0, wid.z, sums.acc, sums.ss);
}
