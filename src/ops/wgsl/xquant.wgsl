// More GGUF block formats, one per value of override QT:
//   0 Q5_0 (32 elements, 22 bytes)    1 Q4_1 (32, 20)    2 Q5_1 (32, 24)
//   3 Q5_K (256, 176)                 4 Q2_K (256, 84)   5 Q3_K (256, 110)
// Matrix products C = alpha * A . B^T + beta * C (beta = 0: C not read) with
// B [N, K] in blocks (host side: src/ops/matmul_quant.c), and an embedding
// lookup from such a table (src/ops/embedding.c). Layouts: PXL_Q5_0,
// PXL_Q4_1, PXL_Q5_1, PXL_Q5_K, PXL_Q2_K, PXL_Q3_K in include/pxl/ops.h; CPU decoders in
// src/ops/quant32.c and src/ops/kquant.c.
//
// The unit of work is a sub-block of 32 elements: the whole block for the
// 32-element formats, 32s .. 32s+31 (s = 0..7) for the K-quants, decoded
// eight elements at a time by dec8s. Q5_0 (22 bytes) and Q3_K (110 bytes)
// blocks start at even byte offsets, so words are re-assembled from two
// neighbours (word_at); the others are word-aligned, and read the same way
// for simplicity. Values are formed in the CPU decoder's order: (q - 16) * d
// for Q5_0, q * d + m for Q4_1 / Q5_1, (d * sc) * q - dmin * m for Q5_K and
// Q2_K (these three may be fused into one rounding by the shader compiler),
// (d * (scale - 32)) * q for Q3_K. Q2_K and Q3_K have a scale per 16
// elements: a sub-block's scales are two pairs (sub_scales' xy for elements
// 0..15, zw for 16..31). Sub-block s = 4h + j of Q2_K / Q3_K is bit plane j
// (bits 2j, 2j + 1) of quant bytes 32h .. 32h+31 (Q3_K: with bit s of the
// hmask bytes 0..31 as the high bit, clear meaning minus 4).
//
// xmv (M <= 8): a row group of TPR invocations per ROWS columns of C;
// invocation t walks sub-blocks t, t + TPR, ... of the group's rows, decodes
// each of them once and uses it for all NCOL rows of A; the partial sums are
// reduced in workgroup memory.
// xmm (M > 8): 64 x 64 output tiles (tile_4x4.wgsl), 256 invocations each
// computing 4 x 4; K advances one sub-block (32) at a time.
// xemb: out[i, 8e .. 8e+7] = table[ids[i], 8e .. 8e+7], one invocation each.
// Batches run along grid z.

override QT: u32 = 0u;

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn block_bytes() -> u32 {
    switch QT {
        case 0u: { return 22u; }
        case 1u: { return 20u; }
        case 2u: { return 24u; }
        case 4u: { return 84u; }
        case 5u: { return 110u; }
        default: { return 176u; }
    }
}
fn subs() -> u32 { return select(1u, 8u, QT >= 3u); }   // sub-blocks of 32 per block

#include "word_at.wgsl"   // word_at
#include "bytes.wgsl"   // half_of, bytes4, k_scale_min
fn half_at(o: u32) -> f32 { return half_of(B[o >> 2u], o); }   // o even
fn byte_b(o: u32) -> u32 { return (word_at(o & ~1u) >> (8u * (o & 1u))) & 255u; }

// Bits 0..3 of h moved to bit 4 of bytes 0..3 (the fifth bits of four quants).
fn spread4(h: u32) -> u32 {
    return ((h & 1u) << 4u) | ((h & 2u) << 11u) | ((h & 4u) << 18u) | ((h & 8u) << 25u);
}

struct Eight {
    lo: vec4<f32>,   // elements 8c .. 8c+3 of the sub-block
    hi: vec4<f32>,   // 8c+4 .. 8c+7
}

// Q5_K: sub-block s's 6-bit scale (x) and min (y) from the 12 scale bytes
// (words w0 + 1 .. w0 + 3), packed as in Q4_K.
fn q5k_scale_min(w0: u32, s: u32) -> vec2<u32> { return k_scale_min(B[w0 + 1u], B[w0 + 2u], B[w0 + 3u], s); }

