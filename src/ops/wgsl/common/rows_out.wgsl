// The epilogue of the one-row matrix-vector kernels kmv4.wgsl, kmv6.wgsl
// and hmv.wgsl (bodies: common/kmv4_body.wgsl, kmv6_body.wgsl,
// hmv_body.wgsl): a row group's ROWS partial sums (and with NORM its partial
// sum of the squares of A) reduced over its TPR invocations, and the group's
// outputs stored by its first invocation: alpha * v (+ beta * C when beta !=
// 0), or with SWIGLU silu(gate) * up (swiglu_mv.wgsl, included first). With
// NORM the sums are of A times the norm's weights, and v is the sum times
// inv = inverseSqrt(mean(A^2) + eps): rmsnorm(A) . B^T, the norm's one
// multiplication by inv moved out of the sum.
// The reduction: with SGW = 1 a tree in workgroup memory; with SGW > 1 (the
// _sg builds, kmv4_sg.wgsl etc., on devices with subgroups of one fixed
// size S, SGW = min(TPR, S)) first a butterfly over SGW neighbouring lanes
// through subgroup shuffles (lane_xor_add: lanes.wgsl, or lanes_sg.wgsl),
// then the TPR / SGW lane sums through workgroup memory. The butterfly takes
// invocations lid and lid ^ o (o < SGW) to share a subgroup: subgroups of
// consecutive, aligned local indices, as the Vulkan, Metal and D3D12 drivers
// make them (WGSL leaves the mapping to the implementation).
// Also the row groups' layout that these kernels share (group_n0, group_row,
// group_rows).
// With BIAS, output row n gets the bias row's element n (binding 5, from
// float p.off_s; without BIAS the host binds A there, unread) added last
// (pxl_matmul_options.bias); rows_out_at takes the bias's start and whether
// to add it (kmv46.wgsl's second product: off_s2, BIAS2).
// Needs from the including module: overrides WG, TPR, ROWS; `red`, a
// workgroup array<f32> of WG * (ROWS + 1); C, a storage array<f32>; p with
// N, K, off_b, off_u, stride_b, off_c, stride_c, alpha, beta, eps and off_s;
// NORM (norm_mv.wgsl); lane_xor_add (lanes.wgsl or lanes_sg.wgsl).

override SGW: u32 = 1u;   // lanes summed by subgroup shuffles first (a power of two <= TPR; 1: none)
override BIAS: bool = false;   // the bias row added to each output last (not with SWIGLU)

@group(0) @binding(5) var<storage, read> BS: array<f32>;

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

// group_row of each of the group's ROWS rows of B (the rest 0)
fn group_rows(n0: u32, z: u32, stride: u32) -> array<u32, 8> {
    var rows: array<u32, 8>;
    for (var r = 0u; r < ROWS; r = r + 1u) { rows[r] = group_row(n0, r, z, stride); }
    return rows;
}

// Every invocation of the workgroup must call it (it has barriers): lid its
// local index, t = lid % TPR, n0 the group's first output row, z its batch,
// ss its sum of squares of A (read with NORM only).
fn rows_out(lid: u32, t: u32, n0: u32, z: u32, acc: array<f32, 8>, ss: f32) {
    rows_out_at(lid, t, TPR, n0, p.off_c + z * p.stride_c, p.N, p.off_s, BIAS, acc, ss);
}

// rows_out for row groups of tpr invocations (a power of two >= SGW), with
// the group's output rows at C[cbase + n0 + r] for n0 + r < n, plus
// BS[sbase + n0 + r] with bias (kmv46.wgsl's second product).
fn rows_out_at(lid: u32, t: u32, tpr: u32, n0: u32, cbase: u32, n: u32, sbase: u32, bias: bool, acc: array<f32, 8>,
               ss: f32) {
    let nr = select(ROWS, ROWS + 1u, NORM);   // the squares in row ROWS
    if (SGW > 1u) {
        var v: array<f32, 9>;
        for (var r = 0u; r < ROWS; r = r + 1u) { v[r] = acc[r]; }
        v[ROWS] = ss;
        for (var o = SGW / 2u; o > 0u; o = o >> 1u) {
            for (var r = 0u; r < nr; r = r + 1u) { v[r] = lane_xor_add(v[r], o); }
        }
        if (t % SGW == 0u) {
            for (var r = 0u; r < nr; r = r + 1u) { red[r * WG + lid] = v[r]; }
        }
        workgroupBarrier();
        if (t == 0u) {   // the group's tpr / SGW lane sums, in order
            for (var w = SGW; w < tpr; w = w + SGW) {
                for (var r = 0u; r < nr; r = r + 1u) { red[r * WG + lid] = red[r * WG + lid] + red[r * WG + lid + w]; }
            }
        }
    } else {
        for (var r = 0u; r < ROWS; r = r + 1u) { red[r * WG + lid] = acc[r]; }
        if (NORM) { red[ROWS * WG + lid] = ss; }
        workgroupBarrier();
        for (var h = tpr / 2u; h > 0u; h = h >> 1u) {
            if (t < h) {
                for (var r = 0u; r < nr; r = r + 1u) { red[r * WG + lid] = red[r * WG + lid] + red[r * WG + lid + h]; }
            }
            workgroupBarrier();
        }
    }
    if (t == 0u) {
        var inv = 1.0;
        if (NORM) { inv = inverseSqrt(red[ROWS * WG + lid] / f32(p.K) + p.eps); }
        for (var r = 0u; r < out_rows(); r = r + 1u) {
            if (n0 + r < n) {
                let idx = cbase + n0 + r;
                var v = red[r * WG + lid] * inv;
                if (SWIGLU) { v = silu_mul(v, red[(r + ROWS / 2u) * WG + lid] * inv); }
                var out = p.alpha * v;
                if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
                if (bias) { out = out + BS[sbase + n0 + r]; }
                C[idx] = out;
            }
        }
    }
}
