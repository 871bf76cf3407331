// Embedding test: the compile error is in the included file (bad_part.wgsl:3).
#include "bad_part.wgsl"

@compute @workgroup_size(1)
fn main() {
    _ = broken();
}