// Q3_K: 6-bit scale i (0..15) minus 32, from the 12 scale bytes at base + 96:
// low 4 bits from byte i % 8 (its high nibble for i >= 8), high 2 bits from
// byte 8 + i % 4, bits 2 (i / 4) and up.
fn q3_scale(base: u32, i: u32) -> f32 {
    let lo = (byte_b(base + 96u + (i & 7u)) >> (4u * (i >> 3u))) & 15u;
    let hi = (byte_b(base + 104u + (i & 3u)) >> (2u * (i >> 2u))) & 3u;
    return f32(i32(lo | (hi << 4u)) - 32);
}

// The scales of sub-block s of the block at byte `base`: x multiplies the
// quant, y is added (Q5_0: x = d, y unused; Q4_1 / Q5_1: d, m; Q5_K, Q2_K:
// d * sc, dmin * m, subtracted; Q3_K: d * (scale - 32), y unused). xy serve
// elements 0..15 of the sub-block, zw 16..31 (the same pair but for Q2_K /
// Q3_K, whose scales cover 16 elements).
fn sub_scales(base: u32, s: u32) -> vec4<f32> {
    if (QT == 3u) {
        let w0 = base >> 2u;
        let dm = unpack2x16float(B[w0]);
        let sm = q5k_scale_min(w0, s);
        let r = vec2<f32>(dm.x * f32(sm.x), dm.y * f32(sm.y));
        return vec4<f32>(r, r);
    }
    if (QT == 4u) {
        let dm = unpack2x16float(word_at(base + 80u));
        let b = word_at(base + 2u * s);   // scale bytes 2s, 2s + 1
        let s0 = b & 255u;
        let s1 = (b >> 8u) & 255u;
        return vec4<f32>(dm.x * f32(s0 & 15u), dm.y * f32(s0 >> 4u), dm.x * f32(s1 & 15u), dm.y * f32(s1 >> 4u));
    }
    if (QT == 5u) {
        let d = unpack2x16float(word_at(base + 108u)).x;
        return vec4<f32>(d * q3_scale(base, 2u * s), 0.0, d * q3_scale(base, 2u * s + 1u), 0.0);
    }
    let w = unpack2x16float(word_at(base));
    let r = select(w, vec2<f32>(w.x, 0.0), QT == 0u);
    return vec4<f32>(r, r);
}

// The integer quants of elements 8c .. 8c+3 (half 0) or 8c+4 .. 8c+7 (half 1)
// of sub-block s of the block at `base`, as four bytes of a word.
fn quant4(base: u32, s: u32, c: u32, half: u32) -> u32 {
    let j = 8u * c + 4u * half;               // element within the sub-block
    if (QT == 4u) {
        let q = word_at(base + 16u + 32u * (s >> 2u) + j);
        return (q >> (2u * (s & 3u))) & 0x03030303u;
    }
    if (QT == 5u) {
        let q = word_at(base + 32u + 32u * (s >> 2u) + j);
        let h = word_at(base + j);
        return ((q >> (2u * (s & 3u))) & 0x03030303u) | (((h >> s) & 0x01010101u) << 2u);
    }
    if (QT == 3u) {
        let q = word_at(base + 48u + 32u * (s >> 1u) + j);
        let h = word_at(base + 16u + j);
        return ((q >> (4u * (s & 1u))) & 0x0f0f0f0fu) | (((h >> s) & 0x01010101u) << 4u);
    }
    let qs = base + select(4u, 6u, QT == 0u) + select(0u, 4u, QT == 2u);   // Q5_0: 6, Q4_1: 4, Q5_1: 8
    let q = (word_at(qs + (j & 15u)) >> (4u * (j >> 4u))) & 0x0f0f0f0fu;
    if (QT == 1u) { return q; }
    let qh = word_at(base + select(4u, 2u, QT == 0u));
    return q | spread4((qh >> j) & 15u);
}

