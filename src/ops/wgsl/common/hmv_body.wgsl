// Matrix-vector products with f16 or bf16 weights read 16 bytes at a time:
// C = alpha * A . B^T + beta * C (beta = 0: C not read) for one row of A
// (M = 1), B [N, K] of 2-byte elements in u32 words (host side:
// src/ops/matmul.c; matmul.wgsl's gemv_t takes the shapes this kernel does
// not). The unit of work is one 16-byte word of a row of B (8 elements) for
// ROWS rows: invocation t of a row group of TPR takes units t, t + TPR, ...,
// so neighbouring invocations read neighbouring words, and the group's rows
// share the loads of A. Needs K and every offset into B (off_b, off_u,
// stride_b) to be multiples of 8 elements, and A's offset a multiple of 4.
// With NORM the loop also sums the squares of A and the epilogue applies the
// norm's inverse (rows_out.wgsl, as kmv4.wgsl); with SWIGLU a row group takes
// gate and up rows (swiglu_mv.wgsl).

struct Params {
    M: u32, N: u32, K: u32, off_a: u32,           // off_*: element offsets of the views (pxl_op_bind)
    stride_a: u32, stride_b: u32, stride_c: u32, off_b: u32,
    alpha: f32, beta: f32, off_c: u32, off_n: u32,  // off_n: offset of NW in floats (NORM)
    eps: f32, off_u: u32, off_s: u32, _p2: u32,     // off_u: the up weights (SWIGLU); off_s: the bias (BIAS)
}

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override ROWS: u32 = 2u;    // rows of B per row group (1 .. 8)
override BF16: bool = false;   // B is bf16 (the top halves of f32s), else f16

const NCOL: u32 = 1u;       // one row of A (norm_mv.wgsl)

var<workgroup> red: array<f32, WG * (ROWS + 1u)>;   // partial sums (rows_out.wgsl); sized by the overrides, so that no more is zeroed than used

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (nweight, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)
#include "rows_out.wgsl"   // group_n0, group_row; rows_out: the sums reduced, normalised and stored

// elements 0..3 (lo) and 4..7 (hi) of a word of 8
fn lo4(w: vec4<u32>) -> vec4<f32> {
    if (BF16) { return bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u)); }
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}
fn hi4(w: vec4<u32>) -> vec4<f32> {
    if (BF16) { return bitcast<vec4<f32>>(vec4<u32>(w.z << 16u, w.z & 0xffff0000u, w.w << 16u, w.w & 0xffff0000u)); }
    return vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
}

@compute @workgroup_size(WG)
fn hmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    let abase = (p.off_a + wid.z * p.stride_a) >> 2u;   // in vec4
    var acc: array<f32, 8>;    // the group's sums, one a row (zero-initialised)
    var rows: array<u32, 8>;   // the group's B rows, in 16-byte words (clamped to the last row)
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = group_row(n0, r, wid.z, p.K) >> 3u; }
    var ss = 0.0;   // the sum of squares of A (NORM)
    let units = p.K >> 3u;
    for (var u = t; u < units; u = u + TPR) {
        var x0 = A[abase + 2u * u];
        var x1 = A[abase + 2u * u + 1u];
        if (NORM) {
            ss = ss + dot(x0, x0) + dot(x1, x1);
            x0 = nweight(x0, 2u * u);
            x1 = nweight(x1, 2u * u + 1u);
        }
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let w = B[rows[r] + u];
            acc[r] = acc[r] + dot(lo4(w), x0) + dot(hi4(w), x1);
        }
    }
    rows_out(lid.x, t, n0, wid.z, acc, ss);
}
