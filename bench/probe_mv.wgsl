// Kernels of bench/probe_mv_wgsl.c (a finding, not product code): what a
// WGSL one-row Q4_K product on 8-bit A can read, against plain streaming.
// The harness puts src/ops/wgsl/common's half_bits.wgsl, q8_round.wgsl and
// bytes.wgsl (k_scale_min) before it.

@group(0) @binding(0) var<storage, read> B: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> AQ: array<vec4<u32>>;   // A rounded, 16 values a word
@group(0) @binding(2) var<storage, read> AD: array<vec4<f32>>;   // per 32 values: (d, d * sum q, 0, 0)
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

override WG: u32 = 256u;
override TPR: u32 = 32u;     // invocations a row group (the subgroup)
override ROWS: u32 = 2u;     // rows a row group
override UNR: u32 = 1u;      // units whose words are loaded before any is used
override NB: u32 = 16u;      // Q4_K blocks a row (K / 256)
override SHA: bool = false;  // A copied into workgroup memory first
override ITER: u32 = 4u;     // readall: loads an invocation makes (UNR at a time)

var<workgroup> aqs: array<vec4<u32>, 256>;
var<workgroup> ads: array<vec4<f32>, 128>;

// Every 16-byte word of B once, UNR loads in flight an invocation.
@compute @workgroup_size(WG)
fn readall(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let total = arrayLength(&B);
    let S = nw.x * WG;
    var acc = vec4<u32>(0u);
    for (var i = g.x; i < total; i = i + S * UNR) {
        for (var x = 0u; x < UNR; x = x + 1u) {
            let k = i + x * S;
            if (k < total) { acc = acc ^ B[k]; }
        }
    }
    if (acc.x == 0x9e3779b9u && acc.y == 1u) { C[g.x] = f32(acc.z); }
}

// kmv4q's sum for one unit of one row: quant word q of the block whose
// header is hdr (sub-blocks 2 j and 2 j + 1), A's words qa0, qa1 and their
// blocks' (d, d * sum q) e0, e1; hm 1 where the unit adds the min terms
fn unit_sum(hdr: vec4<u32>, q: vec4<u32>, qa0: vec4<u32>, qa1: vec4<u32>, e0: vec4<f32>, e1: vec4<f32>, j: u32,
            hm: f32) -> f32 {
    let lo = vec4<u32>(0x0f0f0f0fu);
    let dm = unpack2x16float(hdr.x);
    let sm0 = k_scale_min(hdr.y, hdr.z, hdr.w, 2u * j);
    let sm1 = k_scale_min(hdr.y, hdr.z, hdr.w, 2u * j + 1u);
    let ql = q & lo;
    let qu = (q >> vec4<u32>(4u)) & lo;
    let i0 = dot4I8Packed(ql.x, qa0.x) + dot4I8Packed(ql.y, qa0.y) + dot4I8Packed(ql.z, qa0.z) +
             dot4I8Packed(ql.w, qa0.w);
    let i1 = dot4I8Packed(qu.x, qa1.x) + dot4I8Packed(qu.y, qa1.y) + dot4I8Packed(qu.z, qa1.z) +
             dot4I8Packed(qu.w, qa1.w);
    return dm.x * (f32(sm0.x) * e0.x * f32(i0) + f32(sm1.x) * e1.x * f32(i1)) -
           hm * dm.y * (f32(sm0.y) * e0.y + f32(sm1.y) * e1.y);
}

fn aq_at(i: u32) -> vec4<u32> {
    if (SHA) { return aqs[i]; }
    return AQ[i];
}
fn ad_at(i: u32) -> vec4<f32> {
    if (SHA) { return ads[i]; }
    return AD[i];
}

