// pxl_rope_kv (see src/ops/rope.c): RoPE of q in place, RoPE of k into the
// KV cache row k_out, and v copied into v_out, in one dispatch. k_out and
// v_out are f32 or f16 (overrides K16, V16), written as u32 words: f32 bits,
// or two f16 halves per word rounded as convert.wgsl rounds
// (common/half_bits.wgsl); the angle and the rotation are
// common/rope_turn.wgsl's, the same f32 arithmetic as rope.wgsl, so the
// results are those of pxl_rope_ext, then pxl_convert or pxl_copy.
//
// Invocations, in order: q pairs (row t, head group of HG heads, pair j of
// this dispatch's chunk), then the words of k_out, then (first chunk only)
// the words of v_out. One invocation per output word, so no two write one
// word; an f16 word half outside the view, or whose pair lies in another
// chunk, keeps what it held (read, merge, write back).
//
// Bindings: q (0, read_write), k_out (1), v_out (2), the uniforms (3), the
// frequency factors (4, the _ff entries). rope_kv and rope_kv_ff read k and
// v from binding 0 as well: q, k and v are views of one buffer, bound once
// (WebGPU allows no read-only binding of a buffer a dispatch writes, and
// copying them apart would cost a dispatch). rope_kv_sep and rope_kv_sep_ff
// read k (5) and v (6) from bindings of their own.

override WG: u32 = 64u;
override K16: bool = false;   // k_out is f16 (else f32)
override V16: bool = false;   // v_out is f16 (else f32)
const HG: u32 = 4u;           // q heads per invocation

struct Params {
    pos_offset: i32,  // position of row 0; |pos| < 2^31 for every row
    T: u32,
    Hq: u32,
    Hkv: u32,
    half: u32,        // D / 2
    i0: u32,          // first pair of this dispatch
    cn: u32,          // pairs in this dispatch
    lay: u32,         // 0: pairs (2i, 2i+1); 1: pairs (i, i + D/2)
    lo: array<vec4<f32>, 8>,  // theta of pair i0 + 32a + b = hi[a] * lo[b]
    hi: array<vec4<f32>, 4>,
    oq: u32,          // element offsets of q, k, v in their bindings
    ok: u32,
    ov: u32,
    oko: u32,         // element offsets of k_out and v_out (f16: in halves)
    ovo: u32,
    fs: f32,          // freq_scale
    off_ff: u32,      // element offset of the view ff
    nv: u32,          // words of v_out in this dispatch (0 after the first chunk)
}

@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> ko: array<u32>;
@group(0) @binding(2) var<storage, read_write> vo: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read> ff: array<f32>;
@group(0) @binding(5) var<storage, read> ks: array<f32>;
@group(0) @binding(6) var<storage, read> vs: array<f32>;

#include "rope_turn.wgsl"   // turns_per_pos, cos_sin, rope_theta, div_keep, rope_rot
#include "half_bits.wgsl"   // f32_to_f16_bits

// elements of k (and of v)
fn n_kv() -> u32 { return p.T * p.Hkv * 2u * p.half; }

// output words of a view of n elements at element offset off
fn n_words(off: u32, n: u32, h16: bool) -> u32 {
    if (h16) { return (off + n + 1u) / 2u - off / 2u; }
    return n;
}

fn n_qjobs() -> u32 { return p.T * ((p.Hq + HG - 1u) / HG) * p.cn; }

// theta' before the factor of pair i0 + j (as rope.wgsl's locate)
fn chunk_theta(j: u32) -> f32 {
    let a = j >> 5u;
    let b = j & 31u;
    return rope_theta(p.hi[a >> 2u][a & 3u], p.lo[b >> 2u][b & 3u], p.fs);
}

// Element offsets of pair i in the head that starts at element `head`.
fn pair_at(head: u32, i: u32) -> vec2<u32> {
    if (p.lay == 0u) { return vec2<u32>(head + 2u * i, head + 2u * i + 1u); }
    return vec2<u32>(head + i, head + i + p.half);
}

// ---- q: pairs turned in place -------------------------------------------------

struct QJob {
    t: u32,
    h0: u32,     // first head
    h1: u32,     // end of heads
    i: u32,      // pair
    theta: f32,  // theta' before the factor
}

fn q_job(id: u32) -> QJob {
    var r: QJob;
    let j = id % p.cn;
    let rest = id / p.cn;
    let nhg = (p.Hq + HG - 1u) / HG;
    r.t = rest / nhg;
    r.h0 = (rest % nhg) * HG;
    r.h1 = min(r.h0 + HG, p.Hq);
    r.i = p.i0 + j;
    r.theta = chunk_theta(j);
    return r;
}

