// pxl_rope_kv_attention for one token (see src/ops/rope.c): RoPE of q in
// place and of k into the KV cache's row at position pos, v into the V
// cache's row, then attention of the turned q over the cache's pos + 1 rows,
// in one dispatch. One workgroup per query head h (KV head hk = h / G):
//   1. the head's pairs are turned (rope_turn.wgsl: the arithmetic of
//      rope.wgsl and rope_kv.wgsl, so q and the cache rows are bit for bit
//      pxl_rope_kv's): q into workgroup memory (times scale * log2 e) and
//      back into x; k and v into kn / vn, rounded as the cache holds them
//      (f16: half_bits.wgsl, as pxl_rope_kv rounds); the first query head
//      of the group writes the cache rows. The other workgroups of the group
//      take the new key and value from their own kn / vn, never from the
//      rows being written, so no workgroup reads what another writes.
//   2. scores, in passes of WG / PK keys: invocation (key, part) dots up to
//      CV 16-byte words of the key row (key pos from kn) with q, loaded
//      together; the PK parts are summed in workgroup memory into sc
//      (kv_len <= KMAX); then their maximum M and the sum L of exp2(s - M)
//      over the workgroup (a NaN score never becomes M but poisons L, as in
//      attention.wgsl), each in two steps of RG values and one barrier
//      each (wg_reduce: a tree of log2 WG barriers cost an H200 about 1 us
//      a call more);
//   3. values: invocation (slice, column wc: one 16-byte word of a row) sums
//      exp2(s_j - M) v_j[wc] over the keys j = slice (mod slices), four rows
//      loaded together; the slices are summed in workgroup memory, SG at a
//      time and then those sums, and y = sum / L.
// Everything is latency at these sizes, so each invocation issues several
// independent loads before it uses them: the first score pass's key words
// and the value phase's first four rows are asked for before step 1 (they
// are cache rows before pos, which no workgroup writes), and each
// invocation turns its own pair with an angle it computes itself, no
// barrier between. The caches are f32 or f16
// (override K16: both), bound as 16-byte words (4 f32 or 8 f16 values; the
// host keeps rows and D on whole words). k and v are read from x (q's
// binding: the fused QKV product's output, one buffer).
//
// Bindings: x (0, read_write), the K cache (1) and V cache (2) as words, y
// (3), the uniforms (4), the frequency factors (5, entry rope_kv_attn_ff).

override WG: u32 = 256u;     // invocations per workgroup (>= D / 2)
override K16: bool = false;  // the caches are f16 (else f32)

const DMAX: u32 = 256u;      // the largest D
const KMAX: u32 = 1024u;     // the most keys
const CV: u32 = 4u;          // 16-byte words of a key row per invocation in the score phase
const SLICES: u32 = 32u;     // the most slices of the keys in the value phase
const NEG: f32 = -3.0e38;    // "no score yet" (attention.wgsl)
const RG: u32 = 16u;         // values a group of wg_reduce's first step takes (WG >= 32: at least 2 groups)
const SG: u32 = 4u;          // slices the value phase's first step adds (SLICES / SG groups at most)

