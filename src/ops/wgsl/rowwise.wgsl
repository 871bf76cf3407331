// Row-wise ops over f32 rows (the last dimension): softmax, RMSNorm,
// LayerNorm, argmax, top-k.
//
// One workgroup per row: row = wid.y * nwg.x + wid.x (the host lays the row
// count out as a 2-D grid, see pxl_op_dispatch); groups past the last row
// return at once (a uniform exit, so the barriers below stay in uniform
// control flow). Each invocation walks the row with stride WG (a power of
// two), partials meet in a tree reduction in workgroup memory (the tree_*
// functions of common/row_reduce.wgsl), and a final strided pass writes the row.
//
// Special values are classified through their bits, never through float
// comparisons, so NaN and Inf handling does not depend on how the driver
// treats them.

override WG: u32 = 256u;

struct Params {
    rows: u32,    // rows to process (one workgroup each)
    cols: u32,    // row length L
    f: f32,       // softmax: scale; norms: eps
    causal: u32,  // softmax: 1 if the causal mask applies
    crows: u32,   // softmax: R, rows per causal matrix
    coff: i32,    // softmax: causal offset, clamped to [-R, L - 1] by the host
    k: u32,       // topk: k; layernorm: 1 if b is real (else b aliases w); argmax: 1 if NaN ranks lowest
    ksort: u32,   // topk: the power of two >= k
    o0: u32,      // element offsets of the views bound at 0..3 (pxl_op_bind)
    o1: u32,
    o2: u32,
    o3: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;

// softmax: y at 1, params at 2.  argmax: idx at 1, params at 2.
// rmsnorm: w at 1, y at 2, params at 3.  layernorm: w at 1, b at 2, y at 3, params at 4.
// topk: vals at 1, idx at 2, params at 3.
@group(0) @binding(1) var<storage, read_write> out1: array<f32>;
@group(0) @binding(1) var<storage, read_write> out1_i: array<i32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<uniform> p2: Params;
@group(0) @binding(2) var<storage, read_write> out2: array<f32>;
@group(0) @binding(2) var<storage, read_write> out2_i: array<i32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<uniform> p3: Params;
@group(0) @binding(3) var<storage, read_write> out3: array<f32>;
@group(0) @binding(4) var<uniform> p4: Params;
// argmax of long rows in two steps: argmax_part writes each chunk's (key, index) at 1,
// argmax_merge reads them at 0
@group(0) @binding(1) var<storage, read_write> part_w: array<vec2<u32>>;
@group(0) @binding(0) var<storage, read> part_r: array<vec2<u32>>;

#include "row_reduce.wgsl"   // red_a .. red_v, tree_sum_a / _softmax / _welford / _argmax, exp_c, ranks_before

const LOWEST: f32 = -3.4028234663852886e38;  // -FLT_MAX, the start of a running max
const NEG_INF_BITS: u32 = 0xff800000u;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y * nwg.x + wid.x;
}

// NaN or +Inf
fn bad_bits(b: u32) -> bool {
    return (b & 0x7fffffffu) > 0x7f800000u || b == 0x7f800000u;
}

// a runtime NaN (a constant NaN is a shader-creation error)
fn nan_f32() -> f32 {
    var bits = 0x7fc00000u;
    return bitcast<f32>(bits);
}

// ---- softmax ------------------------------------------------------------------------------
// One pass keeps a running (max m, sum s of exp(z - m)) per invocation over the unmasked
// columns, with a flag for NaN or +Inf (which make the row NaN); -Inf entries add nothing.
// The partials merge as m = max(m1, m2), s = s1 exp(m1 - m) + s2 exp(m2 - m). A second pass
// writes exp(z - m) / s. m starts at -FLT_MAX with s = 0, so the first element needs no
// special case; exp_c clamps its argument, so a difference that overflows to -Inf gives 0.

@compute @workgroup_size(WG)
fn softmax(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p2.rows) { return; }
    let lid = lid3.x;
    let L = p2.cols;
    let xb = p2.o0 + row * L;
    let yb = p2.o1 + row * L;
    var valid = L;
    if (p2.causal != 0u) {
        let r = i32(row % p2.crows);
        valid = u32(clamp(r + p2.coff + 1, 0, i32(L)));
    }
    let sc = p2.f;
    var m = LOWEST;
    var s = 0.0;
    var bad = 0u;
    for (var j = lid; j < valid; j = j + WG) {
        let z = sc * x[xb + j];
        let b = bitcast<u32>(z);
        if ((b & 0x7fffffffu) >= 0x7f800000u) {
            if (b != NEG_INF_BITS) { bad = 1u; }
        } else if (z > m) {
            s = s * exp_c(m - z) + 1.0;
            m = z;
        } else {
            s = s + exp_c(z - m);
        }
    }
    red_a[lid] = m;
    red_b[lid] = s;
    red_u[lid] = bad;
    tree_softmax(lid);
    let gm = red_a[0];
    let gs = red_b[0];
    let gbad = red_u[0] != 0u;
    let inv = 1.0 / select(gs, 1.0, gs == 0.0);  // gs == 0: no finite entry, inv unused
    for (var j = lid; j < L; j = j + WG) {
        var v = 0.0;
        if (j < valid) {
            if (gbad) {
                v = nan_f32();
            } else {
                let z = sc * x[xb + j];
                if (bitcast<u32>(z) != NEG_INF_BITS) { v = exp_c(z - gm) * inv; }
            }
        }
        out1[yb + j] = v;
    }
}

