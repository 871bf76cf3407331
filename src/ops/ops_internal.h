/*
 * Shared by the op families in src/ops/: the tensor layout, argument checks,
 * and the dispatch helper that records a WGSL kernel into the context stream.
 */
#ifndef PXL_OPS_INTERNAL_H
#define PXL_OPS_INTERNAL_H

#include "../core/internal.h"
#include "pxl/ops.h"
#include "wgsl_ops.h"

struct pxl_tensor {
    pxl_ctx *ctx;
    pxl_dtype dtype;
    int ndim;
    int64_t shape[PXL_MAX_DIMS];
    int64_t nelem;
    size_t bytes;
    void *host;      /* CPU context */
    pxl_buffer *buf; /* GPU context */
};

/* Row length (last dim) and number of rows. */
static inline int64_t pxl_t_cols(const pxl_tensor *t) { return t->shape[t->ndim - 1]; }
static inline int64_t pxl_t_rows(const pxl_tensor *t) { return t->nelem / pxl_t_cols(t); }
static inline int pxl_on_gpu(const pxl_ctx *ctx) { return pxl_ctx_backend(ctx) == PXL_BACKEND_GPU; }

/* Checks: each returns PXL_OK or fails with a message naming op and operand. */
pxl_status pxl_check_dtype(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                           pxl_dtype want);
pxl_status pxl_check_same_shape(pxl_ctx *ctx, const char *op, const char *an, const pxl_tensor *a,
                                const char *bn, const pxl_tensor *b);
/* Fails unless t has nelem elements and its last dim is cols. */
pxl_status pxl_check_vec(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                         int64_t cols);
/* Fails if a and b share storage. */
pxl_status pxl_check_no_alias(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const pxl_tensor *b);
/* Fails if the tensor belongs to another context. */
pxl_status pxl_check_ctx(pxl_ctx *ctx, const char *op, const pxl_tensor *t);

/*
 * Records one dispatch into the context's stream: WGSL `wgsl` (named `label`
 * in messages), entry point `entry`, override constants, tensors bound at
 * bindings 0..n_tensors-1 in order, and the uniform block `params` at binding
 * n_tensors (if params_size > 0). `groups` is the total number of workgroups;
 * it is laid out as a 2-D grid (x <= 65535) and the kernel computes the
 * linear id as wid.y * nwg.x + wid.x.
 */
pxl_status pxl_op_dispatch(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                           const pxl_constant *constants, size_t n_constants,
                           const pxl_tensor *const *tensors, size_t n_tensors, const void *params,
                           size_t params_size, uint64_t groups);

/* Same with an explicit 3-D grid (each dim <= the device limit). */
pxl_status pxl_op_dispatch3(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                            const pxl_constant *constants, size_t n_constants,
                            const pxl_tensor *const *tensors, size_t n_tensors, const void *params,
                            size_t params_size, uint32_t gx, uint32_t gy, uint32_t gz);

/* Lays out `groups` workgroups as g[0] x g[1] within the device's limit per
 * dimension; fails naming op when even that grid is too small. */
pxl_status pxl_op_grid(pxl_ctx *ctx, const char *op, uint64_t groups, uint32_t g[2]);
/* Fails naming op when t is larger than one storage binding may be. */
pxl_status pxl_op_check_binding(pxl_ctx *ctx, const char *op, const pxl_tensor *t);

/* The K-quant codecs (kquant.c); n is a multiple of 256, sizes checked by the caller. */
void pxl_q4k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q4k_dequantize(const uint8_t *p, float *y, int64_t n);
void pxl_q6k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q6k_dequantize(const uint8_t *p, float *y, int64_t n);

/*
 * Quantized matrix products (src/ops/matmul_quant.c): pxl_matmul hands over
 * when b is quantized. b: [N, K] (trans_b required), a: f32 [M, K] or
 * [batch, M, K], c: f32 [M, N] or [batch, M, N]; opts already defaulted and
 * shapes not yet checked. CPU and GPU paths, M = 1 (matvec) specialised.
 */
pxl_status pxl_matmul_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                            const pxl_matmul_opts *opts);

/* Splits [0, n) into about n_threads * 4 chunks and runs fn(arg, lo, hi) on the pool. */
typedef void (*pxl_range_fn)(void *arg, int64_t lo, int64_t hi);
void pxl_parallel_range(pxl_ctx *ctx, int64_t n, int64_t min_chunk, pxl_range_fn fn, void *arg);

#endif
