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
// kmm (M > 8): 64 x 64 output tiles, 256 invocations in four slices of 64,
// each invocation computing 8 x 8 outputs over a quarter of each sub-block;
// K advances one sub-block (32) at a time through workgroup memory.
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

// The words of B that elements 8c .. 8c+7 of sub-block s need (fetch8),
// decoded by unpack8 once they have arrived, so that kmm can issue a step's
// loads one step ahead. Q4_K: a = d and dmin, b, c, d = the three scale
// words, e, f = the quant words. Q6_K: a, b, c = the words that cover the
// 8 low-nibble bytes, d, e, f those of the 8 high-bit bytes (an even offset:
// from two or three words), g = the word with the two scale bytes, h = the
// word with d.
struct Raw8 {
    a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, g: u32, h: u32,
}

fn fetch8(base: u32, s: u32, c: u32) -> Raw8 {
    var r: Raw8;
    if (KQ6) {
        let li = (base + 64u * (s >> 2u) + 32u * (s & 1u) + 8u * c) >> 2u;
        let hi = (base + 128u + 32u * (s >> 2u) + 8u * c) >> 2u;
        r.a = B[li];
        r.b = B[li + 1u];
        r.c = B[li + 2u];   // past the end for the last block: clamped, and not used then
        r.d = B[hi];
        r.e = B[hi + 1u];
        r.f = B[hi + 2u];
        r.g = B[(base + 192u + 8u * (s >> 2u) + 2u * (s & 3u)) >> 2u];
        r.h = B[(base + 208u) >> 2u];
    } else {
        let w0 = base >> 2u;
        let qw = w0 + 4u + 8u * (s >> 1u) + 2u * c;
        r.a = B[w0];
        r.b = B[w0 + 1u];
        r.c = B[w0 + 2u];
        r.d = B[w0 + 3u];
        r.e = B[qw];
        r.f = B[qw + 1u];
    }
    return r;
}

// The word at byte 2 of x (y the next word) when odd, else x itself.
fn shift16(x: u32, y: u32, odd: bool) -> u32 { return select(x, (x >> 16u) | (y << 16u), odd); }

// Elements 8c .. 8c+7 of sub-block s of the block at byte `base` of B, from
// its words r (fetch8).
fn unpack8(r: Raw8, base: u32, s: u32, c: u32) -> Eight {
    var e: Eight;
    if (KQ6) {
        let odd = (base & 2u) != 0u;   // every offset fetch8 used is base plus a multiple of 4, save the scales'
        let g = s & 3u;
        let nsh = 4u * (g >> 1u);
        let hsh = 2u * g;
        let v0 = ((shift16(r.a, r.b, odd) >> nsh) & 0x0f0f0f0fu) | (((shift16(r.d, r.e, odd) >> hsh) & 0x03030303u) << 4u);
        let v1 = ((shift16(r.b, r.c, odd) >> nsh) & 0x0f0f0f0fu) | (((shift16(r.e, r.f, odd) >> hsh) & 0x03030303u) << 4u);
        let i = base + 192u + 8u * (s >> 2u) + 2u * (s & 3u);
        let w = r.g >> (8u * (i & 3u));
        let d = half_of(r.h, base + 208u);
        let byte = select(w << 24u, (w >> 8u) << 24u, c >= 2u);   // elements 0..15: the first scale byte
        let a = d * f32(bitcast<i32>(byte) >> 24u);
        e.lo = a * bytes4(v0, 32.0);
        e.hi = a * bytes4(v1, 32.0);
    } else {
        let dm = unpack2x16float(r.a);
        let sm = k_scale_min(r.b, r.c, r.d, s);
        let x = dm.x * f32(sm.x);
        let y = dm.y * f32(sm.y);
        let sh = 4u * (s & 1u);
        e.lo = x * bytes4((r.e >> sh) & 0x0f0f0f0fu, 0.0) - y;
        e.hi = x * bytes4((r.f >> sh) & 0x0f0f0f0fu, 0.0) - y;
    }
    return e;
}

