// The uniform block of the quantized matrix products kquant.wgsl,
// xquant.wgsl, kmv4.wgsl and kmv6.wgsl: qmm_params in
// src/ops/matmul_quant.c (quant.wgsl has the same layout, with rpg in
// off_u's place). Needs nothing from the including module.

struct Params {
    M: u32, N: u32, K: u32, nb: u32,                          // nb = K / block
    row_bytes: u32, stride_a: u32, stride_b: u32, stride_c: u32, // A, C in floats; B in bytes
    alpha: f32, beta: f32, off_u: u32, off_a: u32,               // off_u: the up weights (SWIGLU)
    off_b: u32, off_c: u32, off_n: u32, eps: f32,    // view offsets: A, C, NW in floats, B in bytes; eps: NORM's
    off_s: u32, n2: u32, off_b2: u32, off_c2: u32,   // the bias row's offset in floats (kmv4, kmv6: BIAS);
                                                     // kmv46's second product: its rows, B in bytes, C in floats
    off_s2: u32, off_u2: u32, pad1: u32, pad2: u32,  // kmv46: the second product's bias row (BIAS2);
                                                     // off_u2: quant.wgsl's (qmv_xs with SWIGLU)
}
