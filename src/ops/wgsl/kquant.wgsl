// The GGUF K-quants, Q4_K (override KQ6 = false) and Q6_K (KQ6 = true):
// matrix products C = alpha * A . B^T + beta * C (beta = 0: C not read) with
// B [N, K] in 256-element blocks (host side: src/ops/matmul_quant.c), and an
// embedding lookup from such a table (src/ops/embedding.c). Layouts: see
// PXL_Q4_K and PXL_Q6_K in include/pxl/ops.h.
//
// The unit of work is a sub-block of 32 elements, 32s .. 32s+31 of a block
// (s = 0..7), decoded eight elements at a time by dec8:
//   Q4_K: sub-block s is the low (s even) or high (s odd) nibbles of bytes
//         32 * (s / 2) .. +31 of the quants; one 6-bit scale and min each.
//   Q6_K: sub-block s = 4h + g is, for l = 0..31, element 128h + 32g + l: the
//         low (g < 2) or high nibble of ql[64h + 32(g % 2) + l] and bits
//         2g, 2g+1 of qh[32h + l]; two int8 scales (l < 16, l >= 16).
// Q4_K blocks are 144 bytes (word-aligned); Q6_K blocks 210 (even offsets),
// so their words are re-assembled from two neighbours (word_at). Values are
// formed in the CPU decoder's order: (d * scale) * q, minus dmin * min for
// Q4_K.
//
// kmv (M <= 8): a row group of TPR invocations per column n of C; invocation
// t walks units t, t + TPR, ... of ROWS rows of B at once, a unit being the
// sub-blocks that share quant bytes (Q4_K: a pair, 64 elements; Q6_K: a half
// block, 128), for all NCOL rows of A (each vector of A loaded once for the
// ROWS rows); the group's partial sums are reduced in workgroup memory.
// kmm (M > 8): 64 x 64 output tiles, 256 invocations each computing 4 x 4; K
// advances one sub-block (32) at a time through workgroup memory.
// kemb: out[i, 8e .. 8e+7] = table[ids[i], 8e .. 8e+7], one invocation each.

override KQ6: bool = false;

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn block_bytes() -> u32 { return select(144u, 210u, KQ6); }

#include "word_at.wgsl"   // word_at
#include "bytes.wgsl"   // half_of, bytes4, k_scale_min
fn half_at(o: u32) -> f32 { return half_of(B[o >> 2u], o); }   // o even

struct Eight {
    lo: vec4<f32>,   // elements 8c .. 8c+3 of the sub-block
    hi: vec4<f32>,   // 8c+4 .. 8c+7
}

// Q4_K: sub-block s's 6-bit scale (x) and min (y) from the 12 scale bytes.
fn q4k_scale_min(w0: u32, s: u32) -> vec2<u32> { return k_scale_min(B[w0 + 1u], B[w0 + 2u], B[w0 + 3u], s); }

// The scales of sub-block s of the block at byte `base`: Q4_K: x = d * sc,
// y = dmin * m (one pair for all 32 elements); Q6_K: x = d * scale for
// elements 0..15, y for 16..31.
fn sub_scales(base: u32, s: u32) -> vec2<f32> {
    if (KQ6) {
        let i = base + 192u + 8u * (s >> 2u) + 2u * (s & 3u);   // even: both scale bytes in one word
        let w = B[i >> 2u] >> (8u * (i & 3u));
        let d = half_at(base + 208u);
        return vec2<f32>(d * f32(bitcast<i32>(w << 24u) >> 24u), d * f32(bitcast<i32>((w >> 8u) << 24u) >> 24u));
    }
    let w0 = base >> 2u;
    let dm = unpack2x16float(B[w0]);
    let sm = q4k_scale_min(w0, s);
    return vec2<f32>(dm.x * f32(sm.x), dm.y * f32(sm.y));
}

