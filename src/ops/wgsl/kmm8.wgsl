// Tiled Q4_K products with A rounded to 8 bits (pxl_matmul_options.a_q8,
// M > 8; host side: src/ops/matmul_quant.c): C = alpha * A' . B^T + beta * C
// with A' the rounding qa8.wgsl wrote into Q, B [N, K] Q4_K (layout: PXL_Q4_K
// in include/pxl/ops.h). 64 x 64 output tiles, 16 x 16 invocations each
// owning 4 x 4 outputs (tile_4x4.wgsl's store). K advances 64 values (a pair
// of Q4_K sub-blocks, 2j and 2j + 1, which share their 32 quant bytes) per
// step through workgroup memory, as 8-bit integers, k-major:
//   Ak[w * 16 + m / 4][m % 4]: word w (values 4w .. 4w + 3 of the step) of tile row m;
//   Bk likewise for tile column n, its nibbles as bytes (w < 8: sub-block 2j, the low
//   nibbles; w >= 8: 2j + 1, the high ones);
//   As4[m] = (d, d * sum q) of row m's blocks 2j and 2j + 1;
//   Bs4[n] = (d * sc, dmin * m) of row n's sub-blocks 2j and 2j + 1.
// Each invocation sums 16 products of 8 words (dot4I8Packed) per sub-block
// exactly in integers, then adds da (d sc) isum - (da sum qa) (dmin m): a
// Q4_K value (d sc) q - dmin m times da qa, summed over the sub-block.
//
// Params (qmm_params): M, N, K, nb, row_bytes, stride_b, stride_c, alpha,
// beta, off_b (bytes, a multiple of 4), off_c as for the other quantized
// products; off_a: where Q's second part (the scales) starts, in vec4s;
// stride_a: Q's rows between batches (M, or 0 when A is shared).

#include "qmm_params.wgsl"   // Params

@group(0) @binding(0) var<storage, read> Q: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

#include "tile_4x4.wgsl"   // store_c, tile_store
#include "bytes.wgsl"   // k_scale_min

var<workgroup> Ak: array<vec4<u32>, 256>;
var<workgroup> Bk: array<vec4<u32>, 256>;
var<workgroup> As4: array<vec4<f32>, 64>;
var<workgroup> Bs4: array<vec4<f32>, 64>;

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
    let brow = (p.off_b + wid.z * p.stride_b + min(n0 + lr, p.N - 1u) * p.row_bytes) / 4u;   // in words
    let lo = 0x0f0f0f0fu;

    var acc: array<vec4<f32>, 4>;
    let steps = p.nb * 4u;
    for (var st = 0u; st < steps; st = st + 1u) {
        let blk = st >> 2u;
        let j = st & 3u;
        let wa = Q[qa + st * 4u + lc];
        let bw = brow + blk * 36u;   // the block's first word (36 words of 144 bytes)
        let q0 = B[bw + 4u + 8u * j + 2u * lc];
        let q1 = B[bw + 4u + 8u * j + 2u * lc + 1u];
        for (var e = 0u; e < 4u; e = e + 1u) { Ak[(4u * lc + e) * 16u + lr / 4u][lr % 4u] = wa[e]; }
        Bk[(2u * lc) * 16u + lr / 4u][lr % 4u] = q0 & lo;
        Bk[(2u * lc + 1u) * 16u + lr / 4u][lr % 4u] = q1 & lo;
        Bk[(8u + 2u * lc) * 16u + lr / 4u][lr % 4u] = (q0 >> 4u) & lo;
        Bk[(8u + 2u * lc + 1u) * 16u + lr / 4u][lr % 4u] = (q1 >> 4u) & lo;
        if (lc == 0u) {
            As4[lr] = bitcast<vec4<f32>>(Q[qd + st]);
        } else if (lc == 1u) {
            let h0 = B[bw];
            let dm = unpack2x16float(h0);
            let sm0 = k_scale_min(B[bw + 1u], B[bw + 2u], B[bw + 3u], 2u * j);
            let sm1 = k_scale_min(B[bw + 1u], B[bw + 2u], B[bw + 3u], 2u * j + 1u);
            Bs4[lr] = vec4<f32>(dm.x * f32(sm0.x), dm.y * f32(sm0.y), dm.x * f32(sm1.x), dm.y * f32(sm1.y));
        }
        workgroupBarrier();
        for (var h = 0u; h < 2u; h = h + 1u) {
            var isum: array<vec4<i32>, 4>;
            for (var w = 0u; w < 8u; w = w + 1u) {
                let a = Ak[(8u * h + w) * 16u + ty];
                let b = Bk[(8u * h + w) * 16u + tx];
                for (var i = 0u; i < 4u; i = i + 1u) {
                    isum[i] = isum[i] + vec4<i32>(dot4I8Packed(a[i], b.x), dot4I8Packed(a[i], b.y),
                                                  dot4I8Packed(a[i], b.z), dot4I8Packed(a[i], b.w));
                }
            }
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
        workgroupBarrier();
    }
    tile_store(acc, p.off_c + wid.z * p.stride_c, m0, n0, tx, ty);
}
