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
//   2. scores: invocation t dots keys t, t + WG, ... (key pos from kn) with
//      q, into sc (kv_len <= KMAX); their maximum M and the sum L of
//      exp2(s - M) over the workgroup (a NaN score never becomes M but
//      poisons L, as in attention.wgsl);
//   3. values: invocation (slice, pair column c) sums exp2(s_j - M) v_j[c]
//      over the keys j = slice (mod slices); the slices are summed in
//      workgroup memory and y = sum / L.
// The caches are f32 or f16 (override K16: both), bound as u32 words (f16:
// element pairs; the host keeps each f16 row on an even element). k and v
// are read from x (q's binding: the fused QKV product's output, one buffer).
//
// Bindings: x (0, read_write), the K cache (1) and V cache (2) as words, y
// (3), the uniforms (4), the frequency factors (5, entry rope_kv_attn_ff).

override WG: u32 = 128u;     // invocations per workgroup (>= D / 2)
override K16: bool = false;  // the caches are f16 (else f32)

const DMAX: u32 = 256u;      // the largest D
const KMAX: u32 = 1024u;     // the most keys
const NEG: f32 = -3.0e38;    // "no score yet" (attention.wgsl)

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
    ock: u32,        // element offsets of the caches' row 0 in their bindings (f16: in halves, even)
    ocv: u32,
    oy: u32,         // y's element offset
    off_ff: u32,     // the factors' element offset
    fs: f32,         // freq_scale
    scale2: f32,     // scale * log2(e)
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> ck: array<u32>;
@group(0) @binding(2) var<storage, read_write> cv: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> ff: array<f32>;

#include "rope_turn.wgsl"   // turns_per_pos, cos_sin, rope_theta, div_keep, rope_rot
#include "half_bits.wgsl"   // f32_to_f16_bits, f16_to_f32_bits

var<workgroup> ths: array<f32, DMAX / 2u>;   // theta' of each pair (after the factors)
var<workgroup> qs: array<f32, DMAX>;         // the turned query, times scale * log2 e
var<workgroup> kn: array<f32, DMAX>;         // the new key row, as the cache holds it
var<workgroup> vn: array<f32, DMAX>;         // the new value row, as the cache holds it
var<workgroup> sc: array<f32, KMAX>;         // scores, then exp2(s - M)
var<workgroup> red: array<f32, WG>;
var<workgroup> racc: array<vec2<f32>, WG>;

// theta' of pair i before the factor (rope_kv.wgsl's chunk_theta, chunk 0)
fn pair_theta(i: u32) -> f32 {
    let a = i >> 5u;
    let b = i & 31u;
    return rope_theta(p.hi[a >> 2u][a & 3u], p.lo[b >> 2u][b & 3u], p.fs);
}

// elements e, e + 1 (e even) of a cache binding as f32 (attention.wgsl reads f16 pairs alike)
fn k2(e: u32) -> vec2<f32> {
    if (K16) { return unpack2x16float(ck[e >> 1u]); }
    return vec2<f32>(bitcast<f32>(ck[e]), bitcast<f32>(ck[e + 1u]));
}
fn v2(e: u32) -> vec2<f32> {
    if (K16) { return unpack2x16float(cv[e >> 1u]); }
    return vec2<f32>(bitcast<f32>(cv[e]), bitcast<f32>(cv[e + 1u]));
}