// ---- RMSNorm ------------------------------------------------------------------------------

@compute @workgroup_size(WG)
fn rmsnorm(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p3.rows) { return; }
    let lid = lid3.x;
    let L = p3.cols;
    let xb = p3.o0 + row * L;
    let yb = p3.o2 + row * L;
    var acc0 = 0.0;
    var acc1 = 0.0;
    var j = lid;
    for (; j + WG < L; j = j + 2u * WG) {
        let a = x[xb + j];
        let b = x[xb + j + WG];
        acc0 = acc0 + a * a;
        acc1 = acc1 + b * b;
    }
    if (j < L) {
        let a = x[xb + j];
        acc0 = acc0 + a * a;
    }
    red_a[lid] = acc0 + acc1;
    tree_sum_a(lid);
    let inv = inverseSqrt(red_a[0] / f32(L) + p3.f);
    for (var i = lid; i < L; i = i + WG) {
        out2[yb + i] = x[xb + i] * inv * w[p3.o1 + i];
    }
}

// ---- LayerNorm ----------------------------------------------------------------------------
// Welford per invocation (count n, mean, M2 = sum of squared deviations), merged pairwise
// (Chan et al.): n = na + nb, d = mb - ma, mean = ma + d nb / n, M2 = M2a + M2b + d^2 na nb / n.

@compute @workgroup_size(WG)
fn layernorm(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p4.rows) { return; }
    let lid = lid3.x;
    let L = p4.cols;
    let xb = p4.o0 + row * L;
    let yb = p4.o3 + row * L;
    var n = 0.0;
    var mean = 0.0;
    var m2 = 0.0;
    for (var j = lid; j < L; j = j + WG) {
        let v = x[xb + j];
        n = n + 1.0;
        let d = v - mean;
        mean = mean + d / n;
        m2 = m2 + d * (v - mean);
    }
    red_a[lid] = n;
    red_b[lid] = mean;
    red_c[lid] = m2;
    tree_welford(lid);
    let mu = red_b[0];
    let rstd = inverseSqrt(red_c[0] / f32(L) + p4.f);
    let has_b = p4.k != 0u;
    for (var i = lid; i < L; i = i + WG) {
        var v = (x[xb + i] - mu) * rstd * w[p4.o1 + i];
        if (has_b) { v = v + bias[p4.o2 + i]; }
        out3[yb + i] = v;
    }
}

// ---- argmax and top-k ------------------------------------------------------------------------
// Values are compared through a key that orders like the floats, with -0 == +0 and every NaN
// above +Inf; equal keys rank by lower index. Real keys are >= 0x007fffff (-Inf), so 0 is
// below every value: argmax with p2.k = 1 (pxl_argmax_ext's nan_lowest) gives NaN that key,
// and a row of NaN (no key above 0, no index taken) gives index 0.

fn okey(v: f32) -> u32 {
    var b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return 0xffffffffu; }
    if (b == 0x80000000u) { b = 0u; }
    if ((b & 0x80000000u) != 0u) { return ~b; }
    return b | 0x80000000u;
}

// This invocation's best (key, index) over elements j0, j0 + WG, ... below end of the row
// at base, (0, 0xffffffff) when it has none; into red_u / red_v for tree_argmax.
fn argmax_scan(lid: u32, base: u32, j0: u32, end: u32) {
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var j = j0; j < end; j = j + WG) {
        var k = okey(x[base + j]);
        if (p2.k != 0u && k == 0xffffffffu) { k = 0u; }
        if (k > bk) {  // j grows, so the first of equal keys stays
            bk = k;
            bi = j;
        }
    }
    red_u[lid] = bk;
    red_v[lid] = bi;
}

