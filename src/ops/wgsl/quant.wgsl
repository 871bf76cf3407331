// Quantized matrix products: C = alpha * A . B^T + beta * C (beta = 0: C not
// read), B a GGUF Q8_0, Q4_0 or Q5_0 matrix [N, K] (overrides Q4, and Q4 with
// Q5, pick the format).
//
// B is bound as u32 words. Blocks are 34 (Q8_0), 18 (Q4_0) or 22 (Q5_0:
// the scale, four bytes of fifth bits qh, then Q4_0's sixteen quant bytes)
// bytes, so a block starts at an even byte offset that is word-aligned or not: its f16
// scale d is the low or high half of the word that holds it, and its quant
// bytes are re-assembled from two neighbouring words with shifts. Every word
// read holds at least one byte of B, and the buffer is padded to 16 bytes, so
// no read leaves the buffer.
//
// Three kernels:
//
// qmv_xs (M = 1, the decode case, rows of 32 to 2048 blocks): A stays in
// registers and invocations own fixed half blocks of every row; see below.
//
// qmv (M <= 8, and M = 1 rows outside qmv_xs's range): the work unit is a
// quarter block, 8 of its 32 elements:
//   Q8_0: quarter q holds elements 8q .. 8q+7 (quant bytes 8q .. 8q+7);
//   Q4_0: quarter q holds elements 4q .. 4q+3 (low nibbles of bytes 4q .. 4q+3)
//         and 16+4q .. 16+4q+3 (their high nibbles),
// either way two vec4s of A, at elements kpos0(q) and kpos1(q). A row group
// of TPR invocations computes ROWS rows of C (times NCOL rows of A); its
// invocations walk the blocks of those rows, four to a block and TPR / 4
// blocks side by side, so consecutive invocations read consecutive bytes of B
// and of A, and the A vectors loaded for a block serve all ROWS rows. Each
// step first issues the loads of UNROLL blocks of each row, then decodes
// them. A workgroup holds WG / TPR row groups; the partial sums are reduced in
// workgroup memory at the end.
//
// qmm (M > 8): 64 x 64 output tiles, 256 invocations each computing 4 x 4.
// K advances one block (32) at a time: A's 64 x 32 tile and B's 32 x 64 tile,
// decoded to f32, are stored k-major in workgroup memory.
//
// Batches run along grid z in all three. Quants become floats without
// int-to-float conversions (see MAGIC); every product d * q * a is formed
// exactly as on the CPU, only the order of the f32 sums differs.

override Q4: bool = false;
override Q5: bool = false;   // with Q4: Q5_0 (element i's fifth bit is bit i of qh; value nibble + 16 bit - 16)

struct Params {
    M: u32, N: u32, K: u32, nb: u32,                          // nb = K / 32
    row_bytes: u32, stride_a: u32, stride_b: u32, stride_c: u32, // A, C in floats; B in bytes
    alpha: f32, beta: f32, rpg: u32, off_a: u32,                 // rpg: rows per row group (qmv_xs); qmv with
                                                                 // SWIGLU: the up weights' byte offset
    off_b: u32, off_c: u32, off_n: u32, eps: f32,    // view offsets: A, C, NW in floats, B in bytes; eps: NORM's
    off_s: u32, pad0: u32, pad1: u32, pad2: u32,     // the bias row's offset in floats (BIAS)
}

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
// qmv and qmv_xs: the bias row added to C last (override BIAS; without it
// the host binds A here, unread): pxl_matmul_options.bias
@group(0) @binding(5) var<storage, read> BS: array<f32>;

override BIAS: bool = false;

// C[idx] as store_c writes it, plus bias element n with BIAS: the floats of
// the product and then pxl_add of the row
fn store_cb(idx: u32, n: u32, v: f32) {
    var out = p.alpha * v;
    if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
    if (BIAS) { out = out + BS[p.off_s + n]; }
    C[idx] = out;
}

fn block_bytes() -> u32 { return select(34u, select(18u, 22u, Q5), Q4); }
// where a Q4_0 / Q5_0 block's quant bytes start
fn qs_at(off: u32) -> u32 { return off + select(2u, 6u, Q5); }
// first element of the quarter's two vec4s
fn kpos0(q: u32) -> u32 { return select(8u * q, 4u * q, Q4); }
fn kpos1(q: u32) -> u32 { return select(8u * q + 4u, 16u + 4u * q, Q4); }

