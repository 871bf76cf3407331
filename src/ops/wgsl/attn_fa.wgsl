// Causal grouped-query attention for prompts, in tiles (flash attention in
// f32; host side and contract: src/ops/attention.c, which takes
// attention.wgsl for decode and for what these shapes do not cover).
//
// attn_fa: one workgroup per block of BQ query rows of one KV head. A query
// row is a pair (t, g) of a query position and one of the G query heads that
// share the KV head, numbered t * G + g as in attention.wgsl, so a block's
// rows read the same K and V rows. Blocks go heaviest first (the last
// positions see the most keys). Keys go in chunks of BK, up to the last key
// the block's last row sees; per chunk:
//   1. S = Q K^T, BQ x BK scores: invocation (ty, tx) of a TY x TX grid
//      (TY = BQ / 4, TX = BK / 4; ty = index % TY) owns rows 4 ty .. 4 ty + 3
//      and keys 4 tx .. 4 tx + 3, and reads qt[d][ty] (the block's queries,
//      pre-scaled by scale * log2 e, d-major, a vec4 of 4 rows) and kt[d][tx]
//      (the chunk's keys, d-major, a vec4 of 4 keys) from workgroup memory;
//   2. each row's maximum over the chunk's visible keys: per invocation over
//      its 4 keys, then over the row's TX invocations through workgroup
//      memory (mx); the running max m rises to it, the accumulators and each
//      invocation's part of the running sum l (its own keys' weights) are
//      rescaled by exp2(m_old - m_new), and the scores become weights
//      exp2(s - m_new), stored key-major (pt[j][ty], a vec4 of 4 rows) where
//      the keys were;
//   3. O += P V: invocation (ty, tx) owns the same rows and the vec4 columns
//      tx, tx + TX, ... of D, reading pt and the chunk's values vs[j][c].
// At the end the TX parts of each row's l are added up, and the row's output
// is acc / l. With PRE, K and V pass through registers one phase ahead: a
// chunk's values are requested before its scores, the next chunk's keys
// before this chunk's O += P V, so their latency hides behind arithmetic;
// without it (shapes with more to load per invocation than the registers
// set aside) each is loaded straight into workgroup memory when needed.
// A key a row does not see adds nothing, by index: its weight is 0 and, on
// the chunks that reach past the block's first row's keys (the diagonal),
// its V row is not multiplied; below them every row sees every key. So
// masked or stale K and V values never enter the row's sums, and keys past
// the block's last visible one are not read at all. A NaN score (a NaN in a
// visible K row) is never the maximum but poisons l and the row's output, and
// +inf gives inf - inf = NaN, as on the CPU (the same rule as attention.wgsl).
//
// Workgroup memory, in vec4s: qt D * TY; kt then pt in one region (XS =
// max(D * TX, BK * TY)); mx then vs (and the sums' parts at the end) in
// another (YS = max(BK * D4, TX * TY)). Needs D % 4 == 0 (D4 = D / 4, at
// most 4 TX) and, with HALF (f16 K and V, read as pairs through
// unpack2x16float), even element offsets for K and V.

override WG: u32 = 256u;     // TY * TX invocations
override TY: u32 = 16u;      // BQ / 4
override TX: u32 = 16u;      // BK / 4
override D4: u32 = 16u;      // vec4s a row (D = 4 D4)
override XS: u32 = 1024u;    // vec4s of the kt / pt region
override YS: u32 = 1024u;    // vec4s of the mx / vs region
override HALF: bool = false; // K and V are f16 pairs (k1 / v1)
override KI: u32 = 1u;       // K items (4 keys x one vec4 column) an invocation loads a chunk: ceil(TX D4 / WG)
override VI: u32 = 4u;       // V vec4s an invocation loads a chunk: ceil(BK D4 / WG)
override PRE: bool = true;   // KI <= 2 and VI <= 8: loads through registers one phase ahead (see above)

const NEG: f32 = -3.0e38;    // "no score yet" (finite: NEG - NEG = 0, never inf - inf)

