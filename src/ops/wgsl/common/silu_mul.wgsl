// silu(g) * u, the formula of elementwise.wgsl's swiglu: the epilogue of the
// gate, up and SwiGLU matrix-vector kernels (swiglu_mv.wgsl, qmv_xs_body.wgsl).
// Needs nothing from the including module.

fn silu_mul(g: f32, u: f32) -> f32 { return g / (1.0 + exp(-g)) * u; }