struct Quarter {
    d: f32,          // the block's scale
    v0: vec4<f32>,   // integer values (Q4_0: already minus 8) at kpos0 .. kpos0+3
    v1: vec4<f32>,   // at kpos1 .. kpos1+3
}

// Integers to floats without int-to-float conversions (a quarter-rate
// instruction on many GPUs): for 0 <= n < 2^23, the float with bits
// 0x4B000000 | n is exactly 2^23 + n, and subtracting 2^23 + bias is exact.
const MAGIC: u32 = 0x4B000000u;

// the four bytes of w as signed integers (Q8_0 quants)
fn q8x4(w: u32) -> vec4<f32> {
    let t = vec4<u32>(w ^ 0x80808080u);   // q + 128 in each byte
    return bitcast<vec4<f32>>(((t >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388736.0;
}
// the low / high nibbles of the four bytes of w, minus 8 (Q4_0 quants); the
// nibble mask goes on the whole word first, so each float is one byte select
fn q4lo(w: u32) -> vec4<f32> {
    let m = vec4<u32>(w & 0x0f0f0f0fu);
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388616.0;
}
fn q4hi(w: u32) -> vec4<f32> {
    let m = vec4<u32>((w >> 4u) & 0x0f0f0f0fu);
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388616.0;
}
// the word at byte 2 of the pair (lo, hi) when un, else lo
fn realign(lo: u32, hi: u32, un: bool) -> u32 {
    return select(lo, (lo >> 16u) | (hi << 16u), un);
}
// Q5_0: the four 4-bit values of `nib` (one a byte, as masked from a quant
// word) with bits 0..3 of `bits` as their fifth bits, minus 16. The bits join
// the nibbles as integers, so each float is one MAGIC conversion and one
// subtraction, as in q4lo: the sum of two such floats (2^24 and more) loses
// the last bit if a compiler reassociates it, as the NVIDIA driver appears to
// (with two, every Q5_0 op case failed on an H200; llvmpipe and SwiftShader
// passed).
fn q5x4(nib: u32, bits: u32) -> vec4<f32> {
    let m = vec4<u32>(nib | bit4_of(bits));
    return bitcast<vec4<f32>>(((m >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)) | vec4<u32>(MAGIC)) - 8388624.0;
}
// Q5_0: a block's qh from the word w0 holding its scale and the next word w1
// (un: the block starts on a word, so qh straddles them)
fn qh_of(w0: u32, w1: u32, un: bool) -> u32 { return select(w1, (w0 >> 16u) | (w1 << 16u), un); }
#include "bytes.wgsl"   // half_of(w, off): a block's f16 scale d from the word w holding it; bit4_of (Q5_0)

// The words that hold quarter q of the block at byte `off` of B: the word
// with the scale, then the two (Q4_0, Q5_0) or three (Q8_0) words from the
// one that holds the quarter's first quant byte, and for Q5_0 the word after
// the scale's (qh). Split from decode() so that callers can issue the loads
// of several blocks before using any.
fn load_raw(off: u32, q: u32) -> vec4<u32> {
    // the quant bytes start at off + 2 (or 6): mid-word exactly when the block is word-aligned
    let un = (off & 2u) == 0u;
    let w0 = B[off >> 2u];
    if (Q4) {
        let wq = (qs_at(off) + 4u * q) >> 2u;
        var wh = 0u;
        if (Q5) { wh = B[(off >> 2u) + 1u]; }
        return vec4<u32>(w0, B[wq], B[wq + select(0u, 1u, un)], wh);
    }
    let wq = (off + 2u + 8u * q) >> 2u;
    return vec4<u32>(w0, B[wq], B[wq + 1u], B[wq + select(1u, 2u, un)]);
}

fn decode(w: vec4<u32>, off: u32, q: u32) -> Quarter {
    let un = (off & 2u) == 0u;
    var r: Quarter;
    r.d = half_of(w.x, off);
    if (Q4) {
        let v = realign(w.y, w.z, un);
        if (Q5) {
            let qh = qh_of(w.x, w.w, un);
            r.v0 = q5x4(v & 0x0f0f0f0fu, qh >> (4u * q));
            r.v1 = q5x4((v >> 4u) & 0x0f0f0f0fu, qh >> (16u + 4u * q));
        } else {
            r.v0 = q4lo(v);
            r.v1 = q4hi(v);
        }
    } else {
        r.v0 = q8x4(realign(w.y, w.z, un));
        r.v1 = q8x4(realign(w.z, w.w, un));
    }
    return r;
}

// Quarter q of the block that starts at byte `off` of B.
fn quarter(off: u32, q: u32) -> Quarter {
    return decode(load_raw(off, q), off, q);
}

#include "tile_4x4.wgsl"   // store_c, and the qmm/kmm tile helpers (see ---- qmm)

// ---- qmv ------------------------------------------------------------------------

override WG: u32 = 256u;     // invocations per workgroup (power of two)
override TPR: u32 = 32u;     // invocations per row group (power of two, 4 .. WG)
override ROWS: u32 = 2u;     // rows per row group (1 .. 8)
override UNROLL: u32 = 4u;   // blocks per invocation whose loads are issued together (UNROLL * ROWS <= 16)
override NCOL: u32 = 1u;     // rows of A done at once (M <= 8; ROWS * NCOL <= 32)

var<workgroup> red: array<f32, WG * ROWS * NCOL>;

#include "norm_mv.wgsl"   // NORM: rmsnorm fused into qmv and qmv_xs (norm_inv, nscale, NW)
#include "swiglu_mv.wgsl"   // SWIGLU (qmv): gate and up rows in one row group (out_rows, w_out, w_is_up, silu_mul)

@compute @workgroup_size(WG)
fn qmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let lane = t % TPR;
    let grp = t / TPR;
    let q = lane & 3u;
    let bps = TPR / 4u;                  // blocks side by side
    let row0 = ((wid.y * nwg.x + wid.x) * (WG / TPR) + grp) * out_rows();
    let xa = (p.off_a + wid.z * p.stride_a) / 4u;  // this batch's A, in vec4s
    let k4 = p.K / 4u;
    let bs = block_bytes();
    // byte offset of each row (rows past N repeat the last one; not stored)
    var roff: array<u32, 8>;
    for (var r = 0u; r < ROWS; r = r + 1u) {
        roff[r] = select(p.off_b, p.rpg, w_is_up(r)) + wid.z * p.stride_b + min(w_out(row0, r), p.N - 1u) * p.row_bytes;
    }
    var acc: array<f32, 32>;             // [r * NCOL + c]
    let x0i = kpos0(q) / 4u;
    let x1i = kpos1(q) / 4u;
    var inv: array<f32, 8>;
    if (NORM) { inv = norm_inv(t, xa); }
    for (var blk0 = lane / 4u; blk0 < p.nb; blk0 = blk0 + bps * UNROLL) {
        // all of this step's weight loads first (past the row's end: the last
        // block again, its result dropped), so that they are in flight together
        var raw: array<vec4<u32>, 16>;
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let b = min(blk0 + u * bps, p.nb - 1u);
            for (var r = 0u; r < ROWS; r = r + 1u) { raw[u * ROWS + r] = load_raw(roff[r] + b * bs, q); }
        }
        for (var u = 0u; u < UNROLL; u = u + 1u) {
            let bu = blk0 + u * bps;
            let b = min(bu, p.nb - 1u);
            for (var c = 0u; c < NCOL; c = c + 1u) {
                let x0 = nscale(A[xa + c * k4 + b * 8u + x0i], inv[c], b * 8u + x0i);
                let x1 = nscale(A[xa + c * k4 + b * 8u + x1i], inv[c], b * 8u + x1i);
                for (var r = 0u; r < ROWS; r = r + 1u) {
                    let v = decode(raw[u * ROWS + r], roff[r] + b * bs, q);
                    let s = v.d * (dot(v.v0, x0) + dot(v.v1, x1));
                    acc[r * NCOL + c] = acc[r * NCOL + c] + select(0.0, s, bu < p.nb);
                }
            }
        }
    }
    let nv = ROWS * NCOL;
    let rbase = grp * nv * TPR;
    for (var i = 0u; i < nv; i = i + 1u) { red[rbase + i * TPR + lane] = acc[i]; }
    workgroupBarrier();
    var w = TPR / 2u;
    loop {
        if (w == 0u) { break; }
        if (lane < w) {
            for (var i = 0u; i < nv; i = i + 1u) {
                let j = rbase + i * TPR + lane;
                red[j] = red[j] + red[j + w];
            }
        }
        workgroupBarrier();
        w = w / 2u;
    }
    for (var i = lane; i < out_rows() * NCOL; i = i + TPR) {   // (nv may exceed TPR)
        let n = row0 + i / NCOL;
        let c = i % NCOL;
        var v = red[rbase + i * TPR];
        if (SWIGLU) { v = silu_mul(v, red[rbase + (i + ROWS / 2u * NCOL) * TPR]); }
        if (n < p.N) { store_cb(p.off_c + wid.z * p.stride_c + c * p.N + n, n, v); }
    }
}

// ---- qmv_xs -----------------------------------------------------------------------

// M = 1 with 32 <= 2 * nb <= 4 * WG: the A vector stays in registers. A row
// group of XT invocations covers a whole row: invocation `lane` owns the half
// blocks lane + c * XT (c < XKCH) of every row, loads their 16 A values once,
// then walks the group's rows XRB at a time: it issues the loads of its
// halves of XRB rows together, decodes them into XRB partial sums, and the
// group reduces those through workgroup memory (a transposed two-stage sum:
// no log-depth tree per row). Half h of a block: Q8_0 elements 16h .. 16h+15;
// Q4_0 and Q5_0 elements 8h .. 8h+7 (low nibbles of bytes 8h .. 8h+7) and
// 16+8h .. 23+8h.

override XT: u32 = 256u;     // invocations per row group (power of two, XRB .. WG)
override XKCH: u32 = 1u;     // half blocks per invocation and row (1 .. 4)
override XRB: u32 = 8u;      // rows per step (power of two; XRB * XKCH <= 16)

var<workgroup> xred: array<f32, (WG / XT) * XRB * (XT + 1u)>;   // [g][r][lane], rows padded
var<workgroup> xred2: array<f32, WG>;

// element (within its block) that starts A vec4 i of half hp
fn xoff(hp: u32, i: u32) -> u32 {
    if (Q4) { return select(8u * hp + 4u * i, 8u + 8u * hp + 4u * i, i >= 2u); }
    return 16u * hp + 4u * i;
}

struct Half {
    a: vec4<u32>,    // scale word, then quant words
    b: vec2<u32>,    // more quant words (Q8_0); the word after the scale's (Q5_0: qh)
}

// half hp of the block at byte off: the scale word and the words holding its
// 8 (Q4_0) or 16 (Q8_0) quant bytes, one more when those start mid-word
fn load_half(off: u32, hp: u32) -> Half {
    let un = (off & 2u) == 0u;
    var r: Half;
    let w0 = B[off >> 2u];
    if (Q4) {
        let wq = (qs_at(off) + 8u * hp) >> 2u;
        r.a = vec4<u32>(w0, B[wq], B[wq + 1u], B[wq + select(1u, 2u, un)]);
        if (Q5) { r.b = vec2<u32>(B[(off >> 2u) + 1u], 0u); }
    } else {
        let wq = (off + 2u + 16u * hp) >> 2u;
        r.a = vec4<u32>(w0, B[wq], B[wq + 1u], B[wq + 2u]);
        r.b = vec2<u32>(B[wq + 3u], B[wq + select(3u, 4u, un)]);
    }
    return r;
}

fn half_dot(w: Half, off: u32, hp: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> f32 {
    let un = (off & 2u) == 0u;
    var s: f32;
    if (Q4) {
        let v0 = realign(w.a.y, w.a.z, un);
        let v1 = realign(w.a.z, w.a.w, un);
        if (Q5) {
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

@compute @workgroup_size(WG)
fn qmv_xs(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = lid.x;
    let lane = t % XT;
    let g = t / XT;
    let nh = 2u * p.nb;
    let bs = block_bytes();
    let xa = (p.off_a + wid.z * p.stride_a) / 4u;
    var xv: array<vec4<f32>, 16>;        // [c * 4 + i]
    var hoff: array<u32, 4>;             // byte offset of each owned half's block within a row
    for (var c = 0u; c < XKCH; c = c + 1u) {
        let h = min(lane + c * XT, nh - 1u);
        let b = h / 2u;
        for (var i = 0u; i < 4u; i = i + 1u) { xv[c * 4u + i] = A[xa + b * 8u + xoff(h % 2u, i) / 4u]; }
        hoff[c] = b * bs;
    }
    if (NORM) {   // the row's sum of squares from the registers (duplicated halves past the end left out)
        var ss = 0.0;
        for (var c = 0u; c < XKCH; c = c + 1u) {
            for (var i = 0u; i < 4u; i = i + 1u) {
                ss = ss + select(0.0, dot(xv[c * 4u + i], xv[c * 4u + i]), lane + c * XT < nh);
            }
        }
        xred2[t] = ss;
        workgroupBarrier();
        for (var h = XT / 2u; h > 0u; h = h >> 1u) {
            if (lane < h) { xred2[t] = xred2[t] + xred2[t + h]; }
            workgroupBarrier();
        }
        let inv = inverseSqrt(xred2[g * XT] / f32(p.K) + p.eps);
        workgroupBarrier();
        for (var c = 0u; c < XKCH; c = c + 1u) {
            let b = min(lane + c * XT, nh - 1u) / 2u;
            let h = min(lane + c * XT, nh - 1u) % 2u;
            for (var i = 0u; i < 4u; i = i + 1u) {
                xv[c * 4u + i] = nscale(xv[c * 4u + i], inv, b * 8u + xoff(h, i) / 4u);
            }
        }
    }
    let row_start = ((wid.y * nwg.x + wid.x) * (WG / XT) + g) * p.rpg;
    let base = g * XRB * (XT + 1u);
    let S = XT / XRB;                    // segments per row in the reduction
    for (var rb = 0u; rb < p.rpg; rb = rb + XRB) {
        var raw: array<Half, 16>;        // [r * XKCH + c]
        var roff: array<u32, 16>;
        for (var r = 0u; r < XRB; r = r + 1u) {
            roff[r] = p.off_b + wid.z * p.stride_b + min(row_start + rb + r, p.N - 1u) * p.row_bytes;
            for (var c = 0u; c < XKCH; c = c + 1u) {
                let h = min(lane + c * XT, nh - 1u);
                raw[r * XKCH + c] = load_half(roff[r] + hoff[c], h % 2u);
            }
        }
        for (var r = 0u; r < XRB; r = r + 1u) {
            var s = 0.0;
            for (var c = 0u; c < XKCH; c = c + 1u) {
                let h = lane + c * XT;
                let v = half_dot(raw[r * XKCH + c], roff[r] + hoff[c], min(h, nh - 1u) % 2u, xv[c * 4u],
                                 xv[c * 4u + 1u], xv[c * 4u + 2u], xv[c * 4u + 3u]);
                s = s + select(0.0, v, h < nh);
            }
            xred[base + r * (XT + 1u) + lane] = s;
        }
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
            if (n < p.N) { store_cb(p.off_c + wid.z * p.stride_c + n, n, s); }
        }
    }
}

// ---- qmm ------------------------------------------------------------------------

// As, Bs (k-major tiles in workgroup memory), tile_fma32, tile_store

@compute @workgroup_size(16, 16)
fn qmm(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * 16u + tx;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 64u;
    // loaders: row tid % 64 of the tile (consecutive invocations store
    // consecutive m or n); A: elements 8 * (tid / 64) .. +8 of the block,
    // B: quarter tid / 64.
    let lr = tid % 64u;
    let lc = tid / 64u;
    let am = m0 + lr;
    let a_ok = am < p.M;
    let a_row = (p.off_a + wid.z * p.stride_a + min(am, p.M - 1u) * p.K) / 4u;  // vec4 index
    let bn = n0 + lr;
    let b_ok = bn < p.N;
    let b_row = p.off_b + wid.z * p.stride_b + min(bn, p.N - 1u) * p.row_bytes;
    let bs = block_bytes();
    let k0 = kpos0(lc);
    let k1 = kpos1(lc);
    let sv = lr / 4u;
    let sc = lr % 4u;

    var acc: array<vec4<f32>, 4>;
    for (var blk = 0u; blk < p.nb; blk = blk + 1u) {
        let av0 = select(vec4<f32>(0.0), A[a_row + blk * 8u + 2u * lc], a_ok);
        let av1 = select(vec4<f32>(0.0), A[a_row + blk * 8u + 2u * lc + 1u], a_ok);
        let v = quarter(b_row + blk * bs, lc);
        let d = select(0.0, v.d, b_ok);
        let bv0 = d * v.v0;
        let bv1 = d * v.v1;
        for (var e = 0u; e < 4u; e = e + 1u) {
            As[(8u * lc + e) * 16u + sv][sc] = av0[e];
            As[(8u * lc + 4u + e) * 16u + sv][sc] = av1[e];
            Bs[(k0 + e) * 16u + sv][sc] = bv0[e];
            Bs[(k1 + e) * 16u + sv][sc] = bv1[e];
        }
        workgroupBarrier();
        tile_fma32(&acc, tx, ty);
        workgroupBarrier();
    }
    tile_store(acc, p.off_c + wid.z * p.stride_c, m0, n0, tx, ty);
}