struct Params {
    T: u32,
    Hq: u32,
    Hkv: u32,
    G: u32,          // Hq / Hkv
    kv_len: u32,
    D: u32,
    nblocks: u32,    // row blocks per KV head: ceil(T * G / BQ)
    scale2: f32,     // scale * log2(e)
    oq: u32,         // element offsets of the views: q,
    ok: u32,         // k and v (f32 elements; f16 elements with HALF, even),
    ov: u32,
    oy: u32,         // y
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;  // f32 K (not HALF)
@group(0) @binding(2) var<storage, read> v4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> k1: array<u32>;        // f16 pairs (HALF)
@group(0) @binding(4) var<storage, read> v1: array<u32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> qt: array<vec4<f32>, 4u * D4 * TY>;
var<workgroup> xw: array<vec4<f32>, XS>;   // kt[d * TX + tx], then pt[j * TY + ty]
var<workgroup> yw: array<vec4<f32>, YS>;   // mx[tx * TY + ty], then vs[j * D4 + c]

// K item `it` of the chunk at c0 (4 keys at one vec4 column; 0 past kend or past the items)
fn k_item(it: u32, c0: u32, kend: u32, hkv: u32) -> array<vec4<f32>, 4> {
    var z: array<vec4<f32>, 4>;
    if (it < TX * D4) {
        for (var e = 0u; e < 4u; e++) {
            let j = c0 + 4u * (it % TX) + e;
            if (j < kend) { z[e] = load_kv(false, j * p.Hkv + hkv, it / TX); }
        }
    }
    return z;
}

// stores K item `it` into kt, transposed: d-major vec4s of 4 keys
fn k_store(it: u32, z: array<vec4<f32>, 4>) {
    if (it >= TX * D4) { return; }
    let j4 = it % TX;
    let c = it / TX;
    for (var e = 0u; e < 4u; e++) { xw[(4u * c + e) * TX + j4] = vec4<f32>(z[0][e], z[1][e], z[2][e], z[3][e]); }
}

// V vec4 `it` of the chunk at c0 (row it / D4, column it % D4; 0 past kend)
fn v_item(it: u32, c0: u32, kend: u32, hkv: u32) -> vec4<f32> {
    let j = c0 + it / D4;
    if (it < 4u * TX * D4 && j < kend) { return load_kv(true, j * p.Hkv + hkv, it % D4); }
    return vec4<f32>(0.0);
}

// vec4 c of K or V row `row` (a cache row index times Hkv plus the head)
fn load_kv(isv: bool, row: u32, c: u32) -> vec4<f32> {
    if (HALF) {
        let e = (select(p.ok, p.ov, isv) + row * p.D + 4u * c) >> 1u;
        if (isv) { return vec4<f32>(unpack2x16float(v1[e]), unpack2x16float(v1[e + 1u])); }
        return vec4<f32>(unpack2x16float(k1[e]), unpack2x16float(k1[e + 1u]));
    }
    if (isv) { return v4[(p.ov >> 2u) + row * D4 + c]; }
    return k4[(p.ok >> 2u) + row * D4 + c];
}

// select(m, x, x > m) by lanes: a NaN never wins
fn vmax(m: vec4<f32>, x: vec4<f32>) -> vec4<f32> { return select(m, x, x > m); }

@compute @workgroup_size(WG)
fn attn_fa(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = wid.y * nwg.x + wid.x;
    if (w >= p.nblocks * p.Hkv) { return; }
    let blk = p.nblocks - 1u - w % p.nblocks;   // heaviest first
    let hkv = w / p.nblocks;
    let nrows = p.T * p.G;
    let BQ = 4u * TY;
    let BK = 4u * TX;
    let ty = li % TY;
    let tx = li / TY;
    let r0 = blk * BQ;

    // the block's queries, scaled, into qt (rows past nrows are 0)
    for (var it = li; it < TY * D4; it += WG) {
        let r4 = it % TY;
        let c = it / TY;
        var z: array<vec4<f32>, 4>;
        for (var e = 0u; e < 4u; e++) {
            let rr = r0 + 4u * r4 + e;
            if (rr < nrows) {
                let base = p.oq + ((rr / p.G) * p.Hq + hkv * p.G + rr % p.G) * p.D + 4u * c;
                z[e] = vec4<f32>(q[base], q[base + 1u], q[base + 2u], q[base + 3u]) * p.scale2;
            }
        }
        for (var e = 0u; e < 4u; e++) {
            qt[(4u * c + e) * TY + r4] = vec4<f32>(z[0][e], z[1][e], z[2][e], z[3][e]);
        }
    }

    // this invocation's rows: keys 0 .. lim - 1 are visible (lim 0: no such row)
    var lim = vec4<u32>(0u);
    for (var a = 0u; a < 4u; a++) {
        let rr = r0 + 4u * ty + a;
        if (rr < nrows) { lim[a] = p.kv_len - p.T + rr / p.G + 1u; }
    }
    let kend = p.kv_len - p.T + (min(r0 + BQ, nrows) - 1u) / p.G + 1u;   // the block's last row's lim
    let lim0 = p.kv_len - p.T + r0 / p.G + 1u;   // keys below it are visible to every row of the block

    var m = vec4<f32>(NEG);
    var l = vec4<f32>(0.0);
    var o: array<vec4<f32>, 16>;   // [a * CO + i]: row 4 ty + a, vec4 column tx + TX i
    let CO = (D4 + TX - 1u) / TX;

    // PRE: the first chunk's keys requested now, each next chunk's before this one's O += P V, and each
    // chunk's values before its scores, so that their latency hides behind the arithmetic
    var kp: array<array<vec4<f32>, 4>, 2>;
    var vp: array<vec4<f32>, 8>;
    if (PRE) {
        for (var u = 0u; u < KI; u++) { kp[u] = k_item(li + u * WG, 0u, kend, hkv); }
    }
    for (var c0 = 0u; c0 < kend; c0 += BK) {
        workgroupBarrier();   // (the last chunk's pt and vs are read; qt written, on the first)
        // the chunk's keys into kt, transposed (keys past kend are 0, never read)
        if (PRE) {
            for (var u = 0u; u < KI; u++) { k_store(li + u * WG, kp[u]); }
            for (var u = 0u; u < VI; u++) { vp[u] = v_item(li + u * WG, c0, kend, hkv); }
        } else {
            for (var it = li; it < TX * D4; it += WG) { k_store(it, k_item(it, c0, kend, hkv)); }
        }
        workgroupBarrier();

        // 1. scores: s[a] = row 4 ty + a against keys 4 tx .. 4 tx + 3
        var s0 = vec4<f32>(0.0); var s1 = vec4<f32>(0.0); var s2 = vec4<f32>(0.0); var s3 = vec4<f32>(0.0);
        for (var d = 0u; d < 4u * D4; d++) {
            let qv = qt[d * TY + ty];
            let kv = xw[d * TX + tx];
            s0 = fma(vec4<f32>(qv.x), kv, s0);
            s1 = fma(vec4<f32>(qv.y), kv, s1);
            s2 = fma(vec4<f32>(qv.z), kv, s2);
            s3 = fma(vec4<f32>(qv.w), kv, s3);
        }
        // visibility of (row a, key b): key c0 + 4 tx + b < lim[a]
        let kb = vec4<u32>(c0 + 4u * tx) + vec4<u32>(0u, 1u, 2u, 3u);
        let w0 = kb < vec4<u32>(lim.x);
        let w1 = kb < vec4<u32>(lim.y);
        let w2 = kb < vec4<u32>(lim.z);
        let w3 = kb < vec4<u32>(lim.w);

        // 2. the rows' maxima over the chunk's visible keys
        var ml = vec4<f32>(NEG);
        for (var b = 0u; b < 4u; b++) {
            if (w0[b] && s0[b] > ml.x) { ml.x = s0[b]; }
            if (w1[b] && s1[b] > ml.y) { ml.y = s1[b]; }
            if (w2[b] && s2[b] > ml.z) { ml.z = s2[b]; }
            if (w3[b] && s3[b] > ml.w) { ml.w = s3[b]; }
        }
        yw[tx * TY + ty] = ml;
        workgroupBarrier();
        var mn = m;
        for (var t = 0u; t < TX; t++) { mn = vmax(mn, yw[t * TY + ty]); }
        let f = exp2(m - mn);
        m = mn;
        for (var i = 0u; i < 4u * CO; i++) { o[i] = o[i] * f[i / CO]; }
        let p0 = select(vec4<f32>(0.0), exp2(s0 - vec4<f32>(mn.x)), w0);
        let p1 = select(vec4<f32>(0.0), exp2(s1 - vec4<f32>(mn.y)), w1);
        let p2 = select(vec4<f32>(0.0), exp2(s2 - vec4<f32>(mn.z)), w2);
        let p3 = select(vec4<f32>(0.0), exp2(s3 - vec4<f32>(mn.w)), w3);
        // this invocation's part of the rows' sums (its 4 keys; the row's TX parts are added at the end)
        l = l * f + vec4<f32>((p0.x + p0.y) + (p0.z + p0.w), (p1.x + p1.y) + (p1.z + p1.w),
                              (p2.x + p2.y) + (p2.z + p2.w), (p3.x + p3.y) + (p3.z + p3.w));
        workgroupBarrier();   // (kt and mx are read)
        for (var b = 0u; b < 4u; b++) { xw[(4u * tx + b) * TY + ty] = vec4<f32>(p0[b], p1[b], p2[b], p3[b]); }
        if (PRE) {
            for (var u = 0u; u < VI; u++) {
                let it = li + u * WG;
                if (it < BK * D4) { yw[it] = vp[u]; }
            }
        } else {
            for (var it = li; it < BK * D4; it += WG) { yw[it] = v_item(it, c0, kend, hkv); }
        }
        workgroupBarrier();
        if (PRE && c0 + BK < kend) {
            for (var u = 0u; u < KI; u++) { kp[u] = k_item(li + u * WG, c0 + BK, kend, hkv); }
        }

        // 3. O += P V, each key's V row only where the row sees the key: checked on chunks that
        // reach past the block's first row's keys (the diagonal), not below them
        let kn = min(BK, kend - c0);
        if (c0 + BK <= lim0) {
            for (var j = 0u; j < BK; j++) {
                let pj = xw[j * TY + ty];
                for (var i = 0u; i < CO; i++) {
                    let c = tx + TX * i;
                    if (c < D4) {
                        let vv = yw[j * D4 + c];
                        o[i] = fma(vec4<f32>(pj.x), vv, o[i]);
                        o[CO + i] = fma(vec4<f32>(pj.y), vv, o[CO + i]);
                        o[2u * CO + i] = fma(vec4<f32>(pj.z), vv, o[2u * CO + i]);
                        o[3u * CO + i] = fma(vec4<f32>(pj.w), vv, o[3u * CO + i]);
                    }
                }
            }
            continue;
        }
        for (var j = 0u; j < kn; j++) {
            let pj = xw[j * TY + ty];
            let vis = vec4<u32>(c0 + j) < lim;
            for (var i = 0u; i < CO; i++) {
                let c = tx + TX * i;
                if (c < D4) {
                    let vv = yw[j * D4 + c];
                    if (vis.x) { o[i] = fma(vec4<f32>(pj.x), vv, o[i]); }
                    if (vis.y) { o[CO + i] = fma(vec4<f32>(pj.y), vv, o[CO + i]); }
                    if (vis.z) { o[2u * CO + i] = fma(vec4<f32>(pj.z), vv, o[2u * CO + i]); }
                    if (vis.w) { o[3u * CO + i] = fma(vec4<f32>(pj.w), vv, o[3u * CO + i]); }
                }
            }
        }
    }

    // the rows' sums: the TX parts of each
    workgroupBarrier();
    yw[tx * TY + ty] = l;
    workgroupBarrier();
    var L = vec4<f32>(0.0);
    for (var t = 0u; t < TX; t++) { L = L + yw[t * TY + ty]; }

    for (var a = 0u; a < 4u; a++) {
        let rr = r0 + 4u * ty + a;
        if (rr >= nrows) { break; }
        let base = p.oy + ((rr / p.G) * p.Hq + hkv * p.G + rr % p.G) * p.D;
        for (var i = 0u; i < CO; i++) {
            let c = tx + TX * i;
            if (c < D4) {
                let r = o[a * CO + i] / L[a];
                y[base + 4u * c] = r.x;
                y[base + 4u * c + 1u] = r.y;
                y[base + 4u * c + 2u] = r.z;
                y[base + 4u * c + 3u] = r.w;
            }
        }
    }
}
