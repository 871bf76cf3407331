// Rotary position embedding (see src/ops/rope.c).
//
// One invocation per (row t, head group, pair j of this dispatch's chunk): it
// computes the pair's rotation once and applies it to HG heads. The angle,
// its exact range reduction and the rotation are common/rope_turn.wgsl's
// (shared with rope_kv.wgsl).
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

#include "rope_turn.wgsl"   // turns_per_pos, cos_sin, keep, div_keep, rope_theta, rope_rot

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
    wk.theta = rope_theta(p.hi[a >> 2u][a & 3u], p.lo[b >> 2u][b & 3u], p.fs);
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
        let r = rope_rot(x[p.ox + e.x], x[p.ox + e.y], wk.cs);
        y[p.oy + e.x] = r.x;
        y[p.oy + e.y] = r.y;
    }
}

fn apply_inplace(wk: Work) {
    for (var h = wk.h0; h < wk.h1; h++) {
        let e = pair_at(wk, h) + vec2<u32>(p.oy);
        let r = rope_rot(y[e.x], y[e.y], wk.cs);
        y[e.x] = r.x;
        y[e.y] = r.y;
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
