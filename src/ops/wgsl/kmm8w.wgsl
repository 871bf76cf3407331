// Tiled K-quant products with A rounded to 8 bits (pxl_matmul_options.a_q8,
// M > 8; host side: src/ops/matmul_quant.c, which takes kmm8.wgsl where
// these do not apply): C = alpha * A' . B^T + beta * C with A' the rounding
// qa8.wgsl wrote into Q and B [N, K]:
//   kmm8w: Q4_K (layout: PXL_Q4_K in include/pxl/ops.h), read 16 bytes at a
//     time (B's offsets on 16 bytes); per 32-value sub-block an exact integer
//     sum (dot4I8Packed), then da (d sc) isum - (da sum qa) (dmin m);
//   kmm8w with the override Q5: Q5_K (PXL_Q5_K), the same with each quant
//     word's fifth bits from the block's qh word of the same half (bit 2j for
//     the low nibbles, 2j + 1 for the high: kmv4.wgsl), values 0 .. 31;
//   kmm8w6: Q6_K (PXL_Q6_K; blocks on 2-byte offsets, read a word at a time),
//     tiles of 64 x 64 (TN = 4); per 16 values da (d sc) isum;
//   kmm8w with the override QB (block bytes): the 32-value formats, K a
//     multiple of 64, blocks on 2-byte offsets: Q8_0 (QB = 34: the 32 signed
//     bytes as they are), Q4_0 (18: the low nibbles of the 16 quant bytes are
//     values 0..15, the high ones 16..31) and Q5_0 (22: as Q4_0 with bit i of
//     the word at byte 2 (qh) as value i's bit 4). A step takes blocks 2 st
//     and 2 st + 1 in place of sub-blocks 2j and 2j + 1, with Bsw[n] = (d, m
//     d) of each: Q4_K's form with the min term m = 0 (Q8_0), 8 (Q4_0) or 16
//     (Q5_0), as kmm8.wgsl's KQ8 / KQ40 / KQ50.
// The same sums as kmm8.wgsl, in the same order. kmm8wn (below) is kmm8w
// for products whose weights are rows of one matrix in turn, with two or
// three outputs.
//
// Tiles of 64 x 16 TN outputs, 16 x 16 invocations each owning 4 rows
// (4 ty + i) and TN columns (tx + 16 j, so that the 16 invocations of a row
// read 16 neighbouring tile rows of B: no bank conflicts with RS = 5). K
// advances 64 values (sub-blocks 2j and 2j + 1 of a block, the low and high
// nibbles of the same 32 quant bytes) a step, through workgroup memory:
//   Aw[m * RS + v]: values 16 v .. 16 v + 15 of the step for tile row m,
//     four signed bytes a word (v = 0, 1: sub-block 2j; 2, 3: 2j + 1);
//   Bw[n * RS + v]: the same for tile column n, the 4-bit quants as bytes;
//   Asw[m] = (d, d sum q) of the two sub-blocks of A; Bsw[n] = (d sc, dmin m).
// Each invocation loads one 16-byte word of A and (Q4_K) at most one of B's
// quants and one of B's block headers (or of A's scales) per step, and
// issues the next step's loads before it multiplies this one, so that their
// latency hides behind the arithmetic. Q6_K's step is its sub-blocks s0 =
// 4h + g and s1 = s0 + 2 (j = 2h + g): the low and high nibbles of
// ql[64h + 32g + l] with bits 2g.. and 2g + 4.. of qh[32h + l] (kmm8.wgsl),
// taken as the signed bytes q - 32, Bsw[n] the d sc of its four 16-value
// halves and Asw[m] = (d of s0, 0, d of s1, 0).
//
// Split K (override SPLITK > 1, for products with few tiles): workgroup x
// is tile column * SPLITK + split, each split takes its share of the steps
// and stores its raw sums at ((split * batches + z) * M + m) * N + n of the
// buffer bound as C (scratch), and kmm8_sum adds the splits up into C.
//
// Params (qmm_params): as kmm8.wgsl; off_b and stride_b in bytes, multiples
// of 16 for kmm8w's K-quants, of 2 for kmm8w6 and the 32-value formats (QB);
// nb: B's blocks a row; off_a: where Q's scales start, in vec4s; stride_a: Q's rows
// between batches (M, or 0 when A is shared). kmm8_sum: M, N, alpha, beta,
// off_c and stride_c as the product's; nb = SPLITK; stride_a = the batches.