// Elements 8c .. 8c+7 of sub-block s of the block at byte `base`, with the
// sub-block's scales sc (sub_scales).
fn dec8s(base: u32, s: u32, c: u32, sc4: vec4<f32>) -> Eight {
    var r: Eight;
    let q0 = quant4(base, s, c, 0u);
    let q1 = quant4(base, s, c, 1u);
    let sc = select(sc4.xy, sc4.zw, c >= 2u);
    if (QT == 5u) {
        r.lo = sc.x * bytes4(q0, 4.0);
        r.hi = sc.x * bytes4(q1, 4.0);
    } else if (QT == 0u) {
        r.lo = bytes4(q0, 16.0) * sc.x;
        r.hi = bytes4(q1, 16.0) * sc.x;
    } else if (QT == 3u || QT == 4u) {
        r.lo = sc.x * bytes4(q0, 0.0) - sc.y;
        r.hi = sc.x * bytes4(q1, 0.0) - sc.y;
    } else {
        r.lo = bytes4(q0, 0.0) * sc.x + sc.y;
        r.hi = bytes4(q1, 0.0) * sc.x + sc.y;
    }
    return r;
}

fn dec8(base: u32, s: u32, c: u32) -> Eight {
    return dec8s(base, s, c, sub_scales(base, s));
}

#include "tile_4x4.wgsl"   // store_c, As, Bs, tile_fma32, tile_store

// ---- xmv ------------------------------------------------------------------------

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override NCOL: u32 = 1u;    // rows of A (1 .. 8)
override ROWS: u32 = 1u;    // rows of B per row group (NCOL * ROWS <= 8)

var<workgroup> red: array<f32, 2048>;   // WG * NCOL * ROWS partial sums

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (norm_inv, nscale, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)

@compute @workgroup_size(WG)
fn xmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = ((wid.y * nwg.x + wid.x) * (WG / TPR) + lid.x / TPR) * out_rows();
    let abase = p.off_a + wid.z * p.stride_a;
    let bb = block_bytes();
    let ns = subs();
    var acc: array<f32, 8>;   // [col * ROWS + r]
    for (var i = 0u; i < 8u; i = i + 1u) { acc[i] = 0.0; }
    var rows: array<u32, 8>;  // byte offsets of the group's B rows (clamped to the last)
    for (var r = 0u; r < ROWS; r = r + 1u) {
        rows[r] = select(p.off_b, p.off_u, w_is_up(r)) + wid.z * p.stride_b + min(w_out(n0, r), p.N - 1u) * p.row_bytes;
    }
    let nsub = p.nb * ns;
    var inv: array<f32, 8>;
    if (NORM) { inv = norm_inv(lid.x, abase / 4u); }
    for (var u = t; u < nsub; u = u + TPR) {
        let blk = u / ns;
        let s = u % ns;
        let k0 = blk * 32u * ns + 32u * s;
        var sc: array<vec4<f32>, 8>;
        for (var r = 0u; r < ROWS; r = r + 1u) { sc[r] = sub_scales(rows[r] + blk * bb, s); }
        for (var c = 0u; c < 4u; c = c + 1u) {
            var ev: array<Eight, 8>;
            for (var r = 0u; r < ROWS; r = r + 1u) { ev[r] = dec8s(rows[r] + blk * bb, s, c, sc[r]); }
            for (var col = 0u; col < NCOL; col = col + 1u) {
                let ai = (abase + col * p.K + k0 + 8u * c) >> 2u;
                let alo = nscale(A[ai], inv[col], (k0 + 8u * c) >> 2u);
                let ahi = nscale(A[ai + 1u], inv[col], ((k0 + 8u * c) >> 2u) + 1u);
                for (var r = 0u; r < ROWS; r = r + 1u) {
                    acc[col * ROWS + r] = acc[col * ROWS + r] + dot(ev[r].lo, alo) + dot(ev[r].hi, ahi);
                }
            }
        }
    }
    for (var j = 0u; j < NCOL * ROWS; j = j + 1u) { red[j * WG + lid.x] = acc[j]; }
    workgroupBarrier();
    for (var h = TPR / 2u; h > 0u; h = h >> 1u) {
        if (t < h) {
            for (var j = 0u; j < NCOL * ROWS; j = j + 1u) {
                red[j * WG + lid.x] = red[j * WG + lid.x] + red[j * WG + lid.x + h];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        for (var col = 0u; col < NCOL; col = col + 1u) {
            for (var r = 0u; r < out_rows(); r = r + 1u) {
                if (n0 + r < p.N) {
                    var v = red[(col * ROWS + r) * WG + lid.x];
                    if (SWIGLU) { v = silu_mul(v, red[(col * ROWS + r + ROWS / 2u) * WG + lid.x]); }
                    store_c(p.off_c + wid.z * p.stride_c + col * p.N + n0 + r, v);
                }
            }
        }
    }
}

// ---- xmm ------------------------------------------------------------------------

@compute @workgroup_size(16, 16)
fn xmm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    // loaders: row tid % 64 of the tile, elements 8 * (tid / 64) .. +8 of the sub-block
    let lr = tid % 64u;
    let lc = tid / 64u;
    let am = m0 + lr;
    let a_ok = am < p.M;
    let a_row = (p.off_a + wid.z * p.stride_a + min(am, p.M - 1u) * p.K) / 4u;   // vec4 index
    let bn = n0 + lr;
    let b_ok = bn < p.N;
    let b_row = p.off_b + wid.z * p.stride_b + min(bn, p.N - 1u) * p.row_bytes;
    let bb = block_bytes();
    let ns = subs();
    let sv = lr / 4u;
    let sc = lr % 4u;

    var acc: array<vec4<f32>, 4>;
    let nsub = p.nb * ns;
    for (var sb = 0u; sb < nsub; sb = sb + 1u) {
        let blk = sb / ns;
        let s = sb % ns;
        let kv = (blk * 32u * ns + 32u * s + 8u * lc) / 4u;
        let av0 = select(vec4<f32>(0.0), A[a_row + kv], a_ok);
        let av1 = select(vec4<f32>(0.0), A[a_row + kv + 1u], a_ok);
        let v = dec8(b_row + blk * bb, s, lc);
        let bv0 = select(vec4<f32>(0.0), v.lo, b_ok);
        let bv1 = select(vec4<f32>(0.0), v.hi, b_ok);
        for (var e = 0u; e < 4u; e = e + 1u) {
            As[(8u * lc + e) * 16u + sv][sc] = av0[e];
            As[(8u * lc + 4u + e) * 16u + sv][sc] = av1[e];
            Bs[(8u * lc + e) * 16u + sv][sc] = bv0[e];
            Bs[(8u * lc + 4u + e) * 16u + sv][sc] = bv1[e];
        }
        workgroupBarrier();
        tile_fma32(&acc, tx, ty);
        workgroupBarrier();
    }
    tile_store(acc, p.off_c + wid.z * p.stride_c, m0, n0, tx, ty);
}

