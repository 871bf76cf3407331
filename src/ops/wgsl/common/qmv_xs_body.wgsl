// qmv_xs: one row of A (M = 1, the decode case) times Q8_0, Q4_0 or Q5_0
// weights with 32 <= 2 * nb <= 4 * WG half blocks a row; the A vector stays
// in registers. Shared by qmv_xs_kernel.wgsl (qmv_xs) and
// qmv_pair_kernel.wgsl (two products in one dispatch), each built twice:
// without subgroups (SGW = 1, lanes.wgsl) and with them (the _sg builds,
// lanes_sg.wgsl).
//
// A row group of XT invocations covers a whole row: invocation `lane` owns
// the half blocks lane + c * XT (c < XKCH) of every row, loads their 16 A
// values once, then walks the group's rows XRB at a time: it issues the loads
// of its halves of XRB rows together, decodes them into XRB partial sums, and
// the group reduces those: with SGW = 1 through workgroup memory (a
// transposed two-stage sum: no log-depth tree per row, three barriers a
// step); with SGW > 1 (subgroups of SGW consecutive invocations, as
// rows_out.wgsl assumes) by halving exchanges first, in which each step of
// shuffles hands half of an invocation's remaining row sums to its partner
// and adds the other half, so that after log2(min(XRB, SGW)) steps each
// invocation holds XRB / min(XRB, SGW) rows summed over that many lanes and
// the rest of the SGW lanes are summed by plain butterflies; the XT / SGW
// subgroup sums of each row then meet in workgroup memory, in order (one
// barrier a step: two buffers, taken in turn). Half h of a block: Q8_0
// elements 16h .. 16h+15; Q4_0 and Q5_0 elements 8h .. 8h+7 (low nibbles of
// bytes 8h .. 8h+7) and 16+8h .. 23+8h. A row's sum depends on XT, XKCH, XRB and SGW alone,
// not on where the row lies, so both kernels give a row the same floats.
//
// With swiglu (pxl_matmul_swiglu) each step's XRB weight rows are XRB / 2
// gate rows and the same XRB / 2 rows of the up weights (from byte off_u),
// and the step stores silu(g) * u for its XRB / 2 outputs (XRB >= 2).
//
// With Q8A (pxl_matmul_options.a_q8) each invocation rounds its halves of A
// to 8 bits once, after the norm (q8_round.wgsl: the 32 values of a block
// are the halves of invocations lane and lane ^ 1, which trade their maxima
// through workgroup memory, or by a shuffle with SGW > 1), and a half's sum
// is four dot4I8Packed of its quant bytes (Q4_0 / Q5_0: nibbles, with the
// fifth bits) against the rounded values: d_w (d_a (q . qa - z sum qa)), z = 0, 8 or 16, exact in
// integers up to the two multiplications.
//
// Needs from the including module: A (array<vec4<f32>>), C (array<f32>,
// read_write), BS (array<f32>, the bias rows), p (quant_params.wgsl),
// override WG, NORM and nscale (norm_mv.wgsl), q_elems.wgsl, lane_xor_add
// and lane_xor (lanes.wgsl or lanes_sg.wgsl), and the weights' reader
// bword(i, second): u32 word i of the first (second = false) or the second
// product's weights.

#include "silu_mul.wgsl"   // silu_mul (the SwiGLU step)
#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits (q8_round.wgsl)
#include "q8_round.wgsl"   // q8_scale, q8_pack16, q8_sum16, q8_amax16 (Q8A)

override Q8A: bool = false;  // A rounded to 8 bits per 32 values (pxl_matmul_options.a_q8)

override XT: u32 = 256u;     // invocations per row group (power of two, XRB .. WG)
override XKCH: u32 = 1u;     // half blocks per invocation and row (1 .. 4)
override XRB: u32 = 8u;      // rows per step (power of two; XRB * XKCH <= 16)
override SGW: u32 = 1u;      // lanes summed by subgroup shuffles first (a power of two <= XT; 1: none)

// [g][r][lane], rows padded (SGW > 1: xs_lanes' two buffers, [buf][g][r][subgroup])
var<workgroup> xred: array<f32, (WG / XT) * XRB * (XT + 1u)>;
var<workgroup> xred2: array<f32, WG>;

