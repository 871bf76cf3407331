// Causal grouped-query attention over a KV cache (see src/ops/attention.c).
//
// attn: one workgroup per (block of R query rows of one KV head, split of the
// keys). A query row is a pair (t, g) of a query position and one of the G
// query heads that share the KV head; rows are numbered t * G + g, so the
// rows of a block share every K and V row they read: in decode the block is
// the group of heads, in prefill it also spans positions. Keys go in chunks
// of LC:
//   scores: invocation (key ja, part) dots CPV vec4s of the key row with the
//     R query rows (in workgroup memory, pre-scaled by scale * log2 e); the
//     PARTS partial dots of each key go to workgroup memory;
//   values: invocation (slice, col) takes the keys ja = slice (mod SLICES),
//     KPS of them, and column col (a vec4) of V, keeping per row its own
//     running max m, sum l and accumulator (online softmax in base 2). Keys
//     a row does not see are skipped by index, so masked K or V values never
//     enter its sums.
// Both phases work from registers that were loaded one step ahead: the next
// chunk's K is requested once the current scores are done, its V once the
// current values are, so the memory latency overlaps the other phase.
// At the end the SLICES states of each row are merged in workgroup memory:
// the R rows' maxima and sums at once, then the accumulators row by row.
// Without SPLIT the row's output acc / l goes to y; with SPLIT the state goes
// to the partial buffer (acc [row][split][D], then (m, l) [row][split]) and
// attn_combine merges the splits (flash-decoding).
//
// The running max starts at NEG, a finite stand-in for -inf, so empty states
// never give inf - inf; m is only replaced by a larger score (never by NaN),
// and a NaN or +inf score poisons l and acc, hence the output, as on the CPU.
// K and V are read as vec4 when D % 4 == 0 (ALIGNED), else element by element
// with the lanes past D zeroed; both views are bound (to the same buffers).
// With HALF, K and V are f16 (an f16 KV cache), read through the word views
// k1 / v1: a pair at an even element is one word (unpack2x16float), else
// the halves are taken one by one.

override WG: u32 = 256u;       // invocations per workgroup
override D4: u32 = 32u;        // vec4s per row: ceil(D / 4)
override CPV: u32 = 8u;        // vec4s of a key row per invocation in the score phase (<= CMAX)
override ALIGNED: bool = true; // D % 4 == 0
override SPLIT: bool = false;  // write (m, l, acc) states for attn_combine
override HALF: bool = false;   // K and V are f16 (k1 / v1 hold pairs; never ALIGNED)

override PARTS: u32 = (D4 + CPV - 1u) / CPV;  // invocations per key (score phase)
override LC: u32 = WG / PARTS;                // keys per chunk
override SLICES: u32 = WG / D4;               // key slices (value phase)
override KPS: u32 = (LC + SLICES - 1u) / SLICES;  // keys per invocation (value phase, <= KMAX)

const R: u32 = 4u;          // query rows per workgroup
const CMAX: u32 = 8u;
const KMAX: u32 = 8u;
const NEG: f32 = -3.0e38;   // "no score yet"

