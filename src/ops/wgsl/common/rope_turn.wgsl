// The rotation of rotary position embedding, shared by rope.wgsl (pxl_rope,
// pxl_rope_ext) and rope_kv.wgsl (pxl_rope_kv), so that both turn a pair by
// the same f32 arithmetic (src/ops/rope.c says why it is exact):
//
//   rope_theta(hi, lo, fs)  theta' before the factor: keep(keep(hi * lo) * fs)
//   div_keep(t, f)          theta' / factor, correctly rounded (or 0)
//   cos_sin(turns_per_pos(theta), pos)   (cos, sin) of pos * theta, reduced exactly
//   rope_rot(a, b, cs)      the pair (a, b) turned: (a c - b s, a s + b c)
//
// The angle pos * theta can reach 10^6 radians and more, where f32
// arithmetic alone would be off by a good fraction of a radian, so it is
// reduced exactly in integer arithmetic: theta (an exact f32, from the host's
// tables) times 1/(2 pi) (128 bits below) gives the pair's turns per position
// as a 64-bit binary fraction F; pos * F mod 1 gives the angle in turns to
// 2^-32; the nearest quarter turn is split off and the remainder,
// |x| <= pi/4, goes through Taylor polynomials accurate to ~1e-9 (the builtin
// sin and cos are only specified to 2^-11 absolute).
// Needs nothing from the including module (it includes wide.wgsl).

#include "wide.wgsl"   // mul_wide: the full 64-bit product a * b as (low word, high word)

const TWO_PI_OVER_2_32: f32 = 1.4629180792671596e-9;

// 1/(2 pi) = 0.0x28BE60DB9391054A7F09D5F47D4D3770..., most significant word first
const INV2PI = array<u32, 4>(0x28BE60DBu, 0x9391054Au, 0x7F09D5F4u, 0x7D4D3770u);

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

// theta' up to the factor: the host's tables give theta = hi * lo (rope.c),
// then freq_scale fs, each product the correctly rounded f32 one.
fn rope_theta(hi: f32, lo: f32, fs: f32) -> f32 {
    return keep(keep(hi * lo) * fs);
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

// The pair (a, b) turned by the angle whose (cos, sin) is cs.
fn rope_rot(a: f32, b: f32, cs: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a * cs.x - b * cs.y, a * cs.y + b * cs.x);
}