// element (within its block) that starts A vec4 i of half hp
fn xoff(hp: u32, i: u32, q4: bool) -> u32 {
    if (q4) { return select(8u * hp + 4u * i, 8u + 8u * hp + 4u * i, i >= 2u); }
    return 16u * hp + 4u * i;
}

struct Half {
    a: vec4<u32>,    // scale word, then quant words
    b: vec2<u32>,    // more quant words (Q8_0); the word after the scale's (Q5_0: qh)
}

// half hp of the block at byte off: the scale word and the words holding its
// 8 (Q4_0) or 16 (Q8_0) quant bytes, one more when those start mid-word
fn load_half(off: u32, hp: u32, q4: bool, q5: bool, second: bool) -> Half {
    let un = (off & 2u) == 0u;
    var r: Half;
    let w0 = bword(off >> 2u, second);
    if (q4) {
        let wq = (qs_at_of(off, q5) + 8u * hp) >> 2u;
        r.a = vec4<u32>(w0, bword(wq, second), bword(wq + 1u, second), bword(wq + select(1u, 2u, un), second));
        if (q5) { r.b = vec2<u32>(bword((off >> 2u) + 1u, second), 0u); }
    } else {
        let wq = (off + 2u + 16u * hp) >> 2u;
        r.a = vec4<u32>(w0, bword(wq, second), bword(wq + 1u, second), bword(wq + 2u, second));
        r.b = vec2<u32>(bword(wq + 3u, second), bword(wq + select(3u, 4u, un), second));
    }
    return r;
}

fn half_dot(w: Half, off: u32, hp: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, q4: bool,
            q5: bool) -> f32 {
    let un = (off & 2u) == 0u;
    var s: f32;
    if (q4) {
        let v0 = realign(w.a.y, w.a.z, un);
        let v1 = realign(w.a.z, w.a.w, un);
        if (q5) {
            let qh = qh_of(w.a.x, w.b.x, un) >> (8u * hp);
            let lo = 0x0f0f0f0fu;
            s = (dot(q5x4(v0 & lo, qh), x0) + dot(q5x4(v1 & lo, qh >> 4u), x1)) +
                (dot(q5x4((v0 >> 4u) & lo, qh >> 16u), x2) + dot(q5x4((v1 >> 4u) & lo, qh >> 20u), x3));
        } else {
            s = (dot(q4lo(v0), x0) + dot(q4lo(v1), x1)) + (dot(q4hi(v0), x2) + dot(q4hi(v1), x3));
        }
    } else {
        s = (dot(q8x4(realign(w.a.y, w.a.z, un)), x0) + dot(q8x4(realign(w.a.z, w.a.w, un)), x1)) +
            (dot(q8x4(realign(w.a.w, w.b.x, un)), x2) + dot(q8x4(realign(w.b.x, w.b.y, un)), x3));
    }
    return half_of(w.a.x, off) * s;
}

// half_dot with A rounded (Q8A): q the half's 16 rounded values (in xoff's
// order, four to a word), d their block's scale, qs their sum
fn half_dot_q8(w: Half, off: u32, hp: u32, q: vec4<u32>, d: f32, qs: i32, q4: bool, q5: bool) -> f32 {
    let un = (off & 2u) == 0u;
    var i: i32;
    if (q4) {
        let v0 = realign(w.a.y, w.a.z, un);
        let v1 = realign(w.a.z, w.a.w, un);
        let lo = 0x0f0f0f0fu;
        var n0 = v0 & lo;
        var n1 = v1 & lo;
        var n2 = (v0 >> 4u) & lo;
        var n3 = (v1 >> 4u) & lo;
        var z = 8;
        if (q5) {
            let qh = qh_of(w.a.x, w.b.x, un) >> (8u * hp);
            n0 = n0 | bit4_of(qh);
            n1 = n1 | bit4_of(qh >> 4u);
            n2 = n2 | bit4_of(qh >> 16u);
            n3 = n3 | bit4_of(qh >> 20u);
            z = 16;
        }
        i = (dot4I8Packed(n0, q.x) + dot4I8Packed(n1, q.y)) + (dot4I8Packed(n2, q.z) + dot4I8Packed(n3, q.w)) - z * qs;
    } else {
        i = (dot4I8Packed(realign(w.a.y, w.a.z, un), q.x) + dot4I8Packed(realign(w.a.z, w.a.w, un), q.y)) +
            (dot4I8Packed(realign(w.a.w, w.b.x, un), q.z) + dot4I8Packed(realign(w.b.x, w.b.y, un), q.w));
    }
    return half_of(w.a.x, off) * (d * f32(i));
}