#include "qmm_params.wgsl"   // Params

@group(0) @binding(0) var<storage, read> Q: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

#include "bytes.wgsl"   // k_scale_min; bit4_of (Q5_0)

// word i of B, and the word at even byte offset o (Q6_K blocks sit on 2-byte
// offsets; both words are read and one selected, as common/word_at.wgsl)
fn bword(i: u32) -> u32 { return B[i >> 2u][i & 3u]; }
fn bword_at(o: u32) -> u32 {
    let i = o >> 2u;
    let lo = bword(i);
    let hi = bword(i + 1u);
    return select(lo, (lo >> 16u) | (hi << 16u), (o & 2u) != 0u);
}

override TN: u32 = 8u;       // output columns per invocation: 4 or 8 (tiles of 64 x 64 or 64 x 128)
override SPLITK: u32 = 1u;   // splits of K (see above)
override Q5: bool = false;   // kmm8w: Q5_K weights (see above)
override QB: u32 = 0u;       // kmm8w: Q8_0 (34), Q4_0 (18) or Q5_0 (22) weights, by block bytes (0: K-quants; see above)

const RS: u32 = 5u;      // vec4s per tile row in workgroup memory: the step's 64 values and one of padding
const BNMAX: u32 = 128u;

var<workgroup> Aw: array<vec4<u32>, 320>;           // 64 rows x RS
var<workgroup> Bw: array<vec4<u32>, 640>;           // BNMAX rows x RS
var<workgroup> Asw: array<vec4<f32>, 64>;
var<workgroup> Bsw: array<vec4<f32>, BNMAX>;

// One step's words, as each invocation loads them.
struct Stage {
    a: vec4<u32>,    // A values: tile row lid / 4, word lid % 4
    b: vec4<u32>,    // B quants: tile column lid / 2, half lid % 2 (lid < 2 BN; Q5_0: block lid % 2);
                     // Q8_0, Q4_0: q_words' words 0 .. 3
    h: vec4<u32>,    // Q5, Q5_0: their fifth bits (the qh word of that half or block); Q8_0, Q4_0: words 4 .. 7
    s: vec4<u32>,    // A's scales (lid < 64) or B's block header (64 <= lid < 64 + BN)
}

struct Bases {
    a: u32,          // vec4 index of this invocation's row of A's values
    b: u32,          // vec4 index of its B quant row (Q5_0: its first byte; Q8_0, Q4_0: unused)
    s: u32,          // vec4 index of its A scale row or B row (header; QB != 0: a B row's first byte)
    bz: u32,         // Q8_0, Q4_0: the byte where B's batch starts
    n0: u32,         // Q8_0, Q4_0: the tile's first column
}

// Q8_0 and Q4_0: the quant words of the step's blocks 2 st and 2 st + 1 of
// the tile's bn columns, NQ a row (Q8_0: 16, 8 a block; Q4_0: 8, 4 a block).
// Invocation lid assembles words c = lid % NQ of rows lid / NQ + (256 / NQ) e,
// e < bn NQ / 256 (TN for Q8_0, TN / 2 for Q4_0), into w[e], each from the
// two words of B around it (bword_at: blocks sit on 2-byte offsets), so that
// the NQ invocations of a row read its neighbouring bytes and a subgroup's
// loads fall on a few rows' 68 (36) bytes. One block an invocation (q5_block)
// spread them over 32 blocks' bytes, and took Q8_0 prompts 14% longer and
// Q4_0's 5% on an H200; Q5_0, whose four words of a block would each need the
// block's qh word too, keeps it (docs/BENCHMARKS.md).
fn q_nq() -> u32 { return select(8u, 16u, QB == 34u); }
fn q_words(bs: Bases, lid: u32, st: u32) -> array<u32, 8> {
    var w: array<u32, 8>;
    let nq = q_nq();
    let c = lid % nq;
    let cb = (2u * st + c / (nq / 2u)) * QB + 2u + 4u * (c % (nq / 2u));   // its byte in a row
    for (var e = 0u; e < TN * nq / 16u; e = e + 1u) {
        w[e] = bword_at(bs.bz + min(bs.n0 + lid / nq + (256u / nq) * e, p.N - 1u) * p.row_bytes + cb);
    }
    return w;
}

