// Element-wise ops over f32 tensors: y = f(a, b). The op is the override
// constant OP, so each op compiles to straight-line code. Binary ops bind
// (a, b, y, params) and run ew4 / ew1; unary ops bind (a, y, params) and run
// ew4u / ew1u, one binding fewer for the driver to track per dispatch.
//
// ew4 handles four elements per invocation through vec4 loads and stores. The
// host uses it when every offset is a multiple of four elements and the last
// vec4 of y is y's own (n a multiple of 4, or y ends where its buffer's
// 16-byte padding begins). ew1 handles one element per invocation, for any
// view. The grid is 2-D (see pxl_op_dispatch): i = (wid.y * nwg.x + wid.x) * WG + lid.x.
//
// In place (y is exactly a): binary ops bind (b, y) at 1 and 2 and run ew4i /
// ew1i, unary ops bind y at 1 and run ew4ui / ew1ui; y is read and written
// through its one read_write binding, so a needs no copy (each invocation
// reads its elements before it writes them).

override WG: u32 = 256u;
override OP: u32 = 0u;  // 0 gelu-tanh, 1 gelu-erf, 2 silu, 3 scale, 4 add, 5 mul, 6 swiglu

struct Params {
    n: u32,      // elements
    cols: u32,   // row length of b when it broadcasts over rows of a (0: b has a's shape)
    s: f32,      // scale factor (scale)
    off_a: u32,  // element offsets of the views (pxl_op_bind)
    off_b: u32,
    off_y: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y4: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

@group(0) @binding(0) var<storage, read> a1: array<f32>;
@group(0) @binding(1) var<storage, read> b1: array<f32>;
@group(0) @binding(2) var<storage, read_write> y1: array<f32>;

// unary: y at 1, params at 2 (off_b unused)
@group(0) @binding(1) var<storage, read_write> yu4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> yu1: array<f32>;
@group(0) @binding(2) var<uniform> pu: Params;

// erf with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit)
fn erf4(x: vec4<f32>) -> vec4<f32> {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
    return select(r - 1.0, 1.0 - r, x >= vec4<f32>(0.0));
}

fn tanh4(x: vec4<f32>) -> vec4<f32> {
    // tanh(x) = 1 - 2 / (exp(2x) + 1), the argument clamped so exp cannot overflow; NaN kept
    let c = clamp(x, vec4<f32>(-20.0), vec4<f32>(20.0));
    return select(1.0 - 2.0 / (exp(2.0 * c) + 1.0), x, x != x);
}

fn silu4(x: vec4<f32>) -> vec4<f32> {
    return x / (1.0 + exp(-x));
}

fn f4(x: vec4<f32>, b: vec4<f32>, s: f32) -> vec4<f32> {
    switch OP {
        case 0u: { return 0.5 * x * (1.0 + tanh4(0.79788456080286536 * (x + 0.044715 * x * x * x))); }
        case 1u: { return 0.5 * x * (1.0 + erf4(x * 0.70710678118654752)); }
        case 2u: { return silu4(x); }
        case 3u: { return s * x; }
        case 4u: { return x + b; }
        case 5u: { return x * b; }
        default: { return silu4(x) * b; }
    }
}

fn binary() -> bool { return OP >= 4u; }

fn index(lid: vec3<u32>, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid.x;
}

// element e of b (broadcast: e modulo the row length)
fn b_elem(e: u32) -> f32 {
    let j = select(e, e % p.cols, p.cols != 0u);
    return b1[p.off_b + j];
}

@compute @workgroup_size(WG)
fn ew1(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(lid, wid, nwg);
    if (e >= p.n) { return; }
    var bv = 0.0;
    if (binary()) { bv = b_elem(e); }
    y1[p.off_y + e] = f4(vec4<f32>(a1[p.off_a + e]), vec4<f32>(bv), p.s).x;
}

// element e of a broadcast b, read through the vec4 view (ew4 may not use b1)
fn b_scalar4(e: u32) -> f32 {
    let j = p.off_b + e % p.cols;
    return b4[j >> 2u][j & 3u];
}

// b for the four elements 4i..4i+3: the same vec4, or the broadcast row
fn b_vec(i: u32) -> vec4<f32> {
    let o = p.off_b >> 2u;
    if (p.cols == 0u) { return b4[o + i]; }
    if ((p.cols & 3u) == 0u) { return b4[o + i % (p.cols >> 2u)]; }
    let e = 4u * i;
    return vec4<f32>(b_scalar4(e), b_scalar4(e + 1u), b_scalar4(e + 2u), b_scalar4(e + 3u));
}

@compute @workgroup_size(WG)
fn ew4(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= (p.n + 3u) / 4u) { return; }
    var bv = vec4<f32>(0.0);
    if (binary()) { bv = b_vec(i); }
    y4[(p.off_y >> 2u) + i] = f4(a4[(p.off_a >> 2u) + i], bv, p.s);
}

@compute @workgroup_size(WG)
fn ew1u(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(lid, wid, nwg);
    if (e >= pu.n) { return; }
    yu1[pu.off_y + e] = f4(vec4<f32>(a1[pu.off_a + e]), vec4<f32>(0.0), pu.s).x;
}

@compute @workgroup_size(WG)
fn ew4u(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= (pu.n + 3u) / 4u) { return; }
    yu4[(pu.off_y >> 2u) + i] = f4(a4[(pu.off_a >> 2u) + i], vec4<f32>(0.0), pu.s);
}

@compute @workgroup_size(WG)
fn ew4i(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= (p.n + 3u) / 4u) { return; }
    let o = (p.off_y >> 2u) + i;
    y4[o] = f4(y4[o], b_vec(i), p.s);
}

@compute @workgroup_size(WG)
fn ew1i(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(lid, wid, nwg);
    if (e >= p.n) { return; }
    y1[p.off_y + e] = f4(vec4<f32>(y1[p.off_y + e]), vec4<f32>(b_elem(e)), p.s).x;
}

@compute @workgroup_size(WG)
fn ew4ui(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= (pu.n + 3u) / 4u) { return; }
    let o = (pu.off_y >> 2u) + i;
    yu4[o] = f4(yu4[o], vec4<f32>(0.0), pu.s);
}

@compute @workgroup_size(WG)
fn ew1ui(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = index(lid, wid, nwg);
    if (e >= pu.n) { return; }
    yu1[pu.off_y + e] = f4(vec4<f32>(yu1[pu.off_y + e]), vec4<f32>(0.0), pu.s).x;
}
