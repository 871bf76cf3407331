// pxVM GPU interpreter: self-test of rq (tests only). Compiled after vm.wgsl (the common part);
// see there for the conventions.

// ---- self-test of rq --------------------------------------------------------------

@group(0) @binding(0) var<storage, read> rq_in: array<vec4<i32>>;  // acc, mult, shift, dtype
@group(0) @binding(1) var<storage, read_write> rq_res: array<i32>;

@compute @workgroup_size(64)
fn rq_test(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&rq_res)) { return; }
    let v = rq_in[gid.x];
    rq_res[gid.x] = rq(v.x, v.y, u32(v.z), u32(v.w));
}