// Q5_0: the 5 words of the block from even byte offset o on (qh, then the
// quants; o % 4 == 2: each from two words, both read and one selected, as
// bword_at), one block an invocation
fn q5_block(o: u32) -> array<u32, 5> {
    let i = o >> 2u;
    let odd = (o & 2u) != 0u;
    var w: array<u32, 5>;
    var lo = bword(i);
    for (var k = 0u; k < 5u; k = k + 1u) {
        let hi = bword(i + k + 1u);
        w[k] = select(lo, (lo >> 16u) | (hi << 16u), odd);
        lo = hi;
    }
    return w;
}

fn stage_load(bs: Bases, lid: u32, st: u32, bn: u32) -> Stage {
    var g: Stage;
    let blk = st >> 2u;
    let j = st & 3u;
    let bw = select(9u, 11u, Q5);   // the block's words
    g.a = Q[bs.a + st * 4u + (lid & 3u)];
    if (QB != 0u) {
        if (QB == 22u) {   // blocks 2 st and 2 st + 1: this invocation's is 2 st + lid % 2
            if (lid < 2u * bn) {
                let w = q5_block(bs.b + (2u * st + (lid & 1u)) * QB + 2u);
                g.b = vec4<u32>(w[1], w[2], w[3], w[4]);
                g.h = vec4<u32>(w[0], 0u, 0u, 0u);
            }
        } else {
            let w = q_words(bs, lid, st);
            g.b = vec4<u32>(w[0], w[1], w[2], w[3]);
            g.h = vec4<u32>(w[4], w[5], w[6], w[7]);
        }
        if (lid < 64u) {
            g.s = Q[bs.s + st];
        } else if (lid < 64u + bn) {   // the two blocks' d (the low half of each word)
            let o = bs.s + 2u * st * QB;
            g.s = vec4<u32>(bword_at(o), bword_at(o + QB), 0u, 0u);
        }
        return g;
    }
    if (lid < 2u * bn) {
        g.b = B[bs.b + blk * bw + select(1u, 3u, Q5) + 2u * j + (lid & 1u)];
        if (Q5) { g.h = B[bs.b + blk * bw + 1u + (lid & 1u)]; }
    }
    if (lid < 64u) {
        g.s = Q[bs.s + st];
    } else if (lid < 64u + bn) {
        g.s = B[bs.s + blk * bw];
    }
    return g;
}

fn stage_store(g: Stage, lid: u32, st: u32, bn: u32) {
    let lo = 0x0f0f0f0fu;
    Aw[(lid >> 2u) * RS + (lid & 3u)] = g.a;
    if (QB == 22u && lid < 2u * bn) {   // Q5_0: the block's 32 values as words v = 2 (lid % 2), + 1 of the step
        let r = (lid >> 1u) * RS + 2u * (lid & 1u);
        let qh = g.h.x;
        Bw[r] = (g.b & vec4<u32>(lo)) |
                vec4<u32>(bit4_of(qh), bit4_of(qh >> 4u), bit4_of(qh >> 8u), bit4_of(qh >> 12u));   // values 0..15
        Bw[r + 1u] = ((g.b >> vec4<u32>(4u)) & vec4<u32>(lo)) |
                     vec4<u32>(bit4_of(qh >> 16u), bit4_of(qh >> 20u), bit4_of(qh >> 24u), bit4_of(qh >> 28u));
    }
    if (QB == 34u || QB == 18u) {   // q_words' words: word c of a row is values 4 c .. 4 c + 3 (Q8_0), or
        // 4 c' .. 4 c' + 3 of block 2 st + c / 4 (c' = c % 4) as low nibbles and 16 + 4 c' .. as high ones (Q4_0)
        let nq = q_nq();
        let c = lid % nq;
        for (var e = 0u; e < TN * nq / 16u; e = e + 1u) {
            let r = (lid / nq + (256u / nq) * e) * RS;
            let w = select(g.h[e & 3u], g.b[e & 3u], e < 4u);
            if (QB == 34u) {
                Bw[r + (c >> 2u)][c & 3u] = w;
            } else {
                Bw[r + 2u * (c >> 2u)][c & 3u] = w & lo;
                Bw[r + 2u * (c >> 2u) + 1u][c & 3u] = (w >> 4u) & lo;
            }
        }
    }
    if (QB != 0u) {
        if (lid < 64u) {
            Asw[lid] = bitcast<vec4<f32>>(g.s);
        } else if (lid < 64u + bn) {
            let m = select(select(8.0, 16.0, QB == 22u), 0.0, QB == 34u);
            let d0 = unpack2x16float(g.s.x).x;
            let d1 = unpack2x16float(g.s.y).x;
            Bsw[lid - 64u] = vec4<f32>(d0, m * d0, d1, m * d1);
        }
        return;
    }
    if (lid < 2u * bn) {
        let r = (lid >> 1u) * RS + (lid & 1u);
        var b0 = g.b & vec4<u32>(lo);
        var b1 = (g.b >> vec4<u32>(4u)) & vec4<u32>(lo);
        if (Q5) {
            let j = st & 3u;
            let one = vec4<u32>(0x01010101u);
            b0 = b0 | (((g.h >> vec4<u32>(2u * j)) & one) << vec4<u32>(4u));
            b1 = b1 | (((g.h >> vec4<u32>(2u * j + 1u)) & one) << vec4<u32>(4u));
        }
        Bw[r] = b0;
        Bw[r + 2u] = b1;
    }
    if (lid < 64u) {
        Asw[lid] = bitcast<vec4<f32>>(g.s);
    } else if (lid < 64u + bn) {
        let j = st & 3u;
        let dm = unpack2x16float(g.s.x);
        let sm0 = k_scale_min(g.s.y, g.s.z, g.s.w, 2u * j);
        let sm1 = k_scale_min(g.s.y, g.s.z, g.s.w, 2u * j + 1u);
        Bsw[lid - 64u] = vec4<f32>(dm.x * f32(sm0.x), dm.y * f32(sm0.y), dm.x * f32(sm1.x), dm.y * f32(sm1.y));
    }
}

