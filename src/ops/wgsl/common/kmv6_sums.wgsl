// The Q6_K unit loop of kmv6 (common/kmv6_body.wgsl's header describes
// it), shared by kmv6 and kmv46 (the second product of pxl_matmul_multi):
// invocation t's (of a row group of tpr) sums over its units of the ROWS
// rows of B whose blocks start at byte offsets rows[r], with A's row at vec4
// abase.
// Needs from the including module: A: array<vec4<f32>>, p (nb), override
// ROWS, NORM and nweight (norm_mv.wgsl), bytes4 (bytes.wgsl),
// MvSums (mv_sums.wgsl), and the weights' readers q6_word(o) (the u32 at
// even byte offset o: word_of.wgsl) and q6_half(o) (the f16 at even byte
// offset o, as an f32).

// The signed scale byte k (0..3) of w, as a float.
fn sbyte(w: u32, k: u32) -> f32 { return f32(bitcast<i32>((w >> (8u * k)) << 24u) >> 24u); }

fn kmv6_sums(t: u32, tpr: u32, abase: u32, rows: array<u32, 8>) -> MvSums {
    var acc: array<f32, 8>;    // the group's sums, one a row (zero-initialised)
    var ss = 0.0;   // the sum of squares of A (NORM)
    let units = p.nb * 16u;
    for (var u = t; u < units; u = u + tpr) {
        let blk = u >> 4u;
        let h = (u >> 3u) & 1u;
        let i = u & 7u;
        let ai = abase + blk * 64u + 32u * h + i;   // elements 256 blk + 128 h + 4 i, then + 32 g
        let aj = ai - abase;   // the vec4 index within the row (nweight)
        var x0 = A[ai];
        var x1 = A[ai + 8u];
        var x2 = A[ai + 16u];
        var x3 = A[ai + 24u];
        if (NORM) {
            ss = ss + dot(x0, x0) + dot(x1, x1) + dot(x2, x2) + dot(x3, x3);
            x0 = nweight(x0, aj);
            x1 = nweight(x1, aj + 8u);
            x2 = nweight(x2, aj + 16u);
            x3 = nweight(x3, aj + 24u);
        }
        let k = i >> 2u;   // l / 16
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let base = rows[r] + blk * 210u;
            let qa = q6_word(base + 64u * h + 4u * i);
            let qb = q6_word(base + 64u * h + 32u + 4u * i);
            let qh = q6_word(base + 128u + 32u * h + 4u * i);
            let s0 = q6_word(base + 192u + 8u * h);   // scales 8h .. 8h + 3
            let s1 = q6_word(base + 196u + 8u * h);   // 8h + 4 .. 8h + 7
            let d = q6_half(base + 208u);
            let v0 = (d * sbyte(s0, k)) * bytes4((qa & 0x0f0f0f0fu) | ((qh & 0x03030303u) << 4u), 32.0);
            let v1 = (d * sbyte(s0, k + 2u)) * bytes4((qb & 0x0f0f0f0fu) | (((qh >> 2u) & 0x03030303u) << 4u), 32.0);
            let v2 = (d * sbyte(s1, k)) * bytes4(((qa >> 4u) & 0x0f0f0f0fu) | (((qh >> 4u) & 0x03030303u) << 4u), 32.0);
            let v3 = (d * sbyte(s1, k + 2u)) * bytes4(((qb >> 4u) & 0x0f0f0f0fu) | (((qh >> 6u) & 0x03030303u) << 4u), 32.0);
            acc[r] = acc[r] + dot(v0, x0) + dot(v1, x1) + dot(v2, x2) + dot(v3, x3);
        }
    }
    return MvSums(acc, ss);
}