// Elements 8c .. 8c+7 of sub-block s of the block at byte `base` of B.
fn dec8(base: u32, s: u32, c: u32) -> Eight {
    return unpack8(fetch8(base, s, c), base, s, c);
}

#include "tile_4x4.wgsl"   // store_c and the tiles As, Bs (kmm)

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

// The 64 x 64 tile of C of workgroup (wid.x, wid.y) = (n / 64, m / 64). Per
// step of 32 values of k (one sub-block of B), invocation (g, j), g = slice
// 0..3, j = 0..63, loads k = 8g .. 8g+7 of row j of both tiles (two vec4s of
// A, one dec8 of B) into As and Bs (tile_4x4.wgsl: k-major, row k holds 16
// vec4s of m or n), and then adds the products over those same 8 values of k
// to its 8 x 8 outputs: rows 4ty .. 4ty+3 and 32+4ty .. 32+4ty+3, columns
// likewise with tx (j = 8ty + tx), so the invocations of a subgroup read few
// distinct vec4s of the tiles. The next step's global loads are issued before
// this step's products. At the end slices 3, 2 and 1 add their sums into
// slice 0's through As and Bs, and slice 0 stores the tile.

// Four values of k (k0 .. k0+3) of row (4 sv + sc) of the k-major tiles.
fn put_a(k0: u32, sv: u32, sc: u32, v: vec4<f32>) {
    As[k0 * 16u + sv][sc] = v.x;
    As[(k0 + 1u) * 16u + sv][sc] = v.y;
    As[(k0 + 2u) * 16u + sv][sc] = v.z;
    As[(k0 + 3u) * 16u + sv][sc] = v.w;
}
fn put_b(k0: u32, sv: u32, sc: u32, v: vec4<f32>) {
    Bs[k0 * 16u + sv][sc] = v.x;
    Bs[(k0 + 1u) * 16u + sv][sc] = v.y;
    Bs[(k0 + 2u) * 16u + sv][sc] = v.z;
    Bs[(k0 + 3u) * 16u + sv][sc] = v.w;
}

// Row m of C at columns n .. n+3 (v0) and n+32 .. n+35 (v1), inside [M, N].
fn put_c(base_c: u32, m: u32, n: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (m >= p.M) { return; }
    for (var c = 0u; c < 4u; c = c + 1u) {
        if (n + c < p.N) { store_c(base_c + m * p.N + n + c, v0[c]); }
        if (n + 32u + c < p.N) { store_c(base_c + m * p.N + n + 32u + c, v1[c]); }
    }
}