// Elements 8c .. 8c+7 of sub-block s of the block at byte `base` of B, with
// the sub-block's scales sc (sub_scales).
fn dec8s(base: u32, s: u32, c: u32, sc: vec2<f32>) -> Eight {
    var r: Eight;
    if (KQ6) {
        let h = s >> 2u;
        let g = s & 3u;
        let lo = base + 64u * h + 32u * (g & 1u) + 8u * c;
        let ho = base + 128u + 32u * h + 8u * c;
        let nsh = 4u * (g >> 1u);
        let hsh = 2u * g;
        let v0 = ((word_at(lo) >> nsh) & 0x0f0f0f0fu) | (((word_at(ho) >> hsh) & 0x03030303u) << 4u);
        let v1 = ((word_at(lo + 4u) >> nsh) & 0x0f0f0f0fu) | (((word_at(ho + 4u) >> hsh) & 0x03030303u) << 4u);
        let a = select(sc.x, sc.y, c >= 2u);
        r.lo = a * bytes4(v0, 32.0);
        r.hi = a * bytes4(v1, 32.0);
    } else {
        let qw = (base >> 2u) + 4u + 8u * (s >> 1u) + 2u * c;
        let sh = 4u * (s & 1u);
        r.lo = sc.x * bytes4((B[qw] >> sh) & 0x0f0f0f0fu, 0.0) - sc.y;
        r.hi = sc.x * bytes4((B[qw + 1u] >> sh) & 0x0f0f0f0fu, 0.0) - sc.y;
    }
    return r;
}

// Elements 8c .. 8c+7 of sub-block s of the block at byte `base` of B.
fn dec8(base: u32, s: u32, c: u32) -> Eight {
    return dec8s(base, s, c, sub_scales(base, s));
}

#include "tile_4x4.wgsl"   // store_c, and the qmm/kmm tile helpers (see ---- kmm)

// ---- kmv ------------------------------------------------------------------------

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override NCOL: u32 = 1u;    // rows of A (1 .. 8)
override ROWS: u32 = 1u;    // rows of B per row group, sharing the loads of A (NCOL * ROWS <= 8)

var<workgroup> red: array<f32, 2048>;   // WG * NCOL * ROWS partial sums

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (norm_inv, nscale, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)

