// Rows of A rounded to 8 bits for the tiled products with 8-bit A (kmm8.wgsl;
// pxl_matmul_options.a_q8, host side: src/ops/matmul_quant.c). One
// invocation per 64 values of a row (two blocks of 32), R rows of K values
// (K a multiple of 64) in, into Q (vec4<u32> words):
//   Q[r * K / 16 + i]: values 16 i .. 16 i + 15 of row r, four signed bytes a
//     word (value 4w + b: word w, byte b);
//   Q[R * K / 16 + r * K / 64 + j]: (d, d * sum q) of blocks 2j and 2j + 1 of
//     row r, as the bits of four f32 (the min terms of Q4_K need d * sum q).
// The rounding is common/q8_round.wgsl's, the CPU's.

#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits (q8_round.wgsl)
#include "q8_round.wgsl"   // q8_scale, q8_pack16, q8_sum16, q8_amax16

struct Params {
    R: u32, K: u32, off_a: u32, pad: u32,   // rows, values a row, A's offset in floats (a multiple of 4)
}

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> Q: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

struct Block32 {
    w0: vec4<u32>, w1: vec4<u32>,   // values 0..15 and 16..31 as signed bytes
    d: f32, dsum: f32,              // the scale and d * sum q
}

// the 32 values of A from vec4 index a, rounded
fn round_block(a: u32) -> Block32 {
    let x0 = A[a];
    let x1 = A[a + 1u];
    let x2 = A[a + 2u];
    let x3 = A[a + 3u];
    let y0 = A[a + 4u];
    let y1 = A[a + 5u];
    let y2 = A[a + 6u];
    let y3 = A[a + 7u];
    let sc = q8_scale(max(q8_amax16(x0, x1, x2, x3), q8_amax16(y0, y1, y2, y3)));
    let w0 = q8_pack16(x0, x1, x2, x3, sc.y);
    let w1 = q8_pack16(y0, y1, y2, y3, sc.y);
    return Block32(w0, w1, sc.x, sc.x * f32(q8_sum16(w0) + q8_sum16(w1)));
}

@compute @workgroup_size(WG)
fn qa8(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = (wid.y * nwg.x + wid.x) * WG + lid.x;   // 64 values: row e / (K / 64), pair e % (K / 64)
    let per = p.K / 64u;
    if (e >= p.R * per) { return; }
    let a = p.off_a / 4u + e * 16u;   // vec4 index: rows are K / 4 vec4s, a pair 16
    // the two blocks written out (no array indexed in a loop: NVIDIA's
    // compiler put such an array in local memory, 80 bytes an invocation)
    let b0 = round_block(a);
    let b1 = round_block(a + 8u);
    Q[e * 4u] = b0.w0;
    Q[e * 4u + 1u] = b0.w1;
    Q[e * 4u + 2u] = b1.w0;
    Q[e * 4u + 3u] = b1.w1;
    let ds = vec4<f32>(b0.d, b0.dsum, b1.d, b1.dsum);
    Q[p.R * p.K / 16u + e] = bitcast<vec4<u32>>(ds);
}