struct Params {
    lo: array<vec4<f32>, 8>,   // theta of pair 32a + b = hi[a] * lo[b] (rope_kv.wgsl, chunk 0)
    hi: array<vec4<f32>, 4>,
    pos: i32,        // the token's position: the cache's row, and kv_len - 1
    Hq: u32,
    Hkv: u32,
    D: u32,
    lay: u32,        // 0: pairs (2i, 2i+1); 1: pairs (i, i + D/2)
    oq: u32,         // element offsets in x: q, k, v
    ok: u32,
    ov: u32,
    ock: u32,        // the caches' row 0 in their bindings, in 16-byte words
    ocv: u32,
    oy: u32,         // y's element offset
    off_ff: u32,     // the factors' element offset
    fs: f32,         // freq_scale
    scale2: f32,     // scale * log2(e)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> ck: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> cv: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> ff: array<f32>;

#include "rope_turn.wgsl"   // turns_per_pos, cos_sin, rope_theta, div_keep, rope_rot
#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits

var<workgroup> qs: array<vec4<f32>, DMAX / 4u>;   // the turned query, times scale * log2 e (values 4 i .. 4 i + 3: qs[i])
var<workgroup> kn: array<f32, DMAX>;         // the new key row, as the cache holds it
var<workgroup> vn: array<f32, DMAX>;         // the new value row, as the cache holds it
var<workgroup> sc: array<f32, KMAX>;         // scores, then exp2(s - M)
var<workgroup> red: array<f32, WG>;
var<workgroup> red2: array<f32, WG / RG>;   // wg_reduce's group results
var<workgroup> racc: array<vec4<f32>, WG * 2u>;
var<workgroup> racc2: array<vec4<f32>, WG * 2u>;   // the value phase's sums of SG slices (as racc)

// values per 16-byte word of a cache row
fn per_word() -> u32 { return select(4u, 8u, K16); }

// theta' of pair i before the factor (rope_kv.wgsl's chunk_theta, chunk 0)
fn pair_theta(i: u32) -> f32 {
    let a = i >> 5u;
    let b = i & 31u;
    return rope_theta(p.hi[a >> 2u][a & 3u], p.lo[b >> 2u][b & 3u], p.fs);
}

// a word of the cache as its values: f32 (lo only), or 8 f16 (lo, hi), as
// attention.wgsl reads f16 pairs (unpack2x16float)
fn vals_lo(w: vec4<u32>) -> vec4<f32> {
    if (K16) { return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
    return bitcast<vec4<f32>>(w);
}
fn vals_hi(w: vec4<u32>) -> vec4<f32> {
    if (K16) { return vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)); }
    return vec4<f32>(0.0);
}

// values 4 i .. 4 i + 3 of a workgroup row (qs, kn, vn) as a vec4
fn q4(i: u32) -> vec4<f32> { return qs[i]; }
fn kn4(i: u32) -> vec4<f32> { return vec4<f32>(kn[4u * i], kn[4u * i + 1u], kn[4u * i + 2u], kn[4u * i + 3u]); }
fn vn4(i: u32) -> vec4<f32> { return vec4<f32>(vn[4u * i], vn[4u * i + 1u], vn[4u * i + 2u], vn[4u * i + 3u]); }

// The workgroup's sum (take_max: the largest, NaN never chosen) of v over
// its invocations, in two steps: WG / RG invocations each combine RG values
// in order, then every invocation combines those WG / RG results in order
// (the same order everywhere, so all get the same value). Every invocation
// must call it (barriers); red and red2 are free again when it returns
// (their last reads come before its second barrier, or read red2, which a
// next call writes only after its own first barrier).
fn wg_reduce(li: u32, v: f32, take_max: bool) -> f32 {
    red[li] = v;
    workgroupBarrier();
    if (li < WG / RG) {
        var t = red[li * RG];
        for (var i = 1u; i < RG; i = i + 1u) {
            let o = red[li * RG + i];
            if (take_max) {
                if (o > t) { t = o; }
            } else {
                t = t + o;
            }
        }
        red2[li] = t;
    }
    workgroupBarrier();
    var r = red2[0];
    for (var i = 1u; i < WG / RG; i = i + 1u) {
        let o = red2[i];
        if (take_max) {
            if (o > r) { r = o; }
        } else {
            r = r + o;
        }
    }
    return r;
}

// The new rows' words (16 bytes: 4 f32 or 8 f16 values) from kn / vn: word w of the row
fn new_word(w: u32, is_v: bool) -> vec4<u32> {
    var a: array<f32, 8>;
    for (var e = 0u; e < per_word(); e = e + 1u) { a[e] = select(kn[w * per_word() + e], vn[w * per_word() + e], is_v); }
    if (K16) {
        return vec4<u32>(f32_to_f16_bits(bitcast<u32>(a[0])) | (f32_to_f16_bits(bitcast<u32>(a[1])) << 16u),
                         f32_to_f16_bits(bitcast<u32>(a[2])) | (f32_to_f16_bits(bitcast<u32>(a[3])) << 16u),
                         f32_to_f16_bits(bitcast<u32>(a[4])) | (f32_to_f16_bits(bitcast<u32>(a[5])) << 16u),
                         f32_to_f16_bits(bitcast<u32>(a[6])) | (f32_to_f16_bits(bitcast<u32>(a[7])) << 16u));
    }
    return bitcast<vec4<u32>>(vec4<f32>(a[0], a[1], a[2], a[3]));
}

