// Tiled K-quant products with A rounded to 8 bits (pxl_matmul_options.a_q8,
// M > 8; host side: src/ops/matmul_quant.c): C = alpha * A' . B^T + beta * C
// with A' the rounding qa8.wgsl wrote into Q, B [N, K] Q4_K (overrides KQ6,
// KQ8 and KQ40 false), Q6_K (KQ6), Q8_0 (KQ8), Q4_0 (KQ40) or Q5_0 (KQ40
// with KQ50; layouts: PXL_Q4_K, PXL_Q6_K, PXL_Q8_0, PXL_Q4_0, PXL_Q5_0 in
// include/pxl/ops.h). 64 x 64 output tiles, 16 x 16 invocations each owning
// 4 x 4 outputs (tile_4x4.wgsl's store). K advances two 32-value sub-blocks
// s0, s1 per step through workgroup memory, as 8-bit integers, k-major:
//   Q4_K: s0 = 2j, s1 = 2j + 1, the low and high nibbles of the same 32
//         quant bytes; a value (d sc) q - dmin m.
//   Q6_K: s0 = 4h + g, s1 = 4h + g + 2 (g < 2), the low and high nibbles of
//         ql[64h + 32g + l] with bits 2g.. and 2g + 4.. of qh[32h + l]; a
//         value (d sc) (q - 32), a scale per 16 values; q - 32 is taken as a
//         signed byte.
//   Q8_0: s0, s1 = two 34-byte blocks (on 2-byte offsets), their 32 signed
//         bytes as they are; a value d q (K a multiple of 64).
//   Q4_0: s0, s1 = two 18-byte blocks (on 2-byte offsets), values 0..15 the
//         low nibbles of the 16 quant bytes, 16..31 the high ones; a value
//         d q - 8 d, Q4_K's form with the min term 8 d (K a multiple of 64).
//   Q5_0: as Q4_0 with 22-byte blocks: bit i of the word at byte 2 (qh)
//         joins value i's nibble as its bit 4; the min term 16 d.
//   Ak[w * 16 + m / 4][m % 4]: word w of tile row m (values 4w .. 4w + 3 of
//     s0 for w < 8, of s1 for w >= 8);
//   Bk likewise for tile column n, its values as signed bytes;
//   As4[m] = (d, d * sum q) of row m's blocks s0 and s1;
//   Bs4[n]: Q4_K (d sc, dmin m) of s0 and s1; Q6_K d sc of the four
//     16-value halves; Q8_0 (d, 0), Q4_0 (d, 8 d) and Q5_0 (d, 16 d) of s0
//     and s1 (Q4_K's sums).
// Each invocation sums 16 products of the step's words (dot4I8Packed) per
// scale exactly in integers, then adds the float terms: Q4_K da (d sc) isum
// - (da sum qa) (dmin m) per sub-block, Q6_K da (d sc) isum per half.
//
// Params (qmm_params): M, N, K, nb, row_bytes, stride_b, stride_c, alpha,
// beta, off_b (bytes: a multiple of 4 for Q4_K, 2 for Q6_K), off_c as for the
// other quantized products; off_a: where Q's second part (the scales) starts,
// in vec4s; stride_a: Q's rows between batches (M, or 0 when A is shared).

override KQ6: bool = false;
override KQ8: bool = false;
override KQ40: bool = false;
override KQ50: bool = false;   // with KQ40: Q5_0
override LEGACY: bool = KQ8 || KQ40;   // blocks of 32 values: two a step

#include "qmm_params.wgsl"   // Params

@group(0) @binding(0) var<storage, read> Q: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

#include "tile_4x4.wgsl"   // store_c, tile_store
#include "bytes.wgsl"   // k_scale_min; bit4_of (Q5_0)
#include "word_at.wgsl"   // word_at (Q6_K blocks sit on 2-byte offsets)

var<workgroup> Ak: array<vec4<u32>, 256>;
var<workgroup> Bk: array<vec4<u32>, 256>;
var<workgroup> As4: array<vec4<f32>, 64>;
var<workgroup> Bs4: array<vec4<f32>, 64>;

// Zero sums, assigned explicitly at each use: a `var` declared without an
// initializer inside a loop body was not zeroed again on later iterations
// by this Dawn's SPIR-V output (Vulkan: SwiftShader and NVIDIA), so the sums
// ran on across sub-blocks; its OpenGL ES output did zero them.
fn zero_sums() -> array<vec4<i32>, 4> {
    var z: array<vec4<i32>, 4>;
    for (var i = 0u; i < 4u; i = i + 1u) { z[i] = vec4<i32>(0); }
    return z;
}

// Q6_K: four 6-bit values q (bytes of v) as the signed bytes q - 32
fn q6_signed(v: u32) -> u32 {
    let x = v ^ 0x20202020u;                            // q - 32 in 6 bits
    return x | (((x >> 5u) & 0x01010101u) * 0xc0u);     // sign-extended from bit 5
}