// ---- xemb -----------------------------------------------------------------------
// Bindings: ids at 0, the table at 1 (B), out at 2 (C). Params: M = number of
// ids, N = rows of the table (V), K = D, row_bytes, off_a / off_b / off_c the
// view offsets of ids, table (bytes) and out. An id outside [0, V) gives NaN.

@group(0) @binding(0) var<storage, read> ids: array<i32>;

@compute @workgroup_size(WG)
fn xemb(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = (wid.y * nwg.x + wid.x) * WG + lid.x;   // a group of 8 outputs
    let per_row = p.K / 8u;
    if (e >= p.M * per_row) { return; }
    let i = e / per_row;
    let j = (e % per_row) * 8u;                     // first element
    let o = p.off_c + i * p.K + j;
    let id = ids[p.off_a + i];
    if (id < 0 || u32(id) >= p.N) {
        // a quiet NaN, built from a runtime value (a constant NaN is a WGSL error)
        let nan = bitcast<f32>(0x7fc00000u | (p.N & 0u));
        for (var c = 0u; c < 8u; c = c + 1u) { C[o + c] = nan; }
        return;
    }
    let ns = subs();
    let blk = j / (32u * ns);
    let s = (j % (32u * ns)) / 32u;
    let c = (j % 32u) / 8u;
    let v = dec8(p.off_b + u32(id) * p.row_bytes + blk * block_bytes(), s, c);
    for (var q = 0u; q < 4u; q = q + 1u) {
        C[o + q] = v.lo[q];
        C[o + 4u + q] = v.hi[q];
    }
}