fn q_apply(r: QJob, theta: f32) {
    let cs = cos_sin(turns_per_pos(theta), p.pos_offset + i32(r.t));
    for (var h = r.h0; h < r.h1; h++) {
        let e = pair_at((r.t * p.Hq + h) * (2u * p.half), r.i) + vec2<u32>(p.oq);
        let y = rope_rot(q[e.x], q[e.y], cs);
        q[e.x] = y.x;
        q[e.y] = y.y;
    }
}

// ---- output words ---------------------------------------------------------------

// Word `idx` of an output view at element offset off: the word in the
// binding and the view's elements m0, m1 in it (f32: m0 alone).
struct Word {
    w: u32,
    m0: u32,
    m1: u32,
    in0: bool,
    in1: bool,
}

fn out_word(idx: u32, off: u32, h16: bool) -> Word {
    var r: Word;
    if (!h16) {
        r.w = off + idx;
        r.m0 = idx;
        r.in0 = true;
        return r;
    }
    let n = n_kv();
    r.w = off / 2u + idx;
    let e0 = 2u * r.w;
    r.in0 = e0 >= off && e0 < off + n;
    r.in1 = e0 + 1u >= off && e0 + 1u < off + n;
    r.m0 = e0 - off;
    r.m1 = e0 + 1u - off;
    return r;
}

// f32 bits, or f16 bits in the low half
fn out_bits(x: f32, h16: bool) -> u32 {
    if (h16) { return f32_to_f16_bits(bitcast<u32>(x)); }
    return bitcast<u32>(x);
}

// the halves of a word: all of an f32 word (put.x), or the f16 halves in put
fn merge(old: u32, bits: vec2<u32>, put: vec2<bool>) -> u32 {
    var v = old;
    if (put.x) { v = (v & 0xffff0000u) | (bits.x & 0xffffu); }
    if (put.y) { v = (v & 0xffffu) | (bits.y << 16u); }
    return v;
}

fn ko_put(w: u32, bits: vec2<u32>, put: vec2<bool>) {
    if (!K16) {
        if (put.x) { ko[w] = bits.x; }
        return;
    }
    if (!put.x && !put.y) { return; }
    var old = 0u;
    if (!put.x || !put.y) { old = ko[w]; }
    ko[w] = merge(old, bits, put);
}

fn vo_put(w: u32, bits: vec2<u32>, put: vec2<bool>) {
    if (!V16) {
        if (put.x) { vo[w] = bits.x; }
        return;
    }
    var old = 0u;
    if (!put.x || !put.y) { old = vo[w]; }
    vo[w] = merge(old, bits, put);
}

// ---- k: element m of k turned into k_out ----------------------------------------

struct KEl {
    on: bool,          // in the view and in this dispatch's chunk
    pa: vec2<u32>,     // the pair's element offsets in k
    second: bool,      // m is the pair's second element
    i: u32,            // pair
    theta: f32,        // theta' before the factor
    pos: i32,
}

fn k_el(m: u32, in_view: bool) -> KEl {
    var e: KEl;
    let D = 2u * p.half;
    let d = m % D;
    var i = d >> 1u;
    e.second = (d & 1u) != 0u;
    if (p.lay != 0u) {
        e.second = d >= p.half;
        i = select(d, d - p.half, e.second);
    }
    e.on = in_view && i >= p.i0 && i < p.i0 + p.cn;
    if (!e.on) { return e; }
    e.i = i;
    e.pa = pair_at(m - d, i) + vec2<u32>(p.ok);
    e.theta = chunk_theta(i - p.i0);
    e.pos = p.pos_offset + i32(m / (p.Hkv * D));
    return e;
}

fn k_bits(e: KEl, a: f32, b: f32, theta: f32) -> u32 {
    let y = rope_rot(a, b, cos_sin(turns_per_pos(theta), e.pos));
    return out_bits(select(y.x, y.y, e.second), K16);
}

// ---- the entries -----------------------------------------------------------------

struct Job {
    kind: u32,   // 0: q pair, 1: k_out word, 2: v_out word, 3: none
    idx: u32,    // within its kind
}

fn job(li: u32, wid: vec3<u32>, nwg: vec3<u32>) -> Job {
    let id = (wid.y * nwg.x + wid.x) * WG + li;
    let nq = n_qjobs();
    let nk = n_words(p.oko, n_kv(), K16);
    if (id < nq) { return Job(0u, id); }
    if (id < nq + nk) { return Job(1u, id - nq); }
    if (id < nq + nk + p.nv) { return Job(2u, id - nq - nk); }
    return Job(3u, 0u);
}

// Word w of k_out from e0 and e1 (k_el), their pairs' values x0 and x1 (read
// by the entry from its k binding) and their angles' theta' t0 and t1.
fn k_word(w: Word, e0: KEl, e1: KEl, x0: vec2<f32>, x1: vec2<f32>, t0: f32, t1: f32) {
    var bits = vec2<u32>(0u, 0u);
    if (e0.on) { bits.x = k_bits(e0, x0.x, x0.y, t0); }
    if (e1.on) { bits.y = k_bits(e1, x1.x, x1.y, t1); }
    ko_put(w.w, bits, vec2<bool>(e0.on, e1.on));
}

