// The uniform block of quant.wgsl and qmv_xs_io.wgsl: qmm_params of
// src/ops/matmul_quant.c (common/qmm_params.wgsl's layout, with rpg in
// off_u's place). Needs nothing from the including module.

struct Params {
    M: u32, N: u32, K: u32, nb: u32,                          // nb = K / 32
    row_bytes: u32, stride_a: u32, stride_b: u32, stride_c: u32, // A, C in floats; B in bytes
    alpha: f32, beta: f32, rpg: u32, off_a: u32,                 // rpg: rows per row group (qmv_xs); qmv with
                                                                 // SWIGLU: the up weights' byte offset
    off_b: u32, off_c: u32, off_n: u32, eps: f32,    // view offsets: A, C, NW in floats, B in bytes; eps: NORM's
    off_s: u32, n2: u32, off_b2: u32, off_c2: u32,   // the bias row's offset in floats (BIAS); qmv_pair's
                                                     // second product: its rows, B2 in bytes, C in floats
    off_s2: u32, off_u2: u32, pad1: u32, pad2: u32,  // qmv_pair: the second product's bias row (BIAS2);
                                                     // qmv_xs with SWIGLU: the up rows in bytes
}
