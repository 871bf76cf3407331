// Matrix-vector products with Q6_K weights for one row of A (M = 1):
// C = alpha * A . B^T + beta * C (beta = 0: C not read), B [N, K] in
// 210-byte blocks of 256 elements (layout: PXL_Q6_K in include/pxl/ops.h;
// host side: src/ops/matmul_quant.c).
//
// The unit of work is 16 elements of one block: with u = 16 * block + 8h + i
// (h = 0, 1 the block half, i = 0..7), l = 4i .. 4i+3 and the elements
// 128h + 32g + l for g = 0..3, from ql bytes 64h + l (g = 0, 2: low, high
// nibble) and 64h + 32 + l (g = 1, 3), the high bits 2g, 2g+1 of qh bytes
// 32h + l, and scales 8h + l / 16 + 2g. Invocation t of a row group of TPR
// takes units t, t + TPR, ..., so neighbouring invocations read neighbouring
// words. Blocks sit at even offsets: a word at offset 2 mod 4 is assembled
// from two. Values are formed in the CPU decoder's order: (d * scale) * (q - 32).
// With NORM the loop also sums the squares of A and the epilogue applies the
// norm's inverse (rows_out.wgsl), as in kmv4.

#include "qmm_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;    // invocations per workgroup (power of two)
override TPR: u32 = 32u;    // invocations per row group (power of two, <= WG)
override ROWS: u32 = 2u;    // rows of B per row group, sharing the loads of A (1 .. 8)

const NCOL: u32 = 1u;       // one row of A (norm_mv.wgsl)

var<workgroup> red: array<f32, WG * (ROWS + 1u)>;   // partial sums (rows_out.wgsl); sized by the overrides, so that no more is zeroed than used

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into the matvec (nweight, NW)
#include "swiglu_mv.wgsl"   // SWIGLU: gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)
#include "rows_out.wgsl"   // group_n0, group_row; rows_out: the sums reduced, normalised and stored
#include "bytes.wgsl"   // bytes4, half_of

#include "word_at.wgsl"   // word_at

// Q6_K's readers for kmv6_sums.wgsl: words and f16 scales of B
fn q6_word(o: u32) -> u32 { return word_at(o); }
fn q6_half(o: u32) -> f32 { return half_of(B[o >> 2u], o); }

#include "mv_sums.wgsl"   // MvSums
#include "kmv6_sums.wgsl"   // sbyte, kmv6_sums: the unit loop

@compute @workgroup_size(WG)
fn kmv6(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x % TPR;
    let n0 = group_n0(lid.x, wid, nwg);
    let sums = kmv6_sums(t, TPR, (p.off_a + wid.z * p.stride_a) >> 2u, group_rows(n0, wid.z, p.row_bytes));
    rows_out(lid.x, t, n0, wid.z, sums.acc, sums.ss);
}