fn store_c(idx: u32, v: f32) {
    var out = p.alpha * v;
    if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
    C[idx] = out;
}

// Where a tile's outputs go: C's batch z (base index), or with SPLITK the
// split's partial sums; and its steps [x, y)
fn out_base(z: u32, nz: u32, split: u32) -> u32 {
    if (SPLITK > 1u) { return (split * nz + z) * p.M * p.N; }
    return p.off_c + z * p.stride_c;
}
fn put(idx: u32, v: f32) {
    if (SPLITK > 1u) {
        C[idx] = v;
    } else {
        store_c(idx, v);
    }
}
fn split_steps(split: u32) -> vec2<u32> {
    let steps = select(p.nb * 4u, p.nb / 2u, QB != 0u);   // of 64 values
    let per = (steps + SPLITK - 1u) / SPLITK;
    return vec2<u32>(min(split * per, steps), min(split * per + per, steps));
}

@compute @workgroup_size(16, 16)
fn kmm8w(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let tx = lid3.x;
    let ty = lid3.y;
    let lid = ty * 16u + tx;
    let bn = 16u * TN;
    let m0 = wid.y * 64u;
    let n0 = (wid.x / SPLITK) * bn;
    let sr = split_steps(wid.x % SPLITK);
    // row bases (rows past M or N clamped: read, never stored)
    let k16 = p.K / 16u;
    var bs: Bases;
    bs.a = (wid.z * p.stride_a + min(m0 + (lid >> 2u), p.M - 1u)) * k16;
    let bz = p.off_b + wid.z * p.stride_b;
    let sh = select(4u, 0u, QB != 0u);   // B's bases in 16-byte words, or in bytes (QB)
    bs.b = (bz + min(n0 + (lid >> 1u), p.N - 1u) * p.row_bytes) >> sh;
    bs.bz = bz;
    bs.n0 = n0;
    if (lid < 64u) {
        bs.s = p.off_a + (wid.z * p.stride_a + min(m0 + lid, p.M - 1u)) * (p.K / 64u);
    } else {
        bs.s = (bz + min(n0 + lid - 64u, p.N - 1u) * p.row_bytes) >> sh;
    }

    var acc: array<vec4<f32>, 8>;   // acc[2 i + j / 4][j % 4]: row 4 ty + i, column tx + 16 j
    var g = stage_load(bs, lid, sr.x, bn);
    for (var st = sr.x; st < sr.y; st = st + 1u) {
        stage_store(g, lid, st, bn);
        workgroupBarrier();
        if (st + 1u < sr.y) { g = stage_load(bs, lid, st + 1u, bn); }
        for (var h = 0u; h < 2u; h = h + 1u) {   // sub-blocks 2j + h: words 2h, 2h + 1
            var isum: array<vec4<i32>, 8>;
            for (var e = 0u; e < 8u; e = e + 1u) { isum[e] = vec4<i32>(0); }   // assigned: see kmm8.wgsl's zero_sums
            for (var v = 2u * h; v < 2u * h + 2u; v = v + 1u) {
                var a: array<vec4<u32>, 4>;
                for (var i = 0u; i < 4u; i = i + 1u) { a[i] = Aw[(4u * ty + i) * RS + v]; }
                for (var j = 0u; j < TN; j = j + 1u) {
                    let b = Bw[(tx + 16u * j) * RS + v];
                    for (var i = 0u; i < 4u; i = i + 1u) {
                        isum[2u * i + (j >> 2u)][j & 3u] += dot4I8Packed(a[i].x, b.x) + dot4I8Packed(a[i].y, b.y) +
                                                            dot4I8Packed(a[i].z, b.z) + dot4I8Packed(a[i].w, b.w);
                    }
                }
            }
            var bsc: array<vec4<f32>, 2>;
            var bmn: array<vec4<f32>, 2>;
            for (var j = 0u; j < TN; j = j + 1u) {
                let b4 = Bsw[tx + 16u * j];
                bsc[j >> 2u][j & 3u] = select(b4.x, b4.z, h == 1u);
                bmn[j >> 2u][j & 3u] = select(b4.y, b4.w, h == 1u);
            }
            for (var i = 0u; i < 4u; i = i + 1u) {
                let a4 = Asw[4u * ty + i];
                let da = select(a4.x, a4.z, h == 1u);
                let sa = select(a4.y, a4.w, h == 1u);
                for (var c = 0u; c < TN / 4u; c = c + 1u) {
                    acc[2u * i + c] = acc[2u * i + c] + da * bsc[c] * vec4<f32>(isum[2u * i + c]) - sa * bmn[c];
                }
            }
        }
        workgroupBarrier();
    }
    let base = out_base(wid.z, nwg.z, wid.x % SPLITK);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let m = m0 + 4u * ty + i;
        if (m < p.M) {
            for (var j = 0u; j < TN; j = j + 1u) {
                let n = n0 + tx + 16u * j;
                if (n < p.N) { put(base + m * p.N + n, acc[2u * i + (j >> 2u)][j & 3u]); }
            }
        }
    }
}

