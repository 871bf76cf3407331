// Element-wise ops over f32 tensors, four elements per invocation through
// vec4 loads and stores. Tensor buffers are padded to 16 bytes, so the last
// vec4 may run past n: its extra lanes read and write only that padding.
// The grid is 2-D (see pxl_op_dispatch): i = (wid.y * nwg.x + wid.x) * WG + lid.x.

override WG: u32 = 256u;

struct Params {
    n4: u32,     // vec4s to process: ceil(n / 4)
    cols: u32,   // row length of b when it broadcasts (0: same shape as a)
    s: f32,      // scale factor (scale)
    form: u32,   // gelu: 0 tanh, 1 erf
}

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> p: Params;

// binary ops bind b at 1 and y at 2
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y2: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p2: Params;

fn index(lid: vec3<u32>, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (wid.y * nwg.x + wid.x) * WG + lid.x;
}

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

@compute @workgroup_size(WG)
fn gelu(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p.n4) { return; }
    let x = a[i];
    if (p.form == 1u) {
        y[i] = 0.5 * x * (1.0 + erf4(x * 0.70710678118654752));
    } else {
        y[i] = 0.5 * x * (1.0 + tanh4(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    }
}

@compute @workgroup_size(WG)
fn silu(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p.n4) { return; }
    y[i] = silu4(a[i]);
}

@compute @workgroup_size(WG)
fn scale(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p.n4) { return; }
    y[i] = p.s * a[i];
}

fn b_scalar(e: u32) -> f32 {
    return b[e >> 2u][e & 3u];
}

// b for the four elements 4i..4i+3: the same vec4, or the broadcast row
fn b_at(i: u32) -> vec4<f32> {
    if (p2.cols == 0u) { return b[i]; }
    if ((p2.cols & 3u) == 0u) { return b[i % (p2.cols >> 2u)]; }
    let e = 4u * i;
    return vec4<f32>(b_scalar(e % p2.cols), b_scalar((e + 1u) % p2.cols),
                     b_scalar((e + 2u) % p2.cols), b_scalar((e + 3u) % p2.cols));
}

@compute @workgroup_size(WG)
fn add(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p2.n4) { return; }
    y2[i] = a[i] + b_at(i);
}

@compute @workgroup_size(WG)
fn mul(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p2.n4) { return; }
    y2[i] = a[i] * b_at(i);
}

@compute @workgroup_size(WG)
fn swiglu(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(lid, wid, nwg);
    if (i >= p2.n4) { return; }
    y2[i] = silu4(a[i]) * b[i];
}
