// Rows of A rounded to 8 bits for the tiled products with 8-bit A (kmm8.wgsl;
// pxl_matmul_options.a_q8, host side: src/ops/matmul_quant.c). One
// invocation per 16 values of a row, R rows of K values (K a multiple of 64)
// in, into Q (vec4<u32> words):
//   Q[r * K / 16 + i]: values 16 i .. 16 i + 15 of row r, four signed bytes a
//     word (value 4w + b: word w, byte b);
//   Q[R * K / 16 + r * K / 64 + j]: (d, d * sum q) of blocks 2j and 2j + 1 of
//     row r, as the bits of four f32 (the min terms of Q4_K need d * sum q).
// Invocations 2b and 2b + 1 hold the halves of a block: they trade their
// maxima (then their sums) through workgroup memory, and the first of every
// four writes the pair's scales. So a warp reads its 2 KiB of A and writes
// its 512 bytes of Q side by side. The rounding is common/q8_round.wgsl's,
// the CPU's: the block's scale from max(first half's, second half's
// maximum), its sum the halves' integer sums added.
//
// qa8n: the same for rmsnorm(A) * w (pxl_matmul_multi's prompt products with
// a norm): one workgroup a row, whose sum of squares is taken as
// rowwise.wgsl's rmsnorm takes it (the same WG from the host, the same two
// strided sums an invocation and tree), each value normalized as it does
// (x * inv * w), then rounded in groups of 16 as above, WG groups at a time.

#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits (q8_round.wgsl)
#include "q8_round.wgsl"   // q8_scale, q8_pack16, q8_sum16, q8_amax16

struct Params {
    R: u32, K: u32, off_a: u32,   // rows, values a row, A's offset in floats (a multiple of 4)
    off_w: u32,                   // qa8n: the norm's offset in floats
    eps: f32,                     // qa8n: the norm's epsilon
    pad0: u32, pad1: u32, pad2: u32,
}

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> Q: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> W: array<f32>;   // qa8n: the norm

override WG: u32 = 256u;

var<workgroup> sm: array<f32, WG>;   // each invocation's largest magnitude, then its block's d
var<workgroup> ss: array<i32, WG>;   // each invocation's sum of its 16 integers
var<workgroup> red: array<f32, WG>;  // qa8n: the sum of squares

// 16 rounded values x0 .. x3 of group e (of all rows) with their block's
// other half at invocation t ^ 1: stores the word at Q[e] and, from the
// first of every four groups, the scales of the two blocks. Every
// invocation of the workgroup must call it (barriers); live: e is a group
// of A (else nothing is stored).
fn round16(t: u32, e: u32, live: bool, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) {
    sm[t] = q8_amax16(x0, x1, x2, x3);
    workgroupBarrier();
    let sc = q8_scale(max(sm[t & ~1u], sm[t | 1u]));   // the block's halves, first half first
    let w = q8_pack16(x0, x1, x2, x3, sc.y);
    ss[t] = q8_sum16(w);
    workgroupBarrier();
    sm[t] = sc.x;   // (every invocation has read sm)
    workgroupBarrier();
    if (live) {
        Q[e] = w;
        if ((e & 3u) == 0u) {   // the pair's first invocation: blocks (t, t + 1) and (t + 2, t + 3)
            let d1 = sm[t + 2u];
            let ds = vec4<f32>(sc.x, sc.x * f32(ss[t] + ss[t + 1u]), d1, d1 * f32(ss[t + 2u] + ss[t + 3u]));
            Q[p.R * p.K / 16u + e / 4u] = bitcast<vec4<u32>>(ds);
        }
    }
    workgroupBarrier();   // before a next call writes sm and ss
}

@compute @workgroup_size(WG)
fn qa8(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let e = (wid.y * nwg.x + wid.x) * WG + t;   // 16 values: row e / (K / 16), group e % (K / 16)
    let live = e < p.R * (p.K / 16u);           // (past the end: zeros, nothing stored, at every barrier)
    let a = p.off_a / 4u + e * 4u;              // vec4 index: rows are K / 4 vec4s, a group 4
    var x0 = vec4<f32>(0.0); var x1 = vec4<f32>(0.0); var x2 = vec4<f32>(0.0); var x3 = vec4<f32>(0.0);
    if (live) {
        x0 = A[a];
        x1 = A[a + 1u];
        x2 = A[a + 2u];
        x3 = A[a + 3u];
    }
    round16(t, e, live, x0, x1, x2, x3);
}

// value k of row r of A
fn a_at(r: u32, k: u32) -> f32 {
    let i = p.off_a + r * p.K + k;
    return A[i / 4u][i % 4u];
}

// values 4 i .. 4 i + 3 of row r, normalized: x * inv * w
fn a_norm4(r: u32, i: u32, inv: f32) -> vec4<f32> {
    let x = A[p.off_a / 4u + r * (p.K / 4u) + i];
    let o = p.off_w + 4u * i;
    return vec4<f32>(x.x * inv * W[o], x.y * inv * W[o + 1u], x.z * inv * W[o + 2u], x.w * inv * W[o + 3u]);
}

@compute @workgroup_size(WG)
fn qa8n(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let r = wid.y * nwg.x + wid.x;   // the row (the whole workgroup leaves together)
    if (r >= p.R) { return; }
    let L = p.K;
    var acc0 = 0.0;   // rowwise.wgsl's rmsnorm: two strided sums, then a tree
    var acc1 = 0.0;
    var j = t;
    for (; j + WG < L; j = j + 2u * WG) {
        let a = a_at(r, j);
        let b = a_at(r, j + WG);
        acc0 = acc0 + a * a;
        acc1 = acc1 + b * b;
    }
    if (j < L) {
        let a = a_at(r, j);
        acc0 = acc0 + a * a;
    }
    red[t] = acc0 + acc1;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (t < h) { red[t] = red[t] + red[t + h]; }
        workgroupBarrier();
    }
    let inv = inverseSqrt(red[0] / f32(L) + p.eps);
    let ng = L / 16u;   // groups of 16 a row
    for (var g0 = 0u; g0 < ng; g0 = g0 + WG) {
        let g = g0 + t;
        let live = g < ng;
        var x0 = vec4<f32>(0.0); var x1 = vec4<f32>(0.0); var x2 = vec4<f32>(0.0); var x3 = vec4<f32>(0.0);
        if (live) {
            x0 = a_norm4(r, 4u * g, inv);
            x1 = a_norm4(r, 4u * g + 1u, inv);
            x2 = a_norm4(r, 4u * g + 2u, inv);
            x3 = a_norm4(r, 4u * g + 3u, inv);
        }
        round16(t, r * ng + g, live, x0, x1, x2, x3);
    }
}