// kmv4q's split (a unit: one 16-byte quant word of a block, ROWS rows), A
// already rounded; UNR units' weight words are asked for before any is used.
@compute @workgroup_size(WG)
fn kmv(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x % TPR;
    let grp = lid.x / TPR;
    let n0 = (wid.x * (WG / TPR) + grp) * ROWS;
    if (SHA) {
        for (var i = lid.x; i < NB * 16u; i = i + WG) { aqs[i] = AQ[i]; }
        for (var i = lid.x; i < NB * 8u; i = i + WG) { ads[i] = AD[i]; }
        workgroupBarrier();
    }
    var acc: array<f32, 4>;
    let units = NB * 8u;
    for (var u0 = t; u0 < units; u0 = u0 + TPR * UNR) {
        var hd: array<vec4<u32>, 16>;
        var qw: array<vec4<u32>, 16>;
        for (var x = 0u; x < UNR; x = x + 1u) {
            for (var r = 0u; r < ROWS; r = r + 1u) {
                let u = u0 + x * TPR;
                let wb = (n0 + r) * (NB * 9u) + (u >> 3u) * 9u;
                hd[x * ROWS + r] = B[wb];
                qw[x * ROWS + r] = B[wb + 1u + (u & 7u)];
            }
        }
        for (var x = 0u; x < UNR; x = x + 1u) {
            let u = u0 + x * TPR;
            let blk = u >> 3u;
            let c = u & 7u;
            let j = c >> 1u;
            let h = c & 1u;
            let qa0 = aq_at(blk * 16u + 4u * j + h);
            let qa1 = aq_at(blk * 16u + 4u * j + 2u + h);
            let e0 = ad_at(blk * 8u + 2u * j);
            let e1 = ad_at(blk * 8u + 2u * j + 1u);
            let hm = select(0.0, 1.0, h == 0u);
            for (var r = 0u; r < ROWS; r = r + 1u) {
                acc[r] = acc[r] + unit_sum(hd[x * ROWS + r], qw[x * ROWS + r], qa0, qa1, e0, e1, j, hm);
            }
        }
    }
    for (var r = 0u; r < ROWS; r = r + 1u) {
        let s = subgroupAdd(acc[r]);
        if (t == 0u) { C[n0 + r] = s; }
    }
}

// The same reads as kmv with the arithmetic left out (the words XORed).
@compute @workgroup_size(WG)
fn kread(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x % TPR;
    let grp = lid.x / TPR;
    let n0 = (wid.x * (WG / TPR) + grp) * ROWS;
    var acc = vec4<u32>(0u);
    let units = NB * 8u;
    for (var u0 = t; u0 < units; u0 = u0 + TPR * UNR) {
        for (var x = 0u; x < UNR; x = x + 1u) {
            for (var r = 0u; r < ROWS; r = r + 1u) {
                let u = u0 + x * TPR;
                let wb = (n0 + r) * (NB * 9u) + (u >> 3u) * 9u;
                acc = acc ^ B[wb] ^ B[wb + 1u + (u & 7u)];
            }
        }
    }
    let s = subgroupXor(acc.x ^ acc.y ^ acc.z ^ acc.w);
    if (t == 0u && s == 0x9e3779b9u) { C[n0] = 1.0; }
}

// ---- A rounded in the product's workgroups (kmv4q's round_a), or by a kernel of its own ----
// (half_bits.wgsl and q8_round.wgsl of src/ops/wgsl/common come before this file)

@group(0) @binding(4) var<storage, read> AF: array<vec4<f32>>;        // A as f32
@group(0) @binding(5) var<storage, read_write> AQW: array<vec4<u32>>;  // rnd's outputs (AQ, AD)
@group(0) @binding(6) var<storage, read_write> ADW: array<vec4<f32>>;
override PRE: bool = false;  // kmvr: the first unit's words asked for before rounding
override FAST: bool = false; // kmvr: round_a_fast
var<workgroup> red: array<f32, 768>;

// Values 16 pi .. 16 pi + 15 of A
fn piece(pi: u32) -> array<vec4<f32>, 4> {
    return array<vec4<f32>, 4>(AF[pi * 4u], AF[pi * 4u + 1u], AF[pi * 4u + 2u], AF[pi * 4u + 3u]);
}

// q8_scale as q8_round.wgsl had it before its quick f16 rounding: d through
// f32_to_f16_bits and back for every s (the same values)
fn q8_scale_bits(amax: f32) -> vec2<f32> {
    let s = select(0.0, amax / 127.0, amax >= 7.8886091e-31);
    let id = select(0.0, 1.0 / s, s != 0.0);
    let d16 = bitcast<f32>(f16_to_f32_bits(f32_to_f16_bits(bitcast<u32>(s))));
    return vec2<f32>(select(s, d16, s <= 65504.0), id);
}