@compute @workgroup_size(WG)
fn kmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = ((wid.y * nwg.x + wid.x) * (WG / TPR) + lid.x / TPR) * out_rows();
    let abase = p.off_a + wid.z * p.stride_a;
    let bb = block_bytes();
    var acc: array<f32, 8>;   // [col * ROWS + r]
    for (var i = 0u; i < 8u; i = i + 1u) { acc[i] = 0.0; }
    var rows: array<u32, 8>;  // byte offsets of the group's B rows (clamped to the last)
    for (var r = 0u; r < ROWS; r = r + 1u) {
        rows[r] = select(p.off_b, p.off_u, w_is_up(r)) + wid.z * p.stride_b + min(w_out(n0, r), p.N - 1u) * p.row_bytes;
    }
    var inv: array<f32, 8>;
    if (NORM) { inv = norm_inv(lid.x, abase / 4u); }
    if (!KQ6) {
        // Q4_K: an invocation takes both sub-blocks of a quant byte run (2p and
        // 2p + 1: low and high nibbles of the same 32 bytes), so each word is read once
        let npairs = p.nb * 4u;
        for (var up = t; up < npairs; up = up + TPR) {
            let blk = up >> 2u;
            let pr = up & 3u;
            var sc0: array<vec2<f32>, 8>;
            var sc1: array<vec2<f32>, 8>;
            for (var r = 0u; r < ROWS; r = r + 1u) {
                let base = rows[r] + blk * 144u;
                sc0[r] = sub_scales(base, 2u * pr);
                sc1[r] = sub_scales(base, 2u * pr + 1u);
            }
            let k0 = blk * 256u + 64u * pr;
            for (var i = 0u; i < 8u; i = i + 1u) {
                for (var col = 0u; col < NCOL; col = col + 1u) {
                    let ai = (abase + col * p.K + k0 + 4u * i) >> 2u;
                    let alo = nscale(A[ai], inv[col], (k0 + 4u * i) >> 2u);
                    let ahi = nscale(A[ai + 8u], inv[col], ((k0 + 4u * i) >> 2u) + 8u);
                    for (var r = 0u; r < ROWS; r = r + 1u) {
                        let w = B[((rows[r] + blk * 144u) >> 2u) + 4u + 8u * pr + i];
                        let lo = sc0[r].x * bytes4(w & 0x0f0f0f0fu, 0.0) - sc0[r].y;
                        let hi = sc1[r].x * bytes4((w >> 4u) & 0x0f0f0f0fu, 0.0) - sc1[r].y;
                        acc[col * ROWS + r] = acc[col * ROWS + r] + dot(lo, alo) + dot(hi, ahi);
                    }
                }
            }
        }
    }
    if (KQ6) {
        // Q6_K: an invocation takes a half block (128 elements, sub-blocks 4h ..
        // 4h + 3), which share their quant bytes: ql[l] holds groups 0 and 2,
        // ql[l + 32] groups 1 and 3, qh[l] the high bits of all four
        let nhalf = p.nb * 2u;
        for (var uh = t; uh < nhalf; uh = uh + TPR) {
            let blk = uh >> 1u;
            let h = uh & 1u;
            let k0 = blk * 256u + 128u * h;
            for (var i = 0u; i < 8u; i = i + 1u) {
                let l = 4u * i;
                let sh = 8u * (i >> 2u);                     // scale index l / 16 within each pair
                for (var col = 0u; col < NCOL; col = col + 1u) {
                    let ai = (abase + col * p.K + k0 + l) >> 2u;
                    let j = (k0 + l) >> 2u;
                    let x0 = nscale(A[ai], inv[col], j);
                    let x1 = nscale(A[ai + 8u], inv[col], j + 8u);
                    let x2 = nscale(A[ai + 16u], inv[col], j + 16u);
                    let x3 = nscale(A[ai + 24u], inv[col], j + 24u);
                    for (var r = 0u; r < ROWS; r = r + 1u) {
                        let base = rows[r] + blk * bb;
                        let d = half_at(base + 208u);
                        let s0 = word_at(base + 192u + 8u * h);   // scales 8h .. 8h + 3
                        let s1 = word_at(base + 196u + 8u * h);   // 8h + 4 .. 8h + 7
                        let qa = word_at(base + 64u * h + l);
                        let qb = word_at(base + 64u * h + 32u + l);
                        let qh = word_at(base + 128u + 32u * h + l);
                        let a0 = d * f32(bitcast<i32>((s0 >> sh) << 24u) >> 24u);
                        let a1 = d * f32(bitcast<i32>((s0 >> (sh + 16u)) << 24u) >> 24u);
                        let a2 = d * f32(bitcast<i32>((s1 >> sh) << 24u) >> 24u);
                        let a3 = d * f32(bitcast<i32>((s1 >> (sh + 16u)) << 24u) >> 24u);
                        let v0 = a0 * bytes4((qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u), 32.0);
                        let v1 = a1 * bytes4((qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u), 32.0);
                        let v2 = a2 * bytes4(((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u), 32.0);
                        let v3 = a3 * bytes4(((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u), 32.0);
                        acc[col * ROWS + r] = acc[col * ROWS + r] + dot(v0, x0) + dot(v1, x1) + dot(v2, x2) +
                                              dot(v3, x3);
                    }
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

// ---- kmm ------------------------------------------------------------------------

// As, Bs (k-major tiles in workgroup memory), tile_fma32, tile_store

@compute @workgroup_size(16, 16)
fn kmm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
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
    let sv = lr / 4u;
    let sc = lr % 4u;

    var acc: array<vec4<f32>, 4>;
    let nsub = p.nb * 8u;
    for (var sb = 0u; sb < nsub; sb = sb + 1u) {
        let blk = sb >> 3u;
        let s = sb & 7u;
        let kv = (blk * 256u + 32u * s + 8u * lc) / 4u;
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

// ---- kemb -----------------------------------------------------------------------
// Bindings: ids at 0, the table at 1 (B), out at 2 (C). Params: M = number of
// ids, N = rows of the table (V), K = D, row_bytes, off_a / off_b / off_c the
// view offsets of ids, table (bytes) and out. An id outside [0, V) gives NaN.

@group(0) @binding(0) var<storage, read> ids: array<i32>;

@compute @workgroup_size(WG)
fn kemb(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
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
    let blk = j / 256u;
    let s = (j % 256u) / 32u;
    let c = (j % 32u) / 8u;
    let v = dec8(p.off_b + u32(id) * p.row_bytes + blk * block_bytes(), s, c);
    for (var q = 0u; q < 4u; q = q + 1u) {
        C[o + q] = v.lo[q];
        C[o + 4u + q] = v.hi[q];
    }
}