// ---- kmm8wn: NOUT products of one A whose weights are rows of B in turn ----
//
// B's N rows are the weights of NOUT (2 or 3) products, one after another
// (pxl_matmul_multi on views of one matrix, such as a layer's Q, K and V):
// one product over all of them, whose columns go to NOUT outputs, each
// [M, its rows] contiguous. Output 0 takes columns 0 .. n2 - 1 (C from
// float off_c), output 1 the columns from n2 (C1 from float off_c2), and
// output 2 (NOUT 3) those from off_u2 (C2 from float off_s2). The host
// keeps n2 and off_u2 on whole tiles (multiples of 16 TN), so a tile's
// columns go to one output; no batches and no split of K (SPLITK 1). The
// sums are kmm8w's, so each output gets the floats its own product would.

// The sums of the tile of rows m0 .. m0 + 63 and columns n0 .. n0 + 16 TN - 1
// of batch z over steps sr.x .. sr.y - 1, as invocation (tx, ty) holds them:
// acc[2 i + j / 4][j % 4] is row 4 ty + i, column tx + 16 j. Every
// invocation of the workgroup must call it (barriers). This is kmm8w's loop
// (the same statements) made a function for kmm8wn. kmm8w keeps its own
// copy: each entry point is compiled by itself, and on an H200 (2026-11-29)
// kmm8w through this function ran up to 1% slower (Q8_0 512 x 2048 x 5632:
// 265.9 us against 263.2), while kmm8wn with the sums through a pointer
// instead of returned prefilled Qwen2.5-0.5B 6% slower (38.2 against 40.4
// thousand tokens/s). docs/BENCHMARKS.md has the figures.
fn kmm8w_tile(tx: u32, ty: u32, m0: u32, n0: u32, z: u32, sr: vec2<u32>) -> array<vec4<f32>, 8> {
    let lid = ty * 16u + tx;
    let bn = 16u * TN;
    // row bases (rows past M or N clamped: read, never stored)
    let k16 = p.K / 16u;
    var bs: Bases;
    bs.a = (z * p.stride_a + min(m0 + (lid >> 2u), p.M - 1u)) * k16;
    let bz = p.off_b + z * p.stride_b;
    let sh = select(4u, 0u, QB != 0u);   // B's bases in 16-byte words, or in bytes (QB)
    bs.b = (bz + min(n0 + (lid >> 1u), p.N - 1u) * p.row_bytes) >> sh;
    bs.bz = bz;
    bs.n0 = n0;
    if (lid < 64u) {
        bs.s = p.off_a + (z * p.stride_a + min(m0 + lid, p.M - 1u)) * (p.K / 64u);
    } else {
        bs.s = (bz + min(n0 + lid - 64u, p.N - 1u) * p.row_bytes) >> sh;
    }

    var acc: array<vec4<f32>, 8>;   // acc[2 i + j / 4][j % 4]: row 4 ty + i, column tx + 16 j
    var g = stage_load(bs, lid, sr.x, bn);
    for (var st = sr.x; st < sr.y; st = st + 1u) {
        stage_store(g, lid, st, bn);
        workgroupBarrier();
        if (st + 1u < sr.y) { g = stage_load(bs, lid, st + 1u, bn); }
        for (var h = 0u; h < 2u; h = h + 1u) {   // sub-blocks 2j + h: words 2h, 2h + 1
            var isum: array<vec4<i32>, 8>;
            for (var e = 0u; e < 8u; e = e + 1u) { isum[e] = vec4<i32>(0); }   // assigned: see kmm8.wgsl's zero_sums
            for (var v = 2u * h; v < 2u * h + 2u; v = v + 1u) {
                var a: array<vec4<u32>, 4>;
                for (var i = 0u; i < 4u; i = i + 1u) { a[i] = Aw[(4u * ty + i) * RS + v]; }
                for (var j = 0u; j < TN; j = j + 1u) {
                    let b = Bw[(tx + 16u * j) * RS + v];
                    for (var i = 0u; i < 4u; i = i + 1u) {
                        isum[2u * i + (j >> 2u)][j & 3u] += dot4I8Packed(a[i].x, b.x) + dot4I8Packed(a[i].y, b.y) +
                                                            dot4I8Packed(a[i].z, b.z) + dot4I8Packed(a[i].w, b.w);
                    }
                }
            }
            var bsc: array<vec4<f32>, 2>;
            var bmn: array<vec4<f32>, 2>;
            for (var j = 0u; j < TN; j = j + 1u) {
                let b4 = Bsw[tx + 16u * j];
                bsc[j >> 2u][j & 3u] = select(b4.x, b4.z, h == 1u);
                bmn[j >> 2u][j & 3u] = select(b4.y, b4.w, h == 1u);
            }
            for (var i = 0u; i < 4u; i = i + 1u) {
                let a4 = Asw[4u * ty + i];
                let da = select(a4.x, a4.z, h == 1u);
                let sa = select(a4.y, a4.w, h == 1u);
                for (var c = 0u; c < TN / 4u; c = c + 1u) {
                    acc[2u * i + c] = acc[2u * i + c] + da * bsc[c] * vec4<f32>(isum[2u * i + c]) - sa * bmn[c];
                }
            }
        }
        workgroupBarrier();
    }
    return acc;
}

