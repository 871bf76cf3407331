#include "a.wgsl"
fn b() {}
