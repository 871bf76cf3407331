// The epilogue of the one-row matrix-vector kernels kmv4.wgsl, kmv6.wgsl
// and hmv.wgsl: a row group's ROWS partial sums (and with NORM its partial sum
// of the squares of A) reduced over its TPR invocations in workgroup memory,
// and the group's outputs stored by its first invocation: alpha * v (+ beta *
// C when beta != 0), or with SWIGLU silu(gate) * up (swiglu_mv.wgsl, included
// first). With NORM the sums are of A times the norm's weights, and v is the
// sum times inv = inverseSqrt(mean(A^2) + eps): rmsnorm(A) . B^T, the norm's
// one multiplication by inv moved out of the sum.
// Also the row groups' layout that these kernels share (group_n0, group_row).
// Needs from the including module: overrides WG, TPR, ROWS; `red`, a
// workgroup array<f32> of WG * (ROWS + 1); C, a storage array<f32>; p with
// N, K, off_b, off_u, stride_b, off_c, stride_c, alpha, beta and eps; NORM
// (norm_mv.wgsl).

// The first output row of the row group of invocation lid (local index) of
// workgroup wid of nwg: WG / TPR groups a workgroup, out_rows() rows each.
fn group_n0(lid: u32, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return ((wid.y * nwg.x + wid.x) * (WG / TPR) + lid / TPR) * out_rows();
}

// Where the group's weight row r starts in batch z, in the units of off_b,
// off_u and stride_b, rows `stride` apart: a gate or an up row with SWIGLU;
// past the last row, the last row (read, never stored).
fn group_row(n0: u32, r: u32, z: u32, stride: u32) -> u32 {
    return select(p.off_b, p.off_u, w_is_up(r)) + z * p.stride_b + min(w_out(n0, r), p.N - 1u) * stride;
}

// Every invocation of the workgroup must call it (it has barriers): lid its
// local index, t = lid % TPR, n0 the group's first output row, z its batch,
// ss its sum of squares of A (read with NORM only).
fn rows_out(lid: u32, t: u32, n0: u32, z: u32, acc: array<f32, 8>, ss: f32) {
    for (var r = 0u; r < ROWS; r = r + 1u) { red[r * WG + lid] = acc[r]; }
    let nr = select(ROWS, ROWS + 1u, NORM);   // the squares in row ROWS
    if (NORM) { red[ROWS * WG + lid] = ss; }
    workgroupBarrier();
    for (var h = TPR / 2u; h > 0u; h = h >> 1u) {
        if (t < h) {
            for (var r = 0u; r < nr; r = r + 1u) { red[r * WG + lid] = red[r * WG + lid] + red[r * WG + lid + h]; }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        var inv = 1.0;
        if (NORM) { inv = inverseSqrt(red[ROWS * WG + lid] / f32(p.K) + p.eps); }
        for (var r = 0u; r < out_rows(); r = r + 1u) {
            if (n0 + r < p.N) {
                let idx = p.off_c + z * p.stride_c + n0 + r;
                var v = red[r * WG + lid] * inv;
                if (SWIGLU) { v = silu_mul(v, red[(r + ROWS / 2u) * WG + lid] * inv); }
                var out = p.alpha * v;
                if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
                C[idx] = out;
            }
        }
    }
}