// C[idx] = alpha * v (+ beta * C[idx] when beta != 0), plus BS[sidx] with
// bias: the floats of the product and then pxl_add of the row
fn xs_store(idx: u32, sidx: u32, v: f32, bias: bool) {
    var out = p.alpha * v;
    if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
    if (bias) { out = out + BS[sidx]; }
    C[idx] = out;
}

// One halving exchange of xs_lanes: of the 2 n sums v[0 .. 2n), the lower
// lane of each pair across o keeps the first n and the upper one the last n,
// each adding its partner's copy of them. Returns where the kept rows start
// among the 2 n (0 or n).
fn xs_halve(v: ptr<function, array<f32, 16>>, n: u32, o: u32, hi: bool) -> u32 {
    for (var i = 0u; i < n; i = i + 1u) {
        let lo_v = (*v)[i];
        let hi_v = (*v)[i + n];
        (*v)[i] = select(lo_v, hi_v, hi) + lane_xor(select(hi_v, lo_v, hi), o);
    }
    return select(0u, n, hi);
}

// One step's reduction with SGW > 1 (see the top): v the invocation's
// sums of the step's XRB rows from row n0 (gate and up rows with swiglu), g
// its row group, lane its index in it, buf the buffer of the step (its
// parity). The stages are written out (at most four halvings: XRB <= 16)
// so that every index into v is a constant once the overrides are set.
// Every invocation of the workgroup must call it (a barrier).
fn xs_lanes(lane: u32, g: u32, buf: u32, v: ptr<function, array<f32, 16>>, n0: u32, N: u32, cbase: u32, sbase: u32,
            bias: bool, swiglu: bool) {
    let hw = min(XRB, SGW);   // lanes the halvings span
    let nv = XRB / hw;        // sums each invocation holds after them: rows r0 .. r0 + nv - 1
    var r0 = 0u;
    if (hw >= 2u) { r0 = r0 + xs_halve(v, XRB / 2u, 1u, (lane & 1u) != 0u); }
    if (hw >= 4u) { r0 = r0 + xs_halve(v, XRB / 4u, 2u, (lane & 2u) != 0u); }
    if (hw >= 8u) { r0 = r0 + xs_halve(v, XRB / 8u, 4u, (lane & 4u) != 0u); }
    if (hw >= 16u) { r0 = r0 + xs_halve(v, XRB / 16u, 8u, (lane & 8u) != 0u); }
    for (var o = hw; o < SGW; o = o << 1u) {
        for (var i = 0u; i < nv; i = i + 1u) { (*v)[i] = lane_xor_add((*v)[i], o); }
    }
    let ns = XT / SGW;   // subgroups a row group: xred[buf][g][row][subgroup]
    let base = (buf * (WG / XT) + g) * XRB * ns;
    if (lane % SGW < hw) {   // one lane for each set of rows (the others hold copies)
        for (var i = 0u; i < nv; i = i + 1u) { xred[base + (r0 + i) * ns + lane / SGW] = (*v)[i]; }
    }
    workgroupBarrier();
    if (lane < XRB) {
        var s = 0.0;
        for (var w = 0u; w < ns; w = w + 1u) { s = s + xred[base + lane * ns + w]; }
        if (!swiglu) {
            if (n0 + lane < N) { xs_store(cbase + n0 + lane, sbase + n0 + lane, s, bias); }
        } else if (lane < XRB / 2u && n0 / 2u + lane < N) {
            var u = 0.0;   // output n0 / 2 + lane: gate row lane (s), up row XRB / 2 + lane (u)
            for (var w = 0u; w < ns; w = w + 1u) { u = u + xred[base + (lane + XRB / 2u) * ns + w]; }
            xs_store(cbase + n0 / 2u + lane, sbase + n0 / 2u + lane, silu_mul(s, u), false);
        }
    }
}

