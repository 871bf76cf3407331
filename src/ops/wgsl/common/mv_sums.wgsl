// What a row group's invocation of the one-row kernels (kmv4_body.wgsl,
// kmv6_sums.wgsl) hands to rows_out.wgsl: its partial sums, one a row of B
// (ROWS <= 8), and its share of the sum of the squares of A (NORM).
// Needs nothing from the including module.

struct MvSums {
    acc: array<f32, 8>,
    ss: f32,
}
