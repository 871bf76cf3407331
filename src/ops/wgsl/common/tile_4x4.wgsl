// The 64 x 64 output tile of the quantized matrix products (qmm in
// quant.wgsl, kmm in kquant.wgsl): 16 x 16 invocations, each owning a 4 x 4
// block of C, accumulated from k-major tiles in workgroup memory 32 values
// of k at a time, and C = alpha * acc + beta * C on the way out.
//
// The including module provides: `p` with fields M, N, alpha, beta (u32,
// u32, f32, f32) and `C: array<f32>` (read_write). It gets the workgroup
// tiles As, Bs (row k holds 64 values, 16 vec4s, of m or n; the kernel
// fills them) and:
//   store_c(idx, v)                    C[idx] = alpha * v (+ beta * C[idx] when beta != 0)
//   tile_fma32(acc, tx, ty)            acc[i][j] += sum over k < 32 of As[k][4ty + i] * Bs[k][4tx + j], fma per k
//   tile_store(acc, base_c, m0, n0, tx, ty)   store_c of the block's elements inside [M, N]

// k-major tiles: row k holds 64 values (16 vec4s) of m (As) or n (Bs)
var<workgroup> As: array<vec4<f32>, 512>;
var<workgroup> Bs: array<vec4<f32>, 512>;

fn store_c(idx: u32, v: f32) {
    var out = p.alpha * v;
    if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
    C[idx] = out;
}

fn tile_fma32(acc: ptr<function, array<vec4<f32>, 4>>, tx: u32, ty: u32) {
    for (var k = 0u; k < 32u; k = k + 1u) {
        let a = As[k * 16u + ty];
        let b = Bs[k * 16u + tx];
        (*acc)[0] = fma(vec4<f32>(a.x), b, (*acc)[0]);
        (*acc)[1] = fma(vec4<f32>(a.y), b, (*acc)[1]);
        (*acc)[2] = fma(vec4<f32>(a.z), b, (*acc)[2]);
        (*acc)[3] = fma(vec4<f32>(a.w), b, (*acc)[3]);
    }
}

fn tile_store(acc: array<vec4<f32>, 4>, base_c: u32, m0: u32, n0: u32, tx: u32, ty: u32) {
    for (var i = 0u; i < 4u; i = i + 1u) {
        let m = m0 + ty * 4u + i;
        if (m < p.M) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                let n = n0 + tx * 4u + j;
                if (n < p.N) { store_c(base_c + m * p.N + n, acc[i][j]); }
            }
        }
    }
}
