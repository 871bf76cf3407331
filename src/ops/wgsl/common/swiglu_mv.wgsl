// Gate, up and SwiGLU in one matrix-vector kernel (gemv_t in matmul.wgsl, qmv
// in quant.wgsl, kmv in kquant.wgsl, xmv in xquant.wgsl; pxl_matmul_swiglu).
// With the override SWIGLU, a row group's ROWS weight rows are ROWS / 2 rows
// of the gate weights and the same ROWS / 2 rows of the up weights: both lie
// in the one bound weight buffer, at the offsets the host puts in the
// uniforms (the gate at off_b, the up at the module's up offset), so the
// decoders and their memory accesses are those of the plain kernel. The
// epilogue writes silu(g) * u, the formula of elementwise.wgsl's swiglu.
// Needs the override ROWS from the including module.

override SWIGLU: bool = false;

// output rows per row group
fn out_rows() -> u32 { return select(ROWS, ROWS / 2u, SWIGLU); }

// row r of the group's weight rows: the output row it feeds (n0 + r, or
// n0 + r mod ROWS / 2) and whether it is an up row
fn w_out(n0: u32, r: u32) -> u32 { return select(n0 + r, n0 + r % max(ROWS / 2u, 1u), SWIGLU); }
fn w_is_up(r: u32) -> bool { return SWIGLU && r >= ROWS / 2u; }

#include "silu_mul.wgsl"   // silu_mul