@compute @workgroup_size(256)
fn kmm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let g = lid.x / 64u;
    let j = lid.x % 64u;
    let tx = j % 8u;
    let ty = j / 8u;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    let am = m0 + j;
    let a_ok = am < p.M;
    let a_row = (p.off_a + wid.z * p.stride_a + min(am, p.M - 1u) * p.K) / 4u;   // vec4 index
    let bn = n0 + j;
    let b_ok = bn < p.N;
    let b_row = p.off_b + wid.z * p.stride_b + min(bn, p.N - 1u) * p.row_bytes;
    let bb = block_bytes();
    let sv = j / 4u;
    let sc = j % 4u;
    let z = vec4<f32>(0.0);

    var acc: array<vec4<f32>, 16>;   // [8 * half_m + 2 * row + half_n]: constant indices only
    var x0 = A[a_row + 2u * g];
    var x1 = A[a_row + 2u * g + 1u];
    var r = fetch8(b_row, 0u, g);
    let nsub = p.nb * 8u;
    for (var sb = 0u; sb < nsub; sb = sb + 1u) {
        let e = unpack8(r, b_row + (sb >> 3u) * bb, sb & 7u, g);
        put_a(8u * g, sv, sc, select(z, x0, a_ok));
        put_a(8u * g + 4u, sv, sc, select(z, x1, a_ok));
        put_b(8u * g, sv, sc, select(z, e.lo, b_ok));
        put_b(8u * g + 4u, sv, sc, select(z, e.hi, b_ok));
        workgroupBarrier();
        let nx = sb + 1u;
        if (nx < nsub) {
            x0 = A[a_row + 8u * nx + 2u * g];
            x1 = A[a_row + 8u * nx + 2u * g + 1u];
            r = fetch8(b_row + (nx >> 3u) * bb, nx & 7u, g);
        }
        for (var kk = 0u; kk < 8u; kk = kk + 1u) {
            let k = 8u * g + kk;
            let a0 = As[k * 16u + ty];
            let a1 = As[k * 16u + 8u + ty];
            let b0 = Bs[k * 16u + tx];
            let b1 = Bs[k * 16u + 8u + tx];
            acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
            acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
            acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]);
            acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]);
            acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
            acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
            acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
            acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
            acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
            acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
            acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
            acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
            acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
            acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
            acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
            acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
        }
        workgroupBarrier();
    }
    // slices 3, 2, 1 in turn hand their sums to slice 0 through As and Bs
    for (var h = 3u; h > 0u; h = h - 1u) {
        if (g == h) {
            As[0u * 64u + j] = acc[0];
            As[1u * 64u + j] = acc[1];
            As[2u * 64u + j] = acc[2];
            As[3u * 64u + j] = acc[3];
            As[4u * 64u + j] = acc[4];
            As[5u * 64u + j] = acc[5];
            As[6u * 64u + j] = acc[6];
            As[7u * 64u + j] = acc[7];
            Bs[0u * 64u + j] = acc[8];
            Bs[1u * 64u + j] = acc[9];
            Bs[2u * 64u + j] = acc[10];
            Bs[3u * 64u + j] = acc[11];
            Bs[4u * 64u + j] = acc[12];
            Bs[5u * 64u + j] = acc[13];
            Bs[6u * 64u + j] = acc[14];
            Bs[7u * 64u + j] = acc[15];
        }
        workgroupBarrier();
        if (g == 0u) {
            acc[0] = acc[0] + As[0u * 64u + j];
            acc[1] = acc[1] + As[1u * 64u + j];
            acc[2] = acc[2] + As[2u * 64u + j];
            acc[3] = acc[3] + As[3u * 64u + j];
            acc[4] = acc[4] + As[4u * 64u + j];
            acc[5] = acc[5] + As[5u * 64u + j];
            acc[6] = acc[6] + As[6u * 64u + j];
            acc[7] = acc[7] + As[7u * 64u + j];
            acc[8] = acc[8] + Bs[0u * 64u + j];
            acc[9] = acc[9] + Bs[1u * 64u + j];
            acc[10] = acc[10] + Bs[2u * 64u + j];
            acc[11] = acc[11] + Bs[3u * 64u + j];
            acc[12] = acc[12] + Bs[4u * 64u + j];
            acc[13] = acc[13] + Bs[5u * 64u + j];
            acc[14] = acc[14] + Bs[6u * 64u + j];
            acc[15] = acc[15] + Bs[7u * 64u + j];
        }
        workgroupBarrier();
    }
    if (g != 0u) { return; }
    let base_c = p.off_c + wid.z * p.stride_c;
    let mr = m0 + 4u * ty;
    let nc = n0 + 4u * tx;
    put_c(base_c, mr, nc, acc[0], acc[1]);
    put_c(base_c, mr + 1u, nc, acc[2], acc[3]);
    put_c(base_c, mr + 2u, nc, acc[4], acc[5]);
    put_c(base_c, mr + 3u, nc, acc[6], acc[7]);
    put_c(base_c, mr + 32u, nc, acc[8], acc[9]);
    put_c(base_c, mr + 33u, nc, acc[10], acc[11]);
    put_c(base_c, mr + 34u, nc, acc[12], acc[13]);
    put_c(base_c, mr + 35u, nc, acc[14], acc[15]);
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
