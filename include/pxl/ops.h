/*
 * pxl/ops.h: the kernel library. Every op has a CPU reference and a WGSL
 * path; the plain entry points pick the path from the context's backend.
 *
 * Host-memory entry points (pxl_dot) copy data to the GPU and back when the
 * backend is GPU. *_record entry points take GPU buffers and record into a
 * pxl_recorder, so that chains of ops run in one submit.
 */
#ifndef PXL_OPS_H
#define PXL_OPS_H

#include "pxl/core.h"
#include "pxl/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Dot product of two f32 vectors of any length n (n = 0 gives 0).
 * CPU: products are exact in f64 and summed in f64 over fixed 64 Ki-element
 * blocks, so the result is deterministic for any thread count and correctly
 * rounded for all practical n. GPU: f32 partial sums per invocation, tree
 * reduction per workgroup, then a second pass over the partials; the relative
 * error is bounded by about (n / invocations + log2 n) * 2^-24 * sum|a_i b_i|.
 * NaN and Inf propagate as IEEE arithmetic says (Inf * 0 and Inf - Inf are NaN).
 */
pxl_status pxl_dot(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out);
/* The CPU reference, whatever the backend. */
pxl_status pxl_dot_cpu(pxl_ctx *ctx, const float *a, const float *b, size_t n, float *out);
/*
 * Records a · b (first n floats of each buffer) into element out_index of
 * `out`. Vectors longer than the device's max storage binding are processed
 * in chunks.
 */
pxl_status pxl_dot_record(pxl_recorder *rec, pxl_buffer *a, pxl_buffer *b, size_t n,
                          pxl_buffer *out, size_t out_index);

#ifdef __cplusplus
}
#endif
#endif
