// Rotary position embedding (see src/ops/rope.c).
//
// One invocation per (row t, head group, pair j of this dispatch's chunk): it
// computes the pair's rotation once and applies it to HG heads. The angle
// pos * theta can reach 10^6 radians and more, where f32 arithmetic alone
// would be off by a good fraction of a radian, so it is reduced exactly in
// integer arithmetic: theta (an exact f32, from the host's tables) times
// 1/(2 pi) (128 bits below) gives the pair's turns per position as a 64-bit
// binary fraction F; pos * F mod 1 gives the angle in turns to 2^-32; the
// nearest quarter turn is split off and the remainder, |x| <= pi/4, goes
// through Taylor polynomials accurate to ~1e-9 (the builtin sin and cos are
// only specified to 2^-11 absolute).
//
// theta' = keep(keep(keep(hi * lo) * fs) / ff[i]) as in rope.c: the
// products are f32 (correctly rounded), the quotient an exact integer long
// division with round-to-nearest-even (div_keep), so both backends get the
// same f32 theta'.
//
// rope reads x (binding 0) and writes y (binding 1); rope_inplace reads and
// writes y, which is bound once, read_write (x is exactly y on the host).
// rope_ff and rope_inplace_ff also read the frequency factors (binding 3).

override WG: u32 = 64u;
const HG: u32 = 4u;                          // heads per invocation
const TWO_PI_OVER_2_32: f32 = 1.4629180792671596e-9;

struct Params {
    pos_offset: i32,  // position of row 0; |pos| < 2^31 for every row
    T: u32,
    H: u32,
    half: u32,        // D / 2
    i0: u32,          // first pair of this dispatch
    cn: u32,          // pairs in this dispatch
    lay: u32,         // 0: pairs (2i, 2i+1); 1: pairs (i, i + D/2)
    nhg: u32,         // head groups: ceil(H / HG)
    lo: array<vec4<f32>, 8>,  // theta of pair i0 + 32a + b = hi[a] * lo[b]
    hi: array<vec4<f32>, 5>,
    ox: u32,          // element offsets of the views x and y (pxl_op_bind)
    oy: u32,
    fs: f32,          // freq_scale
    off_ff: u32,      // element offset of the view ff
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@group(0) @binding(3) var<storage, read> ff: array<f32>;

// 1/(2 pi) = 0.0x28BE60DB9391054A7F09D5F47D4D3770..., most significant word first
const INV2PI = array<u32, 4>(0x28BE60DBu, 0x9391054Au, 0x7F09D5F4u, 0x7D4D3770u);

#include "wide.wgsl"   // mul_wide: the full 64-bit product a * b as (low word, high word)

// Bits [s, s + 32) of the 64-bit value (hi:lo), s < 32.
fn funnel(lo: u32, hi: u32, s: u32) -> u32 {
    if (s == 0u) { return lo; }
    return (lo >> s) | (hi << (32u - s));
}

// theta / (2 pi) mod 1 as a 64-bit binary fraction (low word, high word).
// theta = m * 2^(ex - 150); the fraction is bits [214 - ex, 278 - ex) of
// m * INV2PI * 2^128. Exact but for the truncation of 1/(2 pi) (< 2^-60
// relative to theta < 2^40). Zero, subnormal and non-finite theta give 0.
fn turns_per_pos(theta: f32) -> vec2<u32> {
    let bits = bitcast<u32>(theta);
    let ex = (bits >> 23u) & 0xFFu;
    if (ex == 0u || ex >= 214u) { return vec2<u32>(0u, 0u); }
    let m = (bits & 0x7FFFFFu) | 0x800000u;
    var w: array<u32, 8>;
    var carry = 0u;
    for (var i = 0u; i < 4u; i++) {
        let pr = mul_wide(m, INV2PI[3u - i]);
        let s = pr.x + carry;
        w[i] = s;
        carry = pr.y + select(0u, 1u, s < pr.x);
    }
    w[4] = carry;
    let off = 214u - ex;
    if (off >= 160u) { return vec2<u32>(0u, 0u); }
    let wi = off >> 5u;
    let sh = off & 31u;
    return vec2<u32>(funnel(w[wi], w[wi + 1u], sh), funnel(w[wi + 1u], w[wi + 2u], sh));
}

// theta' outside [2^-126, 2^40) counts as 0 (rope.c).
fn keep(t: f32) -> f32 {
    if (t >= bitcast<f32>(0x00800000u) && t < 1099511627776.0) { return t; }
    return 0.0;
}

// keep(t / f) for t = 0 or in [2^-126, 2^40): the correctly rounded f32
// quotient (ties to even) by long division of the 24-bit significands; an
// exact quotient below 2^-126, or f not a positive normal finite f32, gives 0.
fn div_keep(t: f32, f: f32) -> f32 {
    let bf = bitcast<u32>(f);
    let ef = (bf >> 23u) & 0xFFu;
    if (t == 0.0 || (bf >> 31u) != 0u || ef == 0u || ef == 255u) { return 0.0; }
    let bt = bitcast<u32>(t);
    var mt = (bt & 0x7FFFFFu) | 0x800000u;
    let mf = (bf & 0x7FFFFFu) | 0x800000u;
    var e = i32((bt >> 23u) & 0xFFu) - i32(ef) + 127;
    if (mt < mf) { mt = mt << 1u; e = e - 1; }   // mt / mf in [1, 2)
    if (e <= 0) { return 0.0; }
    var r = mt;
    var q = 0u;
    for (var k = 0u; k < 25u; k++) {            // 24 significant bits and a round bit
        q = q << 1u;
        if (r >= mf) { r = r - mf; q = q | 1u; }
        r = r << 1u;
    }
    var m = q >> 1u;
    if ((q & 1u) != 0u && (r != 0u || (m & 1u) != 0u)) { m = m + 1u; }
    if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }
    if (e >= 167) { return 0.0; }                // >= 2^40
    return bitcast<f32>((u32(e) << 23u) | (m & 0x7FFFFFu));
}

