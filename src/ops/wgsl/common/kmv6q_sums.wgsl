// The Q6_K unit loop on A rounded to 8 bits (kmv6q; kmv46's second product
// with Q8A2): invocation t's (of a row group of tpr) sums over its units of
// the ROWS rows of B whose blocks start at byte offsets rows[r], from A as
// round_a (kmv4_body.wgsl) left it in aq and ad.
//
// A Q6_K block (210 bytes: ql 128, qh 64, 16 int8 scales, f16 d) holds
// element 128 h + 32 g + l (h < 2, g < 4, l < 32) as 6 bits: the low (g =
// 0, 1) or high (g = 2, 3) nibble of ql byte 64 h + 32 (g % 2) + l, and bits
// 2 g, 2 g + 1 of qh byte 32 h + l; value (d * scale[8 h + l / 16 + 2 g]) *
// (q - 32). The unit of work is 64 elements: with u = 4 * block + 2 h + j,
// the elements 128 h + 32 g + 16 j + (0..15) for g < 4, read as three
// 16-byte fields (ql bytes 64 h + 16 j, 64 h + 32 + 16 j and qh bytes 32 h +
// 16 j) and the 18 bytes of scales and d. Blocks start on even offsets, so
// a field starts s = (block's offset) % 16 bytes into a 16-byte word: it is
// taken from that word and the next (both read, so that invocations whose
// blocks differ in alignment do not diverge; both hold bytes of the tensor,
// so both lie inside its binding, which pxl_op_bind rounds up to 16 bytes).
// Invocation t of a row group takes units t, t + tpr, ...: four neighbours
// share a block and read neighbouring words.
//
// The 16 elements of (h, g, j) are one word of aq (values 16 i .. 16 i + 15,
// i = 16 block + 8 h + 2 g + j) under one A scale (the 32-block 8 block + 4 h
// + g) and one Q6_K scale: (d sc) d_a (q . qa - 32 sum qa) over the 16, the
// integers by dot4I8Packed.
//
// Needs from the including module: aq, ad (round_a), p (nb, K), overrides
// ROWS and NORM, MvSums (mv_sums.wgsl), q8_sum16 (q8_round.wgsl), and the
// weights' reader q6v(i), the 16-byte word i of the Q6_K weights.

// The 16 bytes at even byte offset s (< 16) of the 32 bytes a, b (w), and
// in next's low 16 bits the two bytes after them (s + 16, s + 17: the
// block's d, after its scales).
struct Field16 {
    w: vec4<u32>,
    next: u32,
}

fn field16(a: vec4<u32>, b: vec4<u32>, s: u32) -> Field16 {
    let k1 = (s & 4u) != 0u;   // start a word further (s / 4 odd)
    let k2 = (s & 8u) != 0u;   // two words further
    let a1 = select(a, vec4<u32>(a.y, a.z, a.w, b.x), k1);
    let b1 = select(b, vec4<u32>(b.y, b.z, b.w, b.w), k1);
    let lo = select(a1, vec4<u32>(a1.z, a1.w, b1.x, b1.y), k2);   // words s / 4 .. s / 4 + 3
    let nx = select(b1.x, b1.z, k2);                              // word s / 4 + 4
    let hi = vec4<u32>(lo.y, lo.z, lo.w, nx);
    let half = (s & 2u) != 0u;
    var f: Field16;
    f.w = select(lo, (lo >> vec4<u32>(16u)) | (hi << vec4<u32>(16u)), half);
    f.next = select(nx, nx >> 16u, half);
    return f;
}

// q . qa over one word of 16 6-bit values (bytes of w, unsigned) and one of aq
fn dot16(w: vec4<u32>, qa: vec4<u32>) -> i32 {
    return dot4I8Packed(w.x, qa.x) + dot4I8Packed(w.y, qa.y) + dot4I8Packed(w.z, qa.z) + dot4I8Packed(w.w, qa.w);
}

// signed byte k (0..3) of w, as a float
fn sbyte_f(w: u32, k: u32) -> f32 { return f32(bitcast<i32>((w >> (8u * k)) << 24u) >> 24u); }

fn kmv6q_sums(t: u32, tpr: u32, rows: array<u32, 8>) -> MvSums {
    var acc: array<f32, 8>;
    var ss = 0.0;   // the group's share of the sum of squares (NORM), summed over the group by rows_out
    if (NORM) {
        for (var b = t; b < p.K / 32u; b = b + tpr) { ss = ss + ad[b].z; }
    }
    let lo4 = vec4<u32>(0x0f0f0f0fu);
    let lo2 = vec4<u32>(0x03030303u);
    let units = p.nb * 4u;
    for (var u = t; u < units; u = u + tpr) {
        let blk = u >> 2u;
        let h = (u >> 1u) & 1u;
        let j = u & 1u;
        // A: the four words of the unit's values, their scales and sums
        let i0 = blk * 16u + 8u * h + j;
        let qa0 = aq[i0];
        let qa1 = aq[i0 + 2u];
        let qa2 = aq[i0 + 4u];
        let qa3 = aq[i0 + 6u];
        let e = blk * 8u + 4u * h;
        let da = vec4<f32>(ad[e].x, ad[e + 1u].x, ad[e + 2u].x, ad[e + 3u].x);
        let sa = vec4<f32>(f32(q8_sum16(qa0)), f32(q8_sum16(qa1)), f32(q8_sum16(qa2)), f32(q8_sum16(qa3))) * 32.0;
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let bo = rows[r] + blk * 210u;   // the block's byte offset
            let wb = bo >> 4u;
            let s = bo & 15u;
            // fields at block bytes 64 h + 16 j, 64 h + 32 + 16 j, 128 + 32 h + 16 j, and 192 (scales, d)
            let f1 = wb + 4u * h + j;
            let f3 = wb + 8u + 2u * h + j;
            let ql0 = field16(q6v(f1), q6v(f1 + 1u), s).w;
            let ql1 = field16(q6v(f1 + 2u), q6v(f1 + 3u), s).w;
            let qh = field16(q6v(f3), q6v(f3 + 1u), s).w;
            let sd = field16(q6v(wb + 12u), q6v(wb + 13u), s);
            let d = unpack2x16float(sd.next).x;
            // scales 8 h + j + 2 g: bytes j and j + 2 of scale words 2 h and 2 h + 1
            let sw0 = select(sd.w.x, sd.w.z, h == 1u);
            let sw1 = select(sd.w.y, sd.w.w, h == 1u);
            let sc = vec4<f32>(sbyte_f(sw0, j), sbyte_f(sw0, j + 2u), sbyte_f(sw1, j), sbyte_f(sw1, j + 2u));
            let q0 = (ql0 & lo4) | ((qh & lo2) << vec4<u32>(4u));
            let q1 = (ql1 & lo4) | (((qh >> vec4<u32>(2u)) & lo2) << vec4<u32>(4u));
            let q2 = ((ql0 >> vec4<u32>(4u)) & lo4) | (((qh >> vec4<u32>(4u)) & lo2) << vec4<u32>(4u));
            let q3 = ((ql1 >> vec4<u32>(4u)) & lo4) | (((qh >> vec4<u32>(6u)) & lo2) << vec4<u32>(4u));
            let is = vec4<f32>(f32(dot16(q0, qa0)), f32(dot16(q1, qa1)), f32(dot16(q2, qa2)), f32(dot16(q3, qa3))) - sa;
            acc[r] = acc[r] + d * dot(sc * da, is);
        }
    }
    return MvSums(acc, ss);
}
