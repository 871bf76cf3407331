// RMSNorm fused into the matrix-vector kernels (qmv in quant.wgsl, kmv in
// kquant.wgsl, xmv in xquant.wgsl; kmv4, kmv6 and hmv use nweight only): with
// the override NORM, each row c of A is replaced by rmsnorm(A[c]) * w as
// the kernel loads it, the same formula
// as rowwise.wgsl's rmsnorm: x * inv * w, inv = inverseSqrt(mean(x^2) + eps).
// Every workgroup computes inv for its NCOL rows of A itself (K floats each,
// read again from cache by the product), so no other dispatch is needed.
// Without NORM, norm_inv is not called and nscale returns x: the kernel is
// the unfused one (the weight binding NW is still bound, to A, by the host).
//
// The including module provides: A: array<vec4<f32>> (rows of K / 4 vec4s),
// p with fields K (u32), off_n (u32, the offset of w in floats, a multiple of
// 4) and eps (f32), overrides WG and NCOL, and a workgroup array<f32> `red`
// of at least WG * NCOL floats, which norm_inv leaves free again.

override NORM: bool = false;

@group(0) @binding(4) var<storage, read> NW: array<vec4<f32>>;

// inv for rows 0 .. NCOL-1 of A starting at vec4 xa; every invocation t < WG
// of the workgroup must call it (it has barriers).
fn norm_inv(t: u32, xa: u32) -> array<f32, 8> {
    let k4 = p.K / 4u;
    var ss: array<f32, 8>;
    for (var j = t; j < k4; j = j + WG) {
        for (var c = 0u; c < NCOL; c = c + 1u) {
            let x = A[xa + c * k4 + j];
            ss[c] = ss[c] + dot(x, x);
        }
    }
    for (var c = 0u; c < NCOL; c = c + 1u) { red[c * WG + t] = ss[c]; }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h >> 1u) {
        if (t < h) {
            for (var c = 0u; c < NCOL; c = c + 1u) { red[c * WG + t] = red[c * WG + t] + red[c * WG + t + h]; }
        }
        workgroupBarrier();
    }
    var inv: array<f32, 8>;
    for (var c = 0u; c < NCOL; c = c + 1u) { inv[c] = inverseSqrt(red[c * WG] / f32(p.K) + p.eps); }
    workgroupBarrier();
    return inv;
}

// vec4 j of a row of A times the norm's weights (NORM; x without): kmv4,
// kmv6 and hmv, which sum the squares of A themselves and apply inv in their
// epilogue (rows_out.wgsl)
fn nweight(x: vec4<f32>, j: u32) -> vec4<f32> {
    if (NORM) { return x * NW[p.off_n / 4u + j]; }
    return x;
}

// vec4 j of a row of A, x, as the kernel uses it (inv: that row's norm_inv)
fn nscale(x: vec4<f32>, inv: f32, j: u32) -> vec4<f32> {
    if (NORM) { return x * inv * NW[p.off_n / 4u + j]; }
    return x;
}