@compute @workgroup_size(WG)
fn argmax(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p2.rows) { return; }
    let lid = lid3.x;
    argmax_scan(lid, p2.o0 + row * p2.cols, lid, p2.cols);
    tree_argmax(lid);
    if (lid == 0u) { out1_i[p2.o1 + row] = i32(select(red_v[0], 0u, red_v[0] == 0xffffffffu)); }
}

// A long row's argmax over many workgroups (src/ops/rowwise.c, argmax_split): workgroup
// (row, chunk c) of p2.ksort chunks a row takes elements [c * p2.crows, (c + 1) * p2.crows)
// and writes its best (key, index) pair, (0, 0xffffffff) when it has none; argmax_merge then
// takes the best pair of each row, by the same order (ranks_before: larger key, then lower
// index), so the result is argmax's.
@compute @workgroup_size(WG)
fn argmax_part(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let lin = row_of(wid, nwg);
    if (lin >= p2.rows * p2.ksort) { return; }
    let row = lin / p2.ksort;
    let lid = lid3.x;
    let c = lin % p2.ksort;
    argmax_scan(lid, p2.o0 + row * p2.cols, c * p2.crows + lid, min(p2.cols, (c + 1u) * p2.crows));
    tree_argmax(lid);
    if (lid == 0u) { part_w[lin] = vec2<u32>(red_u[0], red_v[0]); }
}

@compute @workgroup_size(WG)
fn argmax_merge(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p2.rows) { return; }
    let lid = lid3.x;
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var c = lid; c < p2.ksort; c = c + WG) {
        let e = part_r[row * p2.ksort + c];
        if (ranks_before(e.x, e.y, bk, bi)) {
            bk = e.x;
            bi = e.y;
        }
    }
    red_u[lid] = bk;
    red_v[lid] = bi;
    tree_argmax(lid);
    if (lid == 0u) { out1_i[p2.o1 + row] = i32(select(red_v[0], 0u, red_v[0] == 0xffffffffu)); }
}

// Top-k of short rows (L <= 256, e.g. mixture-of-experts routing): the row's keys go to
// workgroup memory and each element counts the elements that rank before it; elements of
// rank < k write themselves to that slot (ranks are distinct, so every slot gets one).

var<workgroup> sm_key: array<u32, 256>;

@compute @workgroup_size(WG)
fn topk_small(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
              @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p3.rows) { return; }
    let lid = lid3.x;
    let L = min(p3.cols, 256u);
    let K = p3.k;
    let base = p3.o0 + row * p3.cols;
    for (var j = lid; j < L; j = j + WG) { sm_key[j] = okey(x[base + j]); }
    workgroupBarrier();
    for (var j = lid; j < L; j = j + WG) {
        let kj = sm_key[j];
        var rank = 0u;
        for (var t = 0u; t < L; t = t + 1u) {
            let kt = sm_key[t];
            rank = rank + select(0u, 1u, kt > kj || (kt == kj && t < j));
        }
        if (rank < K) {
            out1[p3.o1 + row * K + rank] = x[base + j];
            out2_i[p3.o2 + row * K + rank] = i32(j);
        }
    }
}

// Top-k of longer rows by radix select on the keys, then a sort of the k winners:
//  1. Up to four passes over the row histogram one byte of the key (high byte first) among
//     the candidates (keys matching the prefix found so far); a scan from the top bin finds
//     the bin holding the need-th best candidate. When that bin holds exactly `need`
//     candidates, the winners are: every key above the prefix, plus all matching it.
//  2. Otherwise, after four bytes the threshold key T is exact but more elements equal T
//     than are needed: the same select runs over the bytes of the index (low indices first)
//     among the elements equal to T. Indices are distinct, so this ends.
//  3. One pass gathers the exactly k winners into workgroup memory (slots from an atomic
//     counter), and a bitonic sort over ksort >= k slots orders them (key desc, index asc).

var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> gather_n: atomic<u32>;
var<workgroup> tk_key: array<u32, 256>;
var<workgroup> tk_idx: array<u32, 256>;
var<workgroup> tk_val: array<f32, 256>;
// selection state, written by invocation 0 between barriers
var<workgroup> sel_kp: u32;   // key prefix
var<workgroup> sel_km: u32;   // key mask (bits of the prefix)
var<workgroup> sel_ip: u32;   // index prefix
var<workgroup> sel_im: u32;   // index mask
var<workgroup> sel_need: u32; // winners still to find among the candidates
var<workgroup> sel_done: u32;