// (cos, sin) of 2 pi * frac(pos * F).
fn cos_sin(f: vec2<u32>, pos: i32) -> vec2<f32> {
    let ap = u32(abs(pos));
    var turns = ap * f.y + mul_wide(ap, f.x).y;  // frac(|pos| * F) to 2^-32
    if (pos < 0) { turns = 0u - turns; }
    let q = (turns + 0x20000000u) >> 30u;         // nearest quarter turn
    let r = bitcast<i32>(turns - (q << 30u));     // in [-2^29, 2^29)
    let a = f32(r) * TWO_PI_OVER_2_32;           // |a| <= pi/4
    let a2 = a * a;
    let s = a + a * a2 * (-1.6666666666666666e-1 + a2 * (8.3333333333333333e-3 +
            a2 * (-1.9841269841269841e-4 + a2 * 2.7557319223985891e-6)));
    let c = 1.0 + a2 * (-0.5 + a2 * (4.1666666666666667e-2 + a2 * (-1.3888888888888889e-3 +
            a2 * (2.4801587301587302e-5 + a2 * -2.7557319223985891e-7))));
    switch (q & 3u) {
        case 0u: { return vec2<f32>(c, s); }
        case 1u: { return vec2<f32>(-s, c); }
        case 2u: { return vec2<f32>(-c, -s); }
        default: { return vec2<f32>(s, -c); }
    }
}

struct Work {
    cs: vec2<f32>,  // cos, sin
    t: u32,
    h0: u32,        // first head
    h1: u32,        // end of heads
    i: u32,         // pair index
    ok: bool,
    theta: f32,     // theta' before the factor
}

// The invocation's row, heads and pair, and theta' up to the factor.
fn locate(id: u32) -> Work {
    var wk: Work;
    let j = id % p.cn;
    let rest = id / p.cn;
    let hg = rest % p.nhg;
    wk.t = rest / p.nhg;
    wk.ok = wk.t < p.T;
    if (!wk.ok) { return wk; }
    let a = j >> 5u;
    let b = j & 31u;
    wk.theta = keep(keep(p.hi[a >> 2u][a & 3u] * p.lo[b >> 2u][b & 3u]) * p.fs);
    wk.h0 = hg * HG;
    wk.h1 = min(wk.h0 + HG, p.H);
    wk.i = p.i0 + j;
    return wk;
}

fn turn(wk_in: Work, theta: f32) -> Work {
    var wk = wk_in;
    wk.cs = cos_sin(turns_per_pos(theta), p.pos_offset + i32(wk.t));
    return wk;
}

// Element offsets of the pair in head h.
fn pair_at(wk: Work, h: u32) -> vec2<u32> {
    let base = (wk.t * p.H + h) * (2u * p.half);
    if (p.lay == 0u) { return vec2<u32>(base + 2u * wk.i, base + 2u * wk.i + 1u); }
    return vec2<u32>(base + wk.i, base + wk.i + p.half);
}

fn apply(wk: Work) {
    for (var h = wk.h0; h < wk.h1; h++) {
        let e = pair_at(wk, h);
        let a = x[p.ox + e.x];
        let b = x[p.ox + e.y];
        y[p.oy + e.x] = a * wk.cs.x - b * wk.cs.y;
        y[p.oy + e.y] = a * wk.cs.y + b * wk.cs.x;
    }
}

fn apply_inplace(wk: Work) {
    for (var h = wk.h0; h < wk.h1; h++) {
        let e = pair_at(wk, h) + vec2<u32>(p.oy);
        let a = y[e.x];
        let b = y[e.y];
        y[e.x] = a * wk.cs.x - b * wk.cs.y;
        y[e.y] = a * wk.cs.y + b * wk.cs.x;
    }
}

@compute @workgroup_size(WG)
fn rope(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let wk = locate((wid.y * nwg.x + wid.x) * WG + li);
    if (!wk.ok) { return; }
    apply(turn(wk, wk.theta));
}

@compute @workgroup_size(WG)
fn rope_inplace(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let wk = locate((wid.y * nwg.x + wid.x) * WG + li);
    if (!wk.ok) { return; }
    apply_inplace(turn(wk, wk.theta));
}

@compute @workgroup_size(WG)
fn rope_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let wk = locate((wid.y * nwg.x + wid.x) * WG + li);
    if (!wk.ok) { return; }
    apply(turn(wk, div_keep(wk.theta, ff[p.off_ff + wk.i])));
}

@compute @workgroup_size(WG)
fn rope_inplace_ff(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
                   @builtin(num_workgroups) nwg: vec3<u32>) {
    let wk = locate((wid.y * nwg.x + wid.x) * WG + li);
    if (!wk.ok) { return; }
    apply_inplace(turn(wk, div_keep(wk.theta, ff[p.off_ff + wk.i])));
}