// Steps 1 to 3 for head h; th: theta' of the invocation's pair li (li <
// D / 2 <= WG: one pair an invocation), the entry point's.
fn body(li: u32, h: u32, th: f32) {
    let D = p.D;
    let half = D / 2u;
    let hk = h / (p.Hq / p.Hkv);
    let P = u32(p.pos);
    let kv = P + 1u;
    let vpr = D / per_word();   // 16-byte words per cache row
    // The first score pass's key words and the value phase's first four
    // rows, asked for before step 1 so that their loads overlap it: they
    // are rows before P, which this dispatch does not write.
    let pk = (vpr + CV - 1u) / CV;
    let kpp = WG / pk;
    let part = li % pk;
    let jl = li / pk;
    var wk0: array<vec4<u32>, CV>;
    if (jl < kv && jl < kpp && jl != P) {
        let e0 = p.ock + (jl * p.Hkv + hk) * vpr;
        for (var c = 0u; c < CV; c = c + 1u) {
            let cc = part * CV + c;
            if (cc < vpr) { wk0[c] = ck[e0 + cc]; }
        }
    }
    let slices = min(WG / vpr, SLICES);
    let slice = li / vpr;
    let wc = li % vpr;   // the invocation's word column in the value phase
    var wv0: array<vec4<u32>, 4>;
    if (slice < slices) {
        for (var u = 0u; u < 4u; u = u + 1u) {
            let j = slice + u * slices;
            if (j < kv && j != P) { wv0[u] = cv[p.ocv + hk * vpr + wc + j * p.Hkv * vpr]; }
        }
    }
    // 1. turn q and k, take v
    let qb = p.oq + h * D;
    let kb = p.ok + hk * D;
    if (li < half) {
        let i = li;
        let cs = cos_sin(turns_per_pos(th), p.pos);
        var a = i;
        var b = i + half;
        if (p.lay == 0u) {
            a = 2u * i;
            b = 2u * i + 1u;
        }
        let yq = rope_rot(x[qb + a], x[qb + b], cs);
        x[qb + a] = yq.x;
        x[qb + b] = yq.y;
        qs[a >> 2u][a & 3u] = yq.x * p.scale2;
        qs[b >> 2u][b & 3u] = yq.y * p.scale2;
        let yk = rope_rot(x[kb + a], x[kb + b], cs);
        kn[a] = yk.x;
        kn[b] = yk.y;
    }
    for (var d = li; d < D; d = d + WG) { vn[d] = x[p.ov + hk * D + d]; }
    workgroupBarrier();
    // the cache rows (written by the group's first query head) and kn / vn as the cache holds them
    let roww = (P * p.Hkv + hk) * vpr;
    var wk = vec4<u32>(0u);
    var wv = vec4<u32>(0u);
    if (li < vpr) {
        wk = new_word(li, false);
        wv = new_word(li, true);
        if (h % (p.Hq / p.Hkv) == 0u) {
            ck[p.ock + roww + li] = wk;
            cv[p.ocv + roww + li] = wv;
        }
    }
    workgroupBarrier();
    if (li < vpr && K16) {
        let k0 = vals_lo(wk);
        let k1 = vals_hi(wk);
        let v0 = vals_lo(wv);
        let v1 = vals_hi(wv);
        for (var e = 0u; e < 4u; e = e + 1u) {
            kn[8u * li + e] = k0[e];
            kn[8u * li + 4u + e] = k1[e];
            vn[8u * li + e] = v0[e];
            vn[8u * li + 4u + e] = v1[e];
        }
    }
    workgroupBarrier();
    // 2. scores: PK invocations a key, CV words each, WG / PK keys a pass
    var mx = NEG;
    for (var base = 0u; base < kv; base = base + kpp) {
        let j = base + jl;
        var s = 0.0;
        if (j < kv && jl < kpp) {
            let e0 = p.ock + (j * p.Hkv + hk) * vpr;
            var w = wk0;   // the first pass's, loaded at the start
            if (base > 0u) {
                for (var c = 0u; c < CV; c = c + 1u) {
                    let cc = part * CV + c;
                    if (cc < vpr && j != P) { w[c] = ck[e0 + cc]; }
                }
            }
            for (var c = 0u; c < CV; c = c + 1u) {
                let cc = part * CV + c;
                if (cc < vpr) {
                    if (K16) {
                        var k0 = vals_lo(w[c]);
                        var k1 = vals_hi(w[c]);
                        if (j == P) {
                            k0 = kn4(2u * cc);
                            k1 = kn4(2u * cc + 1u);
                        }
                        s = s + dot(q4(2u * cc), k0) + dot(q4(2u * cc + 1u), k1);
                    } else {
                        var k0 = vals_lo(w[c]);
                        if (j == P) { k0 = kn4(cc); }
                        s = s + dot(q4(cc), k0);
                    }
                }
            }
        }
        red[li] = s;
        workgroupBarrier();
        if (part == 0u && j < kv && jl < kpp) {
            var t = red[li];
            for (var q = 1u; q < pk; q = q + 1u) { t = t + red[li + q]; }
            sc[j] = t;
            if (t > mx) { mx = t; }
        }
        workgroupBarrier();
    }
    let M = wg_reduce(li, mx, true);
    var l = 0.0;
    for (var j = li; j < kv; j = j + WG) {
        let e = exp2(sc[j] - M);
        sc[j] = e;
        l = l + e;
    }
    let L = wg_reduce(li, l, false);   // its barriers also publish sc
    // 3. values: invocation (slice, word column wc), four rows at a time; at
    // most SLICES slices, whose sums the first vpr invocations add serially
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    if (slice < slices) {
        let e0 = p.ocv + hk * vpr + wc;
        for (var j0 = slice; j0 < kv; j0 = j0 + 4u * slices) {
            var w = wv0;   // the first four rows', loaded at the start
            if (j0 != slice) {
                for (var u = 0u; u < 4u; u = u + 1u) {
                    let j = j0 + u * slices;
                    if (j < kv && j != P) { w[u] = cv[e0 + j * p.Hkv * vpr]; }
                }
            }
            for (var u = 0u; u < 4u; u = u + 1u) {
                let j = j0 + u * slices;
                if (j < kv) {
                    var v0 = vals_lo(w[u]);
                    var v1 = vals_hi(w[u]);
                    if (j == P) {
                        if (K16) {
                            v0 = vn4(2u * wc);
                            v1 = vn4(2u * wc + 1u);
                        } else {
                            v0 = vn4(wc);
                        }
                    }
                    a0 = a0 + sc[j] * v0;
                    a1 = a1 + sc[j] * v1;
                }
            }
        }
    }
    racc[li] = a0;
    racc[WG + li] = a1;
    workgroupBarrier();
    // the slices' sums in two steps: group g of SG slices by invocations
    // (g, wc), then the groups by the first vpr invocations, in order
    let ng = (slices + SG - 1u) / SG;
    if (li < ng * vpr) {
        let g = li / vpr;
        var t0 = racc[g * SG * vpr + wc];
        var t1 = racc[WG + g * SG * vpr + wc];
        for (var s = g * SG + 1u; s < min(g * SG + SG, slices); s = s + 1u) {
            t0 = t0 + racc[s * vpr + wc];
            t1 = t1 + racc[WG + s * vpr + wc];
        }
        racc2[li] = t0;
        racc2[WG + li] = t1;
    }
    workgroupBarrier();
    if (li < vpr) {
        var t0 = racc2[li];
        var t1 = racc2[WG + li];
        for (var g = 1u; g < ng; g = g + 1u) {
            t0 = t0 + racc2[g * vpr + li];
            t1 = t1 + racc2[WG + g * vpr + li];
        }
        let o = p.oy + h * D + li * per_word();
        for (var e = 0u; e < 4u; e = e + 1u) { y[o + e] = t0[e] / L; }
        if (K16) {
            for (var e = 0u; e < 4u; e = e + 1u) { y[o + 4u + e] = t1[e] / L; }
        }
    }
}

@compute @workgroup_size(WG)
fn rope_kv_attn(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let h = wid.y * nwg.x + wid.x;
    if (h >= p.Hq) { return; }
    var th = 0.0;
    if (li < p.D / 2u) { th = pair_theta(li); }
    body(li, h, th);
}

@compute @workgroup_size(WG)
fn rope_kv_attn_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let h = wid.y * nwg.x + wid.x;
    if (h >= p.Hq) { return; }
    var th = 0.0;
    if (li < p.D / 2u) { th = div_keep(pair_theta(li), ff[p.off_ff + li]); }
    body(li, h, th);
}
