// What qmv_xs_kernel.wgsl and qmv_pair_kernel.wgsl share around
// qmv_xs_body.wgsl: the bindings A (0, rows of vec4), B (1, the weights as
// u32 words), C (2), the uniform block p (3, quant_params.wgsl) and the
// bias rows BS (5; without a bias the host binds A there, unread), and the
// norm's and the blocks' includes (norm_mv.wgsl: binding 4; q_elems.wgsl).
// Needs the override WG from the including module.

#include "quant_params.wgsl"   // Params: qmm_params of src/ops/matmul_quant.c

@group(0) @binding(0) var<storage, read> A: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> B: array<u32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> BS: array<f32>;

const NCOL: u32 = 1u;                   // norm_mv.wgsl: one row of A
var<workgroup> red: array<f32, WG>;     // norm_mv.wgsl's norm_inv (not called here)

#include "norm_mv.wgsl"   // NORM, NW, nscale
#include "q_elems.wgsl"