// Word w of v_out from v's elements m0 and m1 of the word, x (read by the
// entry from its v binding; an element outside the view is not stored)
fn v_word(w: Word, x: vec2<f32>) {
    var bits = vec2<u32>(0u, 0u);
    if (w.in0) { bits.x = out_bits(x.x, V16); }
    if (w.in1) { bits.y = out_bits(x.y, V16); }
    vo_put(w.w, bits, vec2<bool>(w.in0, w.in1));
}

// The four entries differ only in where they read k and v (q's binding, or
// ks / vs) and in whether theta' is divided by the factors ff: WGSL passes
// no buffer to a function, and a binding any of an entry's code names is
// part of its layout, so each reads its own bindings and hands the values on.

@compute @workgroup_size(WG)
fn rope_kv(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let jb = job(li, wid, nwg);
    if (jb.kind == 0u) {
        let r = q_job(jb.idx);
        q_apply(r, r.theta);
    } else if (jb.kind == 1u) {
        let w = out_word(jb.idx, p.oko, K16);
        let e0 = k_el(w.m0, w.in0);
        let e1 = k_el(w.m1, w.in1);
        k_word(w, e0, e1, vec2<f32>(q[e0.pa.x], q[e0.pa.y]), vec2<f32>(q[e1.pa.x], q[e1.pa.y]), e0.theta, e1.theta);
    } else if (jb.kind == 2u) {
        let w = out_word(jb.idx, p.ovo, V16);
        v_word(w, vec2<f32>(q[p.ov + w.m0], q[p.ov + w.m1]));
    }
}

@compute @workgroup_size(WG)
fn rope_kv_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let jb = job(li, wid, nwg);
    if (jb.kind == 0u) {
        let r = q_job(jb.idx);
        q_apply(r, div_keep(r.theta, ff[p.off_ff + r.i]));
    } else if (jb.kind == 1u) {
        let w = out_word(jb.idx, p.oko, K16);
        let e0 = k_el(w.m0, w.in0);
        let e1 = k_el(w.m1, w.in1);
        k_word(w, e0, e1, vec2<f32>(q[e0.pa.x], q[e0.pa.y]), vec2<f32>(q[e1.pa.x], q[e1.pa.y]),
               div_keep(e0.theta, ff[p.off_ff + e0.i]), div_keep(e1.theta, ff[p.off_ff + e1.i]));
    } else if (jb.kind == 2u) {
        let w = out_word(jb.idx, p.ovo, V16);
        v_word(w, vec2<f32>(q[p.ov + w.m0], q[p.ov + w.m1]));
    }
}

@compute @workgroup_size(WG)
fn rope_kv_sep(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let jb = job(li, wid, nwg);
    if (jb.kind == 0u) {
        let r = q_job(jb.idx);
        q_apply(r, r.theta);
    } else if (jb.kind == 1u) {
        let w = out_word(jb.idx, p.oko, K16);
        let e0 = k_el(w.m0, w.in0);
        let e1 = k_el(w.m1, w.in1);
        k_word(w, e0, e1, vec2<f32>(ks[e0.pa.x], ks[e0.pa.y]), vec2<f32>(ks[e1.pa.x], ks[e1.pa.y]), e0.theta, e1.theta);
    } else if (jb.kind == 2u) {
        let w = out_word(jb.idx, p.ovo, V16);
        v_word(w, vec2<f32>(vs[p.ov + w.m0], vs[p.ov + w.m1]));
    }
}

@compute @workgroup_size(WG)
fn rope_kv_sep_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let jb = job(li, wid, nwg);
    if (jb.kind == 0u) {
        let r = q_job(jb.idx);
        q_apply(r, div_keep(r.theta, ff[p.off_ff + r.i]));
    } else if (jb.kind == 1u) {
        let w = out_word(jb.idx, p.oko, K16);
        let e0 = k_el(w.m0, w.in0);
        let e1 = k_el(w.m1, w.in1);
        k_word(w, e0, e1, vec2<f32>(ks[e0.pa.x], ks[e0.pa.y]), vec2<f32>(ks[e1.pa.x], ks[e1.pa.y]),
               div_keep(e0.theta, ff[p.off_ff + e0.i]), div_keep(e1.theta, ff[p.off_ff + e1.i]));
    } else if (jb.kind == 2u) {
        let w = out_word(jb.idx, p.ovo, V16);
        v_word(w, vec2<f32>(vs[p.ov + w.m0], vs[p.ov + w.m1]));
    }
}
