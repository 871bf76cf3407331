// Embedding test: an include next to this file, one from the -I directory
// (also included by local.wgsl: it must appear once), and code after them.
#include "local.wgsl"
#include "shared.wgsl"   // already there through local.wgsl

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(1)
fn main() {
    out[0] = local_value() + shared_value();
}