// The histogram bucket that holds the sel_need-th winner, walking from bucket
// 255 down (high_first) or from 0 up; sel_need becomes the winners still to
// find inside it, and sel_done is set when that is all of it. One invocation.
fn pick_bucket(high_first: bool) -> u32 {
    let need = sel_need;
    var cum = 0u;
    for (var i = 0u; i < 256u; i = i + 1u) {
        let b = select(i, 255u - i, high_first);
        let h = atomicLoad(&hist[b]);
        if (cum + h >= need || i == 255u) {
            sel_need = need - cum;
            if (h == need - cum) { sel_done = 1u; }
            return b;
        }
        cum = cum + h;
    }
    return 0u; // not reached: i == 255 returns
}

fn clear_hist(lid: u32) {
    for (var t = lid; t < 256u; t = t + WG) { atomicStore(&hist[t], 0u); }
}

@compute @workgroup_size(WG)
fn topk(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = row_of(wid, nwg);
    if (row >= p3.rows) { return; }
    let lid = lid3.x;
    let L = p3.cols;
    let K = p3.k;
    let base = p3.o0 + row * L;
    if (lid == 0u) {
        sel_kp = 0u;
        sel_km = 0u;
        sel_ip = 0u;
        sel_im = 0u;
        sel_need = K;
        sel_done = 0u;
        atomicStore(&gather_n, 0u);
    }

    // 1. key bytes, high first
    for (var d = 0u; d < 4u; d = d + 1u) {
        if (workgroupUniformLoad(&sel_done) != 0u) { break; }
        let shift = 24u - 8u * d;
        clear_hist(lid);
        workgroupBarrier();
        let kp = sel_kp;
        let km = sel_km;
        for (var j = lid; j < L; j = j + WG) {
            let k = okey(x[base + j]);
            if ((k & km) == kp) { atomicAdd(&hist[(k >> shift) & 255u], 1u); }
        }
        workgroupBarrier();
        if (lid == 0u) {
            let b = pick_bucket(true);
            sel_kp = kp | (b << shift);
            sel_km = km | (255u << shift);
        }
    }

    // 2. index bytes among the ties at the threshold key, low indices first
    let ibits = 32u - countLeadingZeros(max(L, 2u) - 1u);
    let idigits = (ibits + 7u) / 8u;
    for (var d = 0u; d < idigits; d = d + 1u) {
        if (workgroupUniformLoad(&sel_done) != 0u) { break; }
        let shift = 8u * (idigits - 1u - d);
        clear_hist(lid);
        workgroupBarrier();
        let kp = sel_kp;
        let ip = sel_ip;
        let im = sel_im;
        for (var j = lid; j < L; j = j + WG) {
            if ((j & im) == ip && okey(x[base + j]) == kp) { atomicAdd(&hist[(j >> shift) & 255u], 1u); }
        }
        workgroupBarrier();
        if (lid == 0u) {
            let b = pick_bucket(false);
            sel_ip = ip | (b << shift);
            sel_im = im | (255u << shift);
        }
    }

    // 3. gather the winners
    workgroupBarrier();
    let kp = sel_kp;
    let km = sel_km;
    let ip = sel_ip;
    let im = sel_im;
    for (var j = lid; j < L; j = j + WG) {
        let v = x[base + j];
        let k = okey(v);
        let kk = k & km;
        if (kk > kp || (kk == kp && (j & im) <= ip)) {
            let slot = atomicAdd(&gather_n, 1u);
            if (slot < 256u) {
                tk_key[slot] = k;
                tk_idx[slot] = j;
                tk_val[slot] = v;
            }
        }
    }
    workgroupBarrier();
    let ks = p3.ksort;
    for (var t = K + lid; t < ks; t = t + WG) {
        tk_key[t] = 0u;
        tk_idx[t] = 0xffffffffu;
        tk_val[t] = 0.0;
    }
    workgroupBarrier();

    // bitonic sort of ks slots, best first
    for (var size = 2u; size <= ks; size = size * 2u) {
        for (var stride = size / 2u; stride > 0u; stride = stride / 2u) {
            for (var t = lid; t < ks / 2u; t = t + WG) {
                let i = 2u * stride * (t / stride) + t % stride;
                let o = i + stride;
                let o_first = ranks_before(tk_key[o], tk_idx[o], tk_key[i], tk_idx[i]);
                if (o_first == ((i & size) == 0u)) {
                    let k0 = tk_key[i];
                    let i0 = tk_idx[i];
                    let v0 = tk_val[i];
                    tk_key[i] = tk_key[o];
                    tk_idx[i] = tk_idx[o];
                    tk_val[i] = tk_val[o];
                    tk_key[o] = k0;
                    tk_idx[o] = i0;
                    tk_val[o] = v0;
                }
            }
            workgroupBarrier();
        }
    }
    for (var t = lid; t < K; t = t + WG) {
        out1[p3.o1 + row * K + t] = tk_val[t];
        out2_i[p3.o2 + row * K + t] = i32(tk_idx[t]);
    }
}