// The workgroup's sum (max: the largest, NaN never chosen) of v over its
// invocations; every invocation must call it (barriers).
fn wg_reduce(li: u32, v: f32, take_max: bool) -> f32 {
    red[li] = v;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h >> 1u) {
        if (li < h) {
            let o = red[li + h];
            if (take_max) {
                if (o > red[li]) { red[li] = o; }
            } else {
                red[li] = red[li] + o;
            }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Steps 1 to 3 for head h, with ths filled (and a barrier after it).
fn body(li: u32, h: u32) {
    let D = p.D;
    let half = D / 2u;
    let hk = h / (p.Hq / p.Hkv);
    let P = u32(p.pos);
    let kv = P + 1u;
    // 1. turn q and k, take v
    let qb = p.oq + h * D;
    let kb = p.ok + hk * D;
    for (var i = li; i < half; i = i + WG) {
        let cs = cos_sin(turns_per_pos(ths[i]), p.pos);
        var a = i;
        var b = i + half;
        if (p.lay == 0u) {
            a = 2u * i;
            b = 2u * i + 1u;
        }
        let yq = rope_rot(x[qb + a], x[qb + b], cs);
        x[qb + a] = yq.x;
        x[qb + b] = yq.y;
        qs[a] = yq.x * p.scale2;
        qs[b] = yq.y * p.scale2;
        let yk = rope_rot(x[kb + a], x[kb + b], cs);
        kn[a] = yk.x;
        kn[b] = yk.y;
    }
    for (var d = li; d < D; d = d + WG) { vn[d] = x[p.ov + hk * D + d]; }
    workgroupBarrier();
    // the cache rows: element pairs (2w, 2w + 1), rounded as the cache holds them
    let row = (P * p.Hkv + hk) * D;
    let writer = h % (p.Hq / p.Hkv) == 0u;
    for (var w = li; w < half; w = w + WG) {
        let e = 2u * w;
        if (K16) {
            let k0 = f32_to_f16_bits(bitcast<u32>(kn[e]));
            let k1 = f32_to_f16_bits(bitcast<u32>(kn[e + 1u]));
            let v0 = f32_to_f16_bits(bitcast<u32>(vn[e]));
            let v1 = f32_to_f16_bits(bitcast<u32>(vn[e + 1u]));
            if (writer) {
                ck[(p.ock + row + e) >> 1u] = k0 | (k1 << 16u);
                cv[(p.ocv + row + e) >> 1u] = v0 | (v1 << 16u);
            }
            kn[e] = bitcast<f32>(f16_to_f32_bits(k0));
            kn[e + 1u] = bitcast<f32>(f16_to_f32_bits(k1));
            vn[e] = bitcast<f32>(f16_to_f32_bits(v0));
            vn[e + 1u] = bitcast<f32>(f16_to_f32_bits(v1));
        } else if (writer) {
            ck[p.ock + row + e] = bitcast<u32>(kn[e]);
            ck[p.ock + row + e + 1u] = bitcast<u32>(kn[e + 1u]);
            cv[p.ocv + row + e] = bitcast<u32>(vn[e]);
            cv[p.ocv + row + e + 1u] = bitcast<u32>(vn[e + 1u]);
        }
    }
    workgroupBarrier();
    // 2. scores, their maximum and the sum of their exponentials
    var mx = NEG;
    for (var j = li; j < kv; j = j + WG) {
        var s0 = 0.0;
        var s1 = 0.0;
        if (j == P) {
            for (var d = 0u; d < D; d = d + 2u) {
                s0 = s0 + qs[d] * kn[d];
                s1 = s1 + qs[d + 1u] * kn[d + 1u];
            }
        } else {
            let e0 = p.ock + (j * p.Hkv + hk) * D;
            for (var d = 0u; d < D; d = d + 2u) {
                let kk = k2(e0 + d);
                s0 = s0 + qs[d] * kk.x;
                s1 = s1 + qs[d + 1u] * kk.y;
            }
        }
        let s = s0 + s1;
        sc[j] = s;
        if (s > mx) { mx = s; }
    }
    let M = wg_reduce(li, mx, true);
    var l = 0.0;
    for (var j = li; j < kv; j = j + WG) {
        let e = exp2(sc[j] - M);
        sc[j] = e;
        l = l + e;
    }
    let L = wg_reduce(li, l, false);   // its barriers also publish sc
    // 3. values: invocation (slice, pair column c)
    let slices = WG / half;
    let slice = li / half;
    let c = li % half;
    var acc = vec2<f32>(0.0);
    if (slice < slices) {
        for (var j = slice; j < kv; j = j + slices) {
            var vv: vec2<f32>;
            if (j == P) {
                vv = vec2<f32>(vn[2u * c], vn[2u * c + 1u]);
            } else {
                vv = v2(p.ocv + (j * p.Hkv + hk) * D + 2u * c);
            }
            acc = acc + sc[j] * vv;
        }
    }
    racc[li] = acc;
    workgroupBarrier();
    if (li < half) {
        var t = racc[li];
        for (var s = 1u; s < slices; s = s + 1u) { t = t + racc[s * half + li]; }
        y[p.oy + h * D + 2u * li] = t.x / L;
        y[p.oy + h * D + 2u * li + 1u] = t.y / L;
    }
}

@compute @workgroup_size(WG)
fn rope_kv_attn(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let h = wid.y * nwg.x + wid.x;
    if (h >= p.Hq) { return; }
    for (var i = li; i < p.D / 2u; i = i + WG) { ths[i] = pair_theta(i); }
    workgroupBarrier();
    body(li, h);
}

@compute @workgroup_size(WG)
fn rope_kv_attn_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let h = wid.y * nwg.x + wid.x;
    if (h >= p.Hq) { return; }
    for (var i = li; i < p.D / 2u; i = i + WG) { ths[i] = div_keep(pair_theta(i), ff[p.off_ff + i]); }
    workgroupBarrier();
    body(li, h);
}