@group(0) @binding(4) var<storage, read_write> C1: array<f32>;
@group(0) @binding(5) var<storage, read_write> C2: array<f32>;

override NOUT: u32 = 2u;   // outputs: 2 or 3

// output o's element idx = alpha * v (+ beta * its old value when beta != 0)
fn store_o(o: u32, idx: u32, v: f32) {
    var out = p.alpha * v;
    if (o == 0u) {
        if (p.beta != 0.0) { out = out + p.beta * C[idx]; }
        C[idx] = out;
    } else if (o == 1u) {
        if (p.beta != 0.0) { out = out + p.beta * C1[idx]; }
        C1[idx] = out;
    } else {
        if (p.beta != 0.0) { out = out + p.beta * C2[idx]; }
        C2[idx] = out;
    }
}

@compute @workgroup_size(16, 16)
fn kmm8wn(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid3.x;
    let ty = lid3.y;
    let m0 = wid.y * 64u;
    let n0 = wid.x * 16u * TN;
    let acc = kmm8w_tile(tx, ty, m0, n0, 0u, split_steps(0u));
    // the tile's output o: its columns c0 .. ce - 1 of B's rows, its width w and offset base
    let two = NOUT == 3u && n0 >= p.off_u2;
    let o = select(select(0u, 1u, n0 >= p.n2), 2u, two);
    let c0 = select(select(0u, p.n2, o == 1u), p.off_u2, o == 2u);
    let ce = select(select(p.n2, select(p.N, p.off_u2, NOUT == 3u), o == 1u), p.N, o == 2u);
    let base = select(select(p.off_c, p.off_c2, o == 1u), p.off_s2, o == 2u);
    let w = ce - c0;
    for (var i = 0u; i < 4u; i = i + 1u) {
        let m = m0 + 4u * ty + i;
        if (m < p.M) {
            for (var j = 0u; j < TN; j = j + 1u) {
                let n = n0 + tx + 16u * j;
                if (n < ce) { store_o(o, base + m * w + (n - c0), acc[2u * i + (j >> 2u)][j & 3u]); }
            }
        }
    }
}