// The p.rpg rows from row grp * p.rpg of a product of N rows of weights in
// the format (q4, q5), read by bword(_, second) from byte off_b, rows
// row_bytes apart, with A's row at vec4 xa: row n goes to C[cbase + n] (plus
// BS[sbase + n] with bias). With swiglu, the p.rpg / 2 outputs from grp *
// p.rpg / 2 of gate rows at off_b and up rows at off_u (no bias). t is the
// invocation's local index; every invocation of the workgroup must call it
// (barriers), with the same q4, q5, second, bias and swiglu.
fn xs_rows(t: u32, grp: u32, xa: u32, q4: bool, q5: bool, second: bool, N: u32, off_b: u32, row_bytes: u32,
           cbase: u32, sbase: u32, bias: bool, swiglu: bool, off_u: u32) {
    let lane = t % XT;
    let g = t / XT;
    let nh = 2u * p.nb;
    let bs = block_bytes_of(q4, q5);
    var xv: array<vec4<f32>, 16>;        // [c * 4 + i]
    var hoff: array<u32, 4>;             // byte offset of each owned half's block within a row
    for (var c = 0u; c < XKCH; c = c + 1u) {
        let h = min(lane + c * XT, nh - 1u);
        let b = h / 2u;
        for (var i = 0u; i < 4u; i = i + 1u) { xv[c * 4u + i] = A[xa + b * 8u + xoff(h % 2u, i, q4) / 4u]; }
        hoff[c] = b * bs;
    }
    if (NORM) {   // the row's sum of squares from the registers (duplicated halves past the end left out)
        var ss = 0.0;
        for (var c = 0u; c < XKCH; c = c + 1u) {
            for (var i = 0u; i < 4u; i = i + 1u) {
                ss = ss + select(0.0, dot(xv[c * 4u + i], xv[c * 4u + i]), lane + c * XT < nh);
            }
        }
        var tot: f32;
        if (SGW > 1u) {   // a butterfly over each subgroup, then the XT / SGW subgroup sums in order
            for (var o = SGW / 2u; o > 0u; o = o >> 1u) { ss = lane_xor_add(ss, o); }
            if (lane % SGW == 0u) { xred2[t] = ss; }
            workgroupBarrier();
            tot = 0.0;
            for (var w = 0u; w < XT; w = w + SGW) { tot = tot + xred2[g * XT + w]; }
        } else {
            xred2[t] = ss;
            workgroupBarrier();
            for (var h = XT / 2u; h > 0u; h = h >> 1u) {
                if (lane < h) { xred2[t] = xred2[t] + xred2[t + h]; }
                workgroupBarrier();
            }
            tot = xred2[g * XT];
        }
        let inv = inverseSqrt(tot / f32(p.K) + p.eps);
        workgroupBarrier();
        for (var c = 0u; c < XKCH; c = c + 1u) {
            let b = min(lane + c * XT, nh - 1u) / 2u;
            let h = min(lane + c * XT, nh - 1u) % 2u;
            for (var i = 0u; i < 4u; i = i + 1u) {
                xv[c * 4u + i] = nscale(xv[c * 4u + i], inv, b * 8u + xoff(h, i, q4) / 4u);
            }
        }
    }
    var xq: array<vec4<u32>, 4>;         // Q8A: the owned halves rounded ([c])
    var xd: array<f32, 4>;               // and their blocks' scales
    var xsum: array<i32, 4>;             // and the sums of their 16 integers
    if (Q8A) {
        for (var c = 0u; c < XKCH; c = c + 1u) {
            let m = q8_amax16(xv[c * 4u], xv[c * 4u + 1u], xv[c * 4u + 2u], xv[c * 4u + 3u]);
            var mo: f32;   // the other half of the block's maximum: lane ^ 1 (XT is even)
            if (SGW > 1u) {
                mo = lane_xor(m, 1u);
            } else {
                xred2[t] = m;
                workgroupBarrier();
                mo = xred2[t ^ 1u];
                workgroupBarrier();
            }
            let sc = q8_scale(max(m, mo));
            xq[c] = q8_pack16(xv[c * 4u], xv[c * 4u + 1u], xv[c * 4u + 2u], xv[c * 4u + 3u], sc.y);
            xd[c] = sc.x;
            xsum[c] = q8_sum16(xq[c]);
        }
    }
    let row_start = grp * p.rpg;
    let base = g * XRB * (XT + 1u);
    let S = XT / XRB;                    // segments per row in the reduction
    for (var rb = 0u; rb < p.rpg; rb = rb + XRB) {
        var raw: array<Half, 16>;        // [r * XKCH + c]
        var roff: array<u32, 16>;
        for (var r = 0u; r < XRB; r = r + 1u) {
            var n = row_start + rb + r;
            var ob = off_b;
            if (swiglu) {   // output (row_start + rb) / 2 + r % (XRB / 2): its gate row, then its up row
                // (max: with XRB = 1, which never takes swiglu, XRB / 2 would be a divisor of 0, an
                // error at pipeline creation even on this path)
                n = (row_start + rb) / 2u + r % max(XRB / 2u, 1u);
                ob = select(off_b, off_u, r >= XRB / 2u);
            }
            roff[r] = ob + min(n, N - 1u) * row_bytes;
            for (var c = 0u; c < XKCH; c = c + 1u) {
                let h = min(lane + c * XT, nh - 1u);
                raw[r * XKCH + c] = load_half(roff[r] + hoff[c], h % 2u, q4, q5, second);
            }
        }
        var rs: array<f32, 16>;          // the invocation's sum of each of the step's rows
        for (var r = 0u; r < XRB; r = r + 1u) {
            var s = 0.0;
            for (var c = 0u; c < XKCH; c = c + 1u) {
                let h = lane + c * XT;
                var v: f32;
                if (Q8A) {
                    v = half_dot_q8(raw[r * XKCH + c], roff[r] + hoff[c], min(h, nh - 1u) % 2u, xq[c], xd[c], xsum[c],
                                    q4, q5);
                } else {
                    v = half_dot(raw[r * XKCH + c], roff[r] + hoff[c], min(h, nh - 1u) % 2u, xv[c * 4u],
                                 xv[c * 4u + 1u], xv[c * 4u + 2u], xv[c * 4u + 3u], q4, q5);
                }
                s = s + select(0.0, v, h < nh);
            }
            rs[r] = s;
        }
        if (SGW > 1u) {
            xs_lanes(lane, g, (rb / XRB) & 1u, &rs, row_start + rb, N, cbase, sbase, bias, swiglu);
        } else {
            for (var r = 0u; r < XRB; r = r + 1u) { xred[base + r * (XT + 1u) + lane] = rs[r]; }
            workgroupBarrier();
            {   // stage 1: invocation (r = lane % XRB, segment lane / XRB) sums XRB partials
                let r = lane % XRB;
                let sg = lane / XRB;
                var s = 0.0;
                for (var i = 0u; i < XRB; i = i + 1u) { s = s + xred[base + r * (XT + 1u) + sg * XRB + i]; }
                xred2[g * XT + r * S + sg] = s;
            }
            workgroupBarrier();
            if (lane < XRB) {                // stage 2: the S segment sums of row lane
                var s = 0.0;
                for (var i = 0u; i < S; i = i + 1u) { s = s + xred2[g * XT + lane * S + i]; }
                let n = row_start + rb + lane;
                if (swiglu) {
                    xred[base + lane] = s;   // (stage 1 has read xred)
                } else if (n < N) {
                    xs_store(cbase + n, sbase + n, s, bias);
                }
            }
            if (swiglu) {   // output o of the step: its gate row's sum o and up row's XRB / 2 + o
                workgroupBarrier();
                let n = (row_start + rb) / 2u + lane;
                if (lane < XRB / 2u && n < N) {
                    xs_store(cbase + n, sbase + n, silu_mul(xred[base + lane], xred[base + XRB / 2u + lane]), false);
                }
                workgroupBarrier();   // before the next step writes xred
            }
        }
    }
}