struct Params {
    T: u32,
    Hq: u32,
    Hkv: u32,
    G: u32,          // Hq / Hkv
    kv_len: u32,
    D: u32,
    nsplit: u32,
    split_len: u32,  // keys per split, a multiple of LC
    nblocks: u32,    // row blocks per KV head: ceil(T * G / R)
    scale2: f32,     // scale * log2(e)
    ml_off: u32,     // SPLIT: where the (m, l) pairs start in the partial buffer
    oq: u32,         // element offsets of the views (pxl_op_bind): q,
    ok: u32,         // k and v (through k4 / v4 when ALIGNED, else k1 / v1; f16 elements with HALF),
    ov: u32,
    oy: u32,         // y (not SPLIT; the partial buffer starts at 0)
    _pad0: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> k1: array<u32>;   // f32 bits, or f16 pairs (HALF)
@group(0) @binding(4) var<storage, read> v1: array<u32>;
@group(0) @binding(5) var<storage, read_write> dst: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> qs: array<vec4<f32>, R * D4>;
var<workgroup> sp: array<vec4<f32>, WG>;
var<workgroup> ml: array<vec2<f32>, R * SLICES>;
var<workgroup> mrow: array<vec2<f32>, R>;     // each row's merged (M, L)

// Lanes of the vec4 at column d0 .. d0 + 3 that lie inside the row.
fn lanes(d0: u32, D: u32) -> vec4<bool> {
    return vec4<bool>(d0 < D, d0 + 1u < D, d0 + 2u < D, d0 + 3u < D);
}

// HALF: the f16 at element e of a word array whose words are w(e / 2)
fn half_el(w: u32, e: u32) -> f32 {
    let h = unpack2x16float(w);
    return select(h.x, h.y, (e & 1u) != 0u);
}

fn load_k(row: u32, col: u32) -> vec4<f32> {
    if (ALIGNED) { return k4[(p.ok >> 2u) + row * D4 + col]; }
    let e = p.ok + row * p.D + 4u * col;
    var z: vec4<f32>;
    if (HALF) {
        if ((e & 1u) == 0u) {
            z = vec4<f32>(unpack2x16float(k1[e >> 1u]), unpack2x16float(k1[(e >> 1u) + 1u]));
        } else {
            z = vec4<f32>(half_el(k1[e >> 1u], e), half_el(k1[(e + 1u) >> 1u], e + 1u),
                          half_el(k1[(e + 2u) >> 1u], e + 2u), half_el(k1[(e + 3u) >> 1u], e + 3u));
        }
    } else {
        z = vec4<f32>(bitcast<f32>(k1[e]), bitcast<f32>(k1[e + 1u]), bitcast<f32>(k1[e + 2u]),
                      bitcast<f32>(k1[e + 3u]));
    }
    return select(vec4<f32>(0.0), z, lanes(4u * col, p.D));
}

fn load_v(row: u32, col: u32) -> vec4<f32> {
    if (ALIGNED) { return v4[(p.ov >> 2u) + row * D4 + col]; }
    let e = p.ov + row * p.D + 4u * col;
    var z: vec4<f32>;
    if (HALF) {
        if ((e & 1u) == 0u) {
            z = vec4<f32>(unpack2x16float(v1[e >> 1u]), unpack2x16float(v1[(e >> 1u) + 1u]));
        } else {
            z = vec4<f32>(half_el(v1[e >> 1u], e), half_el(v1[(e + 1u) >> 1u], e + 1u),
                          half_el(v1[(e + 2u) >> 1u], e + 2u), half_el(v1[(e + 3u) >> 1u], e + 3u));
        }
    } else {
        z = vec4<f32>(bitcast<f32>(v1[e]), bitcast<f32>(v1[e + 1u]), bitcast<f32>(v1[e + 2u]),
                      bitcast<f32>(v1[e + 3u]));
    }
    return select(vec4<f32>(0.0), z, lanes(4u * col, p.D));
}

// One key into one row's online softmax state.
fn update(s: f32, visible: bool, v: vec4<f32>, m: ptr<function, f32>, l: ptr<function, f32>,
          acc: ptr<function, vec4<f32>>) {
    if (!visible) { return; }
    if (s > *m) {
        let f = exp2(*m - s);
        *l = *l * f;
        *acc = *acc * f;
        *m = s;
    }
    let e = exp2(s - *m);
    *l = *l + e;
    *acc = *acc + e * v;
}

@compute @workgroup_size(WG)
fn attn(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = wid.y * nwg.x + wid.x;
    let split = w % p.nsplit;
    let rest = w / p.nsplit;
    if (rest >= p.nblocks * p.Hkv) { return; }
    let blk = rest % p.nblocks;
    let hkv = rest / p.nblocks;
    let nrows = p.T * p.G;

    // the rows: keys 0 .. lim - 1 are visible (lim = 0: no such row)
    var lim = vec4<u32>(0u);
    for (var r = 0u; r < R; r++) {
        let rr = blk * R + r;
        if (rr < nrows) { lim[r] = p.kv_len - p.T + rr / p.G + 1u; }
    }
    let kmax = max(max(lim.x, lim.y), max(lim.z, lim.w));
    let kbeg = split * p.split_len;
    let kend = min(kbeg + p.split_len, kmax);
    let part = li % PARTS;
    let ja = li / PARTS;
    let slice = li / D4;
    let col = li % D4;

    // the first chunk's K and V, requested before the queries
    var kr: array<vec4<f32>, CMAX>;
    var vr: array<vec4<f32>, KMAX>;
    for (var c = 0u; c < CPV; c++) {
        let j = kbeg + ja;
        let cc = part + c * PARTS;
        if (ja < LC && j < kend && cc < D4) { kr[c] = load_k(j * p.Hkv + hkv, cc); }
    }
    for (var u = 0u; u < KPS; u++) {
        let jj = slice + u * SLICES;
        let j = kbeg + jj;
        if (slice < SLICES && jj < LC && j < kend) { vr[u] = load_v(j * p.Hkv + hkv, col); }
    }

    for (var e = li; e < R * D4; e += WG) {
        let r = e / D4;
        let c = e % D4;
        let rr = blk * R + r;
        var val = vec4<f32>(0.0);
        if (rr < nrows) {
            let base = p.oq + ((rr / p.G) * p.Hq + hkv * p.G + rr % p.G) * p.D + 4u * c;
            let z = vec4<f32>(q[base], q[base + 1u], q[base + 2u], q[base + 3u]);
            val = select(vec4<f32>(0.0), z, lanes(4u * c, p.D)) * p.scale2;
        }
        qs[e] = val;
    }
    workgroupBarrier();

    var m0 = NEG; var m1 = NEG; var m2 = NEG; var m3 = NEG;
    var l0 = 0.0; var l1 = 0.0; var l2 = 0.0; var l3 = 0.0;
    var a0 = vec4<f32>(0.0); var a1 = vec4<f32>(0.0); var a2 = vec4<f32>(0.0); var a3 = vec4<f32>(0.0);

    for (var cs = kbeg; cs < kend; cs += LC) {
        let nx = cs + LC;
        // scores of this chunk from kr, then request the next chunk's K
        var d = vec4<f32>(0.0);
        for (var c = 0u; c < CPV; c++) {
            let cc = min(part + c * PARTS, D4 - 1u);  // past D4: kr[c] is 0
            let kv = kr[c];
            d += vec4<f32>(dot(kv, qs[cc]), dot(kv, qs[D4 + cc]), dot(kv, qs[2u * D4 + cc]),
                           dot(kv, qs[3u * D4 + cc]));
        }
        sp[li] = d;
        for (var c = 0u; c < CPV; c++) {
            let j = nx + ja;
            let cc = part + c * PARTS;
            if (ja < LC && j < kend && cc < D4) { kr[c] = load_k(j * p.Hkv + hkv, cc); }
        }
        workgroupBarrier();
        // values of this chunk from vr, then request the next chunk's V
        if (slice < SLICES) {
            for (var u = 0u; u < KPS; u++) {
                let jj = slice + u * SLICES;
                let jv = cs + jj;
                if (jj < LC && jv < kend) {
                    var s = sp[jj * PARTS];
                    for (var t = 1u; t < PARTS; t++) { s += sp[jj * PARTS + t]; }
                    let v = vr[u];
                    update(s.x, jv < lim.x, v, &m0, &l0, &a0);
                    update(s.y, jv < lim.y, v, &m1, &l1, &a1);
                    update(s.z, jv < lim.z, v, &m2, &l2, &a2);
                    update(s.w, jv < lim.w, v, &m3, &l3, &a3);
                }
            }
        }
        for (var u = 0u; u < KPS; u++) {
            let jj = slice + u * SLICES;
            let j = nx + jj;
            if (slice < SLICES && jj < LC && j < kend) { vr[u] = load_v(j * p.Hkv + hkv, col); }
        }
        workgroupBarrier();
    }

    // merge the slices' states: every row's M and L from its SLICES (m, l)
    // pairs at once, then row by row each slice's accumulator rescaled to M
    // and summed over the slices, column by column
    if (slice < SLICES && col == 0u) {
        ml[slice] = vec2<f32>(m0, l0);
        ml[SLICES + slice] = vec2<f32>(m1, l1);
        ml[2u * SLICES + slice] = vec2<f32>(m2, l2);
        ml[3u * SLICES + slice] = vec2<f32>(m3, l3);
    }
    workgroupBarrier();
    if (li < R) {
        var M = NEG;
        for (var s = 0u; s < SLICES; s++) {
            let x = ml[li * SLICES + s].x;
            if (x > M) { M = x; }
        }
        var L = 0.0;
        for (var s = 0u; s < SLICES; s++) {
            let x = ml[li * SLICES + s];
            L += x.y * exp2(x.x - M);
        }
        mrow[li] = vec2<f32>(M, L);
    }
    workgroupBarrier();
    for (var r = 0u; r < R; r++) {
        let rr = blk * R + r;
        if (rr >= nrows) { break; }
        var mr = m0;
        var ar = a0;
        if (r == 1u) { mr = m1; ar = a1; }
        if (r == 2u) { mr = m2; ar = a2; }
        if (r == 3u) { mr = m3; ar = a3; }
        let ML = mrow[r];
        var mine = vec4<f32>(0.0);
        if (slice < SLICES) { mine = ar * exp2(mr - ML.x); }
        sp[li] = mine;
        workgroupBarrier();
        if (li < D4) {
            var acc = sp[li];
            for (var s = 1u; s < SLICES; s++) { acc += sp[s * D4 + li]; }
            let row_id = (rr / p.G) * p.Hq + hkv * p.G + rr % p.G;
            let d0 = 4u * li;
            if (SPLIT) {
                let st = row_id * p.nsplit + split;
                if (li == 0u) {
                    dst[p.ml_off + 2u * st] = ML.x;
                    dst[p.ml_off + 2u * st + 1u] = ML.y;
                }
                for (var c = 0u; c < 4u; c++) {
                    if (d0 + c < p.D) { dst[st * p.D + d0 + c] = acc[c]; }
                }
            } else {
                for (var c = 0u; c < 4u; c++) {
                    if (d0 + c < p.D) { dst[p.oy + row_id * p.D + d0 + c] = acc[c] / ML.y; }
                }
            }
        }
        workgroupBarrier();
    }
}

// attn_combine: one workgroup per output row merges the row's nsplit states:
// M = max m_s, f_s = exp2(m_s - M), y = sum f_s acc_s / sum f_s l_s.
// Invocation (group sg, column col) sums the splits s = sg (mod WG / D4) of
// its vec4 column; the groups are then summed in workgroup memory.

const NSMAX: u32 = 256u;   // most splits (the host caps nsplit)

struct CParams {
    rows: u32,    // T * Hq
    D: u32,
    nsplit: u32,
    ml_off: u32,
    oy: u32,      // y's element offset (pxl_op_bind)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<storage, read> part_in: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> pc: CParams;

var<workgroup> red: array<f32, WG>;
var<workgroup> fs: array<f32, NSMAX>;
var<workgroup> cacc: array<vec4<f32>, WG>;

@compute @workgroup_size(WG)
fn attn_combine(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = wid.y * nwg.x + wid.x;
    if (row >= pc.rows) { return; }
    let ns = pc.nsplit;
    let mlb = pc.ml_off + 2u * row * ns;
    // M
    var mx = NEG;
    for (var s = li; s < ns; s += WG) {
        let x = part_in[mlb + 2u * s];
        if (x > mx) { mx = x; }
    }
    red[li] = mx;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (li < h && red[li + h] > red[li]) { red[li] = red[li + h]; }
        workgroupBarrier();
    }
    let M = red[0];
    workgroupBarrier();
    // f_s and L
    var lsum = 0.0;
    for (var s = li; s < ns; s += WG) {
        let f = exp2(part_in[mlb + 2u * s] - M);
        fs[s] = f;
        lsum += part_in[mlb + 2u * s + 1u] * f;
    }
    red[li] = lsum;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h /= 2u) {
        if (li < h) { red[li] = red[li] + red[li + h]; }
        workgroupBarrier();
    }
    let L = red[0];
    // the accumulators
    let groups = WG / D4;
    let sg = li / D4;
    let col = li % D4;
    var acc = vec4<f32>(0.0);
    if (sg < groups) {
        for (var s = sg; s < ns; s += groups) {
            let e = (row * ns + s) * pc.D + 4u * col;
            let z = vec4<f32>(part_in[e], part_in[e + 1u], part_in[e + 2u], part_in[e + 3u]);
            acc += fs[s] * select(vec4<f32>(0.0), z, lanes(4u * col, pc.D));
        }
    }
    cacc[li] = acc;
    workgroupBarrier();
    if (li < D4) {
        var t = cacc[li];
        for (var g = 1u; g < groups; g++) { t += cacc[g * D4 + li]; }
        let d0 = 4u * li;
        for (var c = 0u; c < 4u; c++) {
            if (d0 + c < pc.D) { y[pc.oy + row * pc.D + d0 + c] = t[c] / L; }
        }
    }
}
