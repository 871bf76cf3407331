// Embedding test: the compile error is in this file, after an include.
#include "local.wgsl"

@compute @workgroup_size(1)
fn main() {
    _ = local_value() + no_such_thing_after;
}
