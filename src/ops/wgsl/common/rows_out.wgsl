// The epilogue of the one-row matrix-vector kernels kmv4.wgsl and
// kmv6.wgsl: a row group's ROWS partial sums reduced over its TPR
// invocations in workgroup memory, and the group's outputs stored by its
// first invocation: alpha * v (+ beta * C when beta != 0), or with SWIGLU
// silu(gate) * up (swiglu_mv.wgsl, included first).
// Needs from the including module: overrides WG, TPR, ROWS; `red`, a
// workgroup array<f32> of WG * ROWS; C, a storage array<f32>; p with N,
// off_c, stride_c, alpha and beta.

// Every invocation of the workgroup must call it (it has barriers): lid its
// local index, t = lid % TPR, n0 the group's first output row, z its batch.
fn rows_out(lid: u32, t: u32, n0: u32, z: u32, acc: array<f32, 8>) {
    for (var r = 0u; r < ROWS; r = r + 1u) { red[r * WG + lid] = acc[r]; }
    workgroupBarrier();
    for (var h = TPR / 2u; h > 0u; h = h >> 1u) {
        if (t < h) {
            for (var r = 0u; r < ROWS; r = r + 1u) { red[r * WG + lid] = red[r * WG + lid] + red[r * WG + lid + h]; }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        for (var r = 0u; r < out_rows(); r = r + 1u) {
            if (n0 + r < p.N) {
                let idx = p.off_c + z * p.stride_c + n0 + r;
                var v = red[r * WG + lid];
                if (SWIGLU) { v = silu_mul(v, red[(r + ROWS / 2u) * WG + lid]); }
                var out = p.alpha * v;
                if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
                C[idx] = out;
            }
        }
    }
}