// kmv4q's round_a as it was (no norm): pieces of 16 values, two a 32-block,
// trading through workgroup memory, the scale by q8_scale_bits
fn round_a(lid: u32) {
    let np = NB * 16u;
    for (var it = 0u; it < (np + WG - 1u) / WG; it = it + 1u) {
        let i = it * WG + lid;
        let x = piece(min(i, np - 1u));
        let x0 = x[0];
        let x1 = x[1];
        let x2 = x[2];
        let x3 = x[3];
        let m = q8_amax16(x0, x1, x2, x3);
        red[lid] = m;
        workgroupBarrier();
        let sc = q8_scale_bits(max(m, red[lid ^ 1u]));
        let w = q8_pack16(x0, x1, x2, x3, sc.y);
        let qs = q8_sum16(w);
        red[2u * WG + lid] = f32(qs);
        workgroupBarrier();
        if (i < np) {
            aqs[i] = w;
            if ((lid & 1u) == 0u) { ads[i >> 1u] = vec4<f32>(sc.x, sc.x * (f32(qs) + red[2u * WG + lid + 1u]), 0.0, 0.0); }
        }
        workgroupBarrier();
    }
}

// round_a with the two pieces of a block trading their maxima and sums by
// subgroup shuffles (neighbouring lanes): one barrier in all; the scale by
// q8_round.wgsl's q8_scale (its quick f16 rounding). The library's round_a
// and q8_scale now work this way.
fn round_a_fast(lid: u32) {
    let np = NB * 16u;
    for (var it = 0u; it < (np + WG - 1u) / WG; it = it + 1u) {
        let i = it * WG + lid;
        let x = piece(min(i, np - 1u));
        let x0 = x[0];
        let x1 = x[1];
        let x2 = x[2];
        let x3 = x[3];
        let m = q8_amax16(x0, x1, x2, x3);
        let sc = q8_scale(max(m, subgroupShuffleXor(m, 1u)));
        let w = q8_pack16(x0, x1, x2, x3, sc.y);
        let qs = q8_sum16(w);
        let qo = subgroupShuffleXor(qs, 1u);
        if (i < np) {
            aqs[i] = w;
            if ((lid & 1u) == 0u) { ads[i >> 1u] = vec4<f32>(sc.x, sc.x * f32(qs + qo), 0.0, 0.0); }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn rnd(@builtin(local_invocation_id) lid: vec3<u32>) {
    round_a(lid.x);
    for (var i = lid.x; i < NB * 16u; i = i + WG) { AQW[i] = aqs[i]; }
    for (var i = lid.x; i < NB * 8u; i = i + WG) { ADW[i] = ads[i]; }
}

@compute @workgroup_size(WG)
fn kmvr(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x % TPR;
    let grp = lid.x / TPR;
    let n0 = (wid.x * (WG / TPR) + grp) * ROWS;
    var hd0: array<vec4<u32>, 4>;
    var qw0: array<vec4<u32>, 4>;
    if (PRE) {
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let wb = (n0 + r) * (NB * 9u) + (t >> 3u) * 9u;
            hd0[r] = B[wb];
            qw0[r] = B[wb + 1u + (t & 7u)];
        }
    }
    if (FAST) { round_a_fast(lid.x); } else { round_a(lid.x); }
    var acc: array<f32, 4>;
    let units = NB * 8u;
    for (var u = t; u < units; u = u + TPR) {
        let blk = u >> 3u;
        let c = u & 7u;
        let j = c >> 1u;
        let h = c & 1u;
        let qa0 = aqs[blk * 16u + 4u * j + h];
        let qa1 = aqs[blk * 16u + 4u * j + 2u + h];
        let e0 = ads[blk * 8u + 2u * j];
        let e1 = ads[blk * 8u + 2u * j + 1u];
        let hm = select(0.0, 1.0, h == 0u);
        for (var r = 0u; r < ROWS; r = r + 1u) {
            var hdr: vec4<u32>;
            var q: vec4<u32>;
            if (PRE && u == t) {
                hdr = hd0[r];
                q = qw0[r];
            } else {
                let wb = (n0 + r) * (NB * 9u) + blk * 9u;
                hdr = B[wb];
                q = B[wb + 1u + c];
            }
            acc[r] = acc[r] + unit_sum(hdr, q, qa0, qa1, e0, e1, j, hm);
        }
    }
    for (var r = 0u; r < ROWS; r = r + 1u) {
        let s = subgroupAdd(acc[r]);
        if (t == 0u) { C[n0 + r] = s; }
    }
}

// the chain's floor: a dispatch of WG invocations that stores one float
@compute @workgroup_size(WG)
fn empty(@builtin(local_invocation_id) lid: vec3<u32>) {
    if (lid.x == 0u) { C[0] = 1.0; }
}