// ---- kmm8w6: Q6_K, tiles of 64 x 64 ----

// One step's words: A as kmm8w's; B's tile column lid / 4, quarter lid % 4:
// 8 ql bytes and 8 qh bytes (words ql0, ql1, qh0, qh1); lid < 64: A's scales
// of s0 and s1 (two vec4s); 64 <= lid < 128: B's scale words and d.
struct Stage6 {
    a: vec4<u32>,
    b: vec4<u32>,    // ql0, ql1, qh0, qh1
    s0: vec4<u32>,
    s1: vec4<u32>,   // lid >= 64: (scales of s0's halves, of s1's, d's word, 0)
}

fn stage6_load(bs: Bases, lid: u32, st: u32) -> Stage6 {
    var g: Stage6;
    let blk = st >> 2u;
    let j = st & 3u;
    let h = j >> 1u;
    let gg = j & 1u;
    let s0 = blk * 8u + 4u * h + gg;   // the 32-value block of A, in the row
    let v = lid & 3u;                  // A: vec4 v of the step (s0's two, then s1's)
    g.a = Q[bs.a + 2u * s0 + 4u * (v >> 1u) + (v & 1u)];
    let bb = bs.b + blk * 210u;        // bs.b: the row's first byte here
    let c = lid & 3u;
    g.b = vec4<u32>(bword_at(bb + 64u * h + 32u * gg + 8u * c), bword_at(bb + 64u * h + 32u * gg + 8u * c + 4u),
                    bword_at(bb + 128u + 32u * h + 8u * c), bword_at(bb + 128u + 32u * h + 8u * c + 4u));
    if (lid < 64u) {
        g.s0 = Q[bs.s + s0 / 2u];
        g.s1 = Q[bs.s + s0 / 2u + 1u];
    } else if (lid < 128u) {
        let sb = bs.s + blk * 210u;
        g.s1 = vec4<u32>(bword_at(sb + 192u + 8u * h + 2u * gg), bword_at(sb + 192u + 8u * h + 2u * gg + 4u),
                         bword_at(sb + 208u), 0u);
    }
    return g;
}

// Q6_K: four 6-bit values q (bytes of v) as the signed bytes q - 32
fn q6_signed(v: u32) -> u32 {
    let x = v ^ 0x20202020u;                            // q - 32 in 6 bits
    return x | (((x >> 5u) & 0x01010101u) * 0xc0u);     // sign-extended from bit 5
}

fn stage6_store(g: Stage6, lid: u32, st: u32) {
    let lo = 0x0f0f0f0fu;
    let gg = (st & 3u) & 1u;
    Aw[(lid >> 2u) * RS + (lid & 3u)] = g.a;
    // values 8c .. 8c + 7 of s0 (words 2c, 2c + 1 of the row) and of s1 (8 + 2c, 9 + 2c)
    let r = (lid >> 2u) * RS;
    let c = lid & 3u;
    for (var e = 0u; e < 2u; e = e + 1u) {
        let ql = g.b[e];
        let qh = g.b[2u + e];
        let v0 = (ql & lo) | (((qh >> (2u * gg)) & 0x03030303u) << 4u);
        let v1 = ((ql >> 4u) & lo) | (((qh >> (2u * gg + 4u)) & 0x03030303u) << 4u);
        let w0 = 2u * c + e;
        let w1 = 8u + 2u * c + e;
        Bw[r + (w0 >> 2u)][w0 & 3u] = q6_signed(v0);
        Bw[r + (w1 >> 2u)][w1 & 3u] = q6_signed(v1);
    }
    if (lid < 64u) {
        let odd = gg;   // s0 = 8 blk + 4h + g is odd when g is: the pairs' second halves
        let d0 = bitcast<vec4<f32>>(g.s0);
        let d1 = bitcast<vec4<f32>>(g.s1);
        Asw[lid] = vec4<f32>(select(d0.x, d0.z, odd != 0u), 0.0, select(d1.x, d1.z, odd != 0u), 0.0);
    } else if (lid < 128u) {
        let d = unpack2x16float(g.s1.z).x;
        let sw0 = g.s1.x;
        let sw1 = g.s1.y;
        Bsw[lid - 64u] = d * vec4<f32>(f32(bitcast<i32>(sw0 << 24u) >> 24u), f32(bitcast<i32>(sw0 << 16u) >> 24u),
                                       f32(bitcast<i32>(sw1 << 24u) >> 24u), f32(bitcast<i32>(sw1 << 16u) >> 24u));
    }
}