// isum[i][j] += word w of tile row 4 ty + i . word w of tile column 4 tx + j
fn dot_words(isum: ptr<function, array<vec4<i32>, 4>>, w: u32, tx: u32, ty: u32) {
    let a = Ak[w * 16u + ty];
    let b = Bk[w * 16u + tx];
    for (var i = 0u; i < 4u; i = i + 1u) {
        (*isum)[i] = (*isum)[i] + vec4<i32>(dot4I8Packed(a[i], b.x), dot4I8Packed(a[i], b.y),
                                            dot4I8Packed(a[i], b.z), dot4I8Packed(a[i], b.w));
    }
}

@compute @workgroup_size(16, 16)
fn kmm8(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    // loaders: tile row / column lr; A: words 4 lc .. 4 lc + 3 of the step, B: quant words 2 lc, 2 lc + 1
    let lr = tid / 4u;
    let lc = tid % 4u;
    let qrow = wid.z * p.stride_a + min(m0 + lr, p.M - 1u);   // Q's row (clamped: read, never stored)
    let qa = qrow * (p.K / 16u);                              // its values, in vec4s
    let qd = p.off_a + qrow * (p.K / 64u);                    // its scales, in vec4s
    let brow = p.off_b + wid.z * p.stride_b + min(n0 + lr, p.N - 1u) * p.row_bytes;   // in bytes
    let lo = 0x0f0f0f0fu;

    var acc: array<vec4<f32>, 4>;
    let steps = select(p.nb * 4u, p.nb / 2u, LEGACY);   // of 64 values
    for (var st = 0u; st < steps; st = st + 1u) {
        let blk = st >> 2u;
        let j = st & 3u;
        let bb = brow + blk * select(144u, 210u, KQ6);   // the block's first byte
        if (LEGACY) {
            // blocks 2 st (lc < 2) and 2 st + 1; this invocation's 16 values: half lc % 2 of its block
            // (Q8_0: 16 of its bytes; Q4_0: the low or high nibbles of its 16 quant bytes)
            let bsz = select(select(18u, 22u, KQ50), 34u, KQ8);
            let b0 = brow + (2u * st + (lc >> 1u)) * bsz;
            let wa = Q[qa + st * 4u + lc];
            for (var e = 0u; e < 4u; e = e + 1u) {
                Ak[(4u * lc + e) * 16u + lr / 4u][lr % 4u] = wa[e];
                var w: u32;
                if (KQ8) {
                    w = word_at(b0 + 2u + 16u * (lc & 1u) + 4u * e);
                } else if (KQ50) {   // bits 16 (lc % 2) + 4 e .. + 3 of qh, one to bit 4 of each byte
                    let qh = word_at(b0 + 2u) >> (16u * (lc & 1u) + 4u * e);
                    w = ((word_at(b0 + 6u + 4u * e) >> (4u * (lc & 1u))) & lo) | bit4_of(qh);
                } else {
                    w = (word_at(b0 + 2u + 4u * e) >> (4u * (lc & 1u))) & lo;
                }
                Bk[(4u * lc + e) * 16u + lr / 4u][lr % 4u] = w;
            }
            if (lc == 0u) {
                As4[lr] = bitcast<vec4<f32>>(Q[qd + st]);
            } else if (lc == 1u) {
                let d0 = unpack2x16float(word_at(brow + 2u * st * bsz)).x;
                let d1 = unpack2x16float(word_at(brow + (2u * st + 1u) * bsz)).x;
                let m = select(select(8.0, 16.0, KQ50), 0.0, KQ8);   // Q4_0: d (q - 8) = d q - 8 d; Q5_0: 16 d
                Bs4[lr] = vec4<f32>(d0, m * d0, d1, m * d1);
            }
        } else if (KQ6) {
            // j = 2h + g: s0 = 4h + g, s1 = s0 + 2; this invocation's words 2 lc, 2 lc + 1 of each
            let h = j >> 1u;
            let g = j & 1u;
            let s0 = blk * 8u + 4u * h + g;
            let wa = Q[qa + 2u * s0 + 4u * (lc >> 1u) + (lc & 1u)];   // lc < 2: s0's two vec4s, else s1's
            for (var e = 0u; e < 4u; e = e + 1u) { Ak[(4u * lc + e) * 16u + lr / 4u][lr % 4u] = wa[e]; }
            for (var c = 2u * lc; c < 2u * lc + 2u; c = c + 1u) {
                let ql = word_at(bb + 64u * h + 32u * g + 4u * c);
                let qh = word_at(bb + 128u + 32u * h + 4u * c);
                let v0 = (ql & lo) | (((qh >> (2u * g)) & 0x03030303u) << 4u);
                let v1 = ((ql >> 4u) & lo) | (((qh >> (2u * g + 4u)) & 0x03030303u) << 4u);
                Bk[c * 16u + lr / 4u][lr % 4u] = q6_signed(v0);
                Bk[(8u + c) * 16u + lr / 4u][lr % 4u] = q6_signed(v1);
            }
            if (lc == 0u) {
                let d0 = bitcast<vec4<f32>>(Q[qd + s0 / 2u]);   // scale pairs: blocks 2i, 2i + 1
                let d1 = bitcast<vec4<f32>>(Q[qd + s0 / 2u + 1u]);
                As4[lr] = vec4<f32>(select(d0.x, d0.z, (s0 & 1u) != 0u), 0.0, select(d1.x, d1.z, (s0 & 1u) != 0u), 0.0);
            } else if (lc == 1u) {
                let d = unpack2x16float(word_at(bb + 208u)).x;
                let sw0 = word_at(bb + 192u + 8u * h + 2u * g);        // the scales of s0's halves (bytes 0, 1)
                let sw1 = word_at(bb + 192u + 8u * h + 2u * g + 4u);   // s1's
                Bs4[lr] = d * vec4<f32>(f32(bitcast<i32>(sw0 << 24u) >> 24u), f32(bitcast<i32>(sw0 << 16u) >> 24u),
                                        f32(bitcast<i32>(sw1 << 24u) >> 24u), f32(bitcast<i32>(sw1 << 16u) >> 24u));
            }
        } else {
            let wa = Q[qa + st * 4u + lc];
            let q0 = B[(bb >> 2u) + 4u + 8u * j + 2u * lc];
            let q1 = B[(bb >> 2u) + 4u + 8u * j + 2u * lc + 1u];
            for (var e = 0u; e < 4u; e = e + 1u) { Ak[(4u * lc + e) * 16u + lr / 4u][lr % 4u] = wa[e]; }
            Bk[(2u * lc) * 16u + lr / 4u][lr % 4u] = q0 & lo;
            Bk[(2u * lc + 1u) * 16u + lr / 4u][lr % 4u] = q1 & lo;
            Bk[(8u + 2u * lc) * 16u + lr / 4u][lr % 4u] = (q0 >> 4u) & lo;
            Bk[(8u + 2u * lc + 1u) * 16u + lr / 4u][lr % 4u] = (q1 >> 4u) & lo;
            if (lc == 0u) {
                As4[lr] = bitcast<vec4<f32>>(Q[qd + st]);
            } else if (lc == 1u) {
                let w = bb >> 2u;
                let dm = unpack2x16float(B[w]);
                let sm0 = k_scale_min(B[w + 1u], B[w + 2u], B[w + 3u], 2u * j);
                let sm1 = k_scale_min(B[w + 1u], B[w + 2u], B[w + 3u], 2u * j + 1u);
                Bs4[lr] = vec4<f32>(dm.x * f32(sm0.x), dm.y * f32(sm0.y), dm.x * f32(sm1.x), dm.y * f32(sm1.y));
            }
        }
        workgroupBarrier();
        if (KQ6) {
            for (var qq = 0u; qq < 4u; qq = qq + 1u) {   // the step's four halves: words 4 qq .. 4 qq + 3
                var isum = zero_sums();   // not `var isum: T;`: see zero_sums
                for (var w = 4u * qq; w < 4u * qq + 4u; w = w + 1u) { dot_words(&isum, w, tx, ty); }
                let bsc = vec4<f32>(Bs4[4u * tx][qq], Bs4[4u * tx + 1u][qq], Bs4[4u * tx + 2u][qq], Bs4[4u * tx + 3u][qq]);
                for (var i = 0u; i < 4u; i = i + 1u) {
                    acc[i] = acc[i] + As4[4u * ty + i][qq & 2u] * bsc * vec4<f32>(isum[i]);
                }
            }
        } else {
            for (var h = 0u; h < 2u; h = h + 1u) {   // the step's two sub-blocks: words 8 h .. 8 h + 7
                var isum = zero_sums();   // not `var isum: T;`: see zero_sums
                for (var w = 8u * h; w < 8u * h + 8u; w = w + 1u) { dot_words(&isum, w, tx, ty); }
                let b0 = Bs4[4u * tx];
                let b1 = Bs4[4u * tx + 1u];
                let b2 = Bs4[4u * tx + 2u];
                let b3 = Bs4[4u * tx + 3u];
                let bsc = select(vec4<f32>(b0.x, b1.x, b2.x, b3.x), vec4<f32>(b0.z, b1.z, b2.z, b3.z), h == 1u);
                let bmn = select(vec4<f32>(b0.y, b1.y, b2.y, b3.y), vec4<f32>(b0.w, b1.w, b2.w, b3.w), h == 1u);
                for (var i = 0u; i < 4u; i = i + 1u) {
                    let a4 = As4[4u * ty + i];
                    let da = select(a4.x, a4.z, h == 1u);
                    let sa = select(a4.y, a4.w, h == 1u);
                    acc[i] = acc[i] + da * bsc * vec4<f32>(isum[i]) - sa * bmn;
                }
            }
        }
        workgroupBarrier();
    }
    tile_store(acc, p.off_c + wid.z * p.stride_c, m0, n0, tx, ty);
}
