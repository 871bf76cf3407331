//#line 1 "tests/wgsl/kernels/incl.wgsl"
// Embedding test: an include next to this file, one from the -I directory
// (also included by local.wgsl: it must appear once), and code after them.
//#line 1 "tests/wgsl/kernels/local.wgsl"
// Included by incl.wgsl and bad_after.wgsl; not a kernel of its own.
//#line 1 "tests/wgsl/common/shared.wgsl"
// Found through the -I directory.
fn shared_value() -> u32 {
    return 21u;
}
//#line 3 "tests/wgsl/kernels/local.wgsl"
fn local_value() -> u32 {
    return shared_value() * 2u;
}
//#line 4 "tests/wgsl/kernels/incl.wgsl"
// #include "shared.wgsl": already included

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
    out[0] = local_value() + shared_value();
}