@compute @workgroup_size(16, 16)
fn kmm8w6(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let tx = lid3.x;
    let ty = lid3.y;
    let lid = ty * 16u + tx;
    let m0 = wid.y * 64u;
    let n0 = (wid.x / SPLITK) * 64u;
    let sr = split_steps(wid.x % SPLITK);
    let bz = p.off_b + wid.z * p.stride_b;
    var bs: Bases;
    bs.a = (wid.z * p.stride_a + min(m0 + (lid >> 2u), p.M - 1u)) * (p.K / 16u);
    bs.b = bz + min(n0 + (lid >> 2u), p.N - 1u) * p.row_bytes;   // bytes
    if (lid < 64u) {
        bs.s = p.off_a + (wid.z * p.stride_a + min(m0 + lid, p.M - 1u)) * (p.K / 64u);
    } else {
        bs.s = bz + min(n0 + ((lid - 64u) & 63u), p.N - 1u) * p.row_bytes;   // bytes
    }

    var acc: array<vec4<f32>, 4>;   // acc[i][j]: row 4 ty + i, column tx + 16 j
    var g = stage6_load(bs, lid, sr.x);
    for (var st = sr.x; st < sr.y; st = st + 1u) {
        stage6_store(g, lid, st);
        workgroupBarrier();
        if (st + 1u < sr.y) { g = stage6_load(bs, lid, st + 1u); }
        for (var v = 0u; v < 4u; v = v + 1u) {   // the step's 16-value halves: s0's two, then s1's
            var isum: array<vec4<i32>, 4>;
            for (var e = 0u; e < 4u; e = e + 1u) { isum[e] = vec4<i32>(0); }   // assigned: see kmm8.wgsl's zero_sums
            var a: array<vec4<u32>, 4>;
            for (var i = 0u; i < 4u; i = i + 1u) { a[i] = Aw[(4u * ty + i) * RS + v]; }
            var bsc = vec4<f32>(0.0);
            for (var j = 0u; j < 4u; j = j + 1u) {
                let b = Bw[(tx + 16u * j) * RS + v];
                bsc[j] = Bsw[tx + 16u * j][v];
                for (var i = 0u; i < 4u; i = i + 1u) {
                    isum[i][j] += dot4I8Packed(a[i].x, b.x) + dot4I8Packed(a[i].y, b.y) + dot4I8Packed(a[i].z, b.z) +
                                  dot4I8Packed(a[i].w, b.w);
                }
            }
            for (var i = 0u; i < 4u; i = i + 1u) {
                acc[i] = acc[i] + Asw[4u * ty + i][v & 2u] * bsc * vec4<f32>(isum[i]);
            }
        }
        workgroupBarrier();
    }
    let base = out_base(wid.z, nwg.z, wid.x % SPLITK);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let m = m0 + 4u * ty + i;
        if (m < p.M) {
            for (var j = 0u; j < 4u; j = j + 1u) {
                let n = n0 + tx + 16u * j;
                if (n < p.N) { put(base + m * p.N + n, acc[i][j]); }
            }
        }
    }
}

// ---- kmm8_sum: the splits of a split-K product added up into C ----
// One invocation per output (batch z, row m, column n): C = alpha * (the
// splits' sums, in split order) + beta * C; the partial sums are read
// through binding 0 (Q) as bits.

@compute @workgroup_size(256)
fn kmm8_sum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.y * nwg.x * 256u + gid.x;   // (z M + m) N + n
    let mn = p.M * p.N;
    let total = p.stride_a * mn;
    if (i >= total) { return; }
    var v = 0.0;
    for (var s = 0u; s < p.nb; s = s + 1u) {
        let e = s * total + i;
        v = v + bitcast<f32>(Q[e >> 2u][e & 3u]);
    }
    let z = i / mn;
    store_c(p.off_c + z * p.stride_c + i % mn, v);
}
