// The smallest useful kernel, for `pxl bench ops`' record_* cases: y = s * x
// over n floats, with its parameters in a uniform block as every op has. It
// measures what recording one dispatch costs below the op layer.
struct Params {
    n: u32,
    s: f32,
    pad0: u32,
    pad1: u32,
};

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) {
        y[gid.x] = p.s * x[gid.x];
    }
}
