/*
 * Shared by the op families in src/ops/: the tensor layout, argument checks,
 * and the dispatch helper that records a WGSL kernel into the context stream.
 */
#ifndef PXL_OPS_INTERNAL_H
#define PXL_OPS_INTERNAL_H

#include "../core/internal.h"
#include "pxl/ops.h"
#include "wgsl_ops.h"

/*
 * The memory behind a tensor and its views, freed when the last of them goes.
 * CPU: host memory (owned, or the caller's for pxl_tensor_wrap); GPU: a
 * buffer of at least `bytes`, whose capacity is a multiple of 16.
 */
typedef struct pxl_storage {
    int refs;
    int read_only; /* pxl_tensor_wrap: ops and writes refuse it as an output */
    int owns_host;
    void *host;
    pxl_buffer *buf;
    size_t bytes;
} pxl_storage;

struct pxl_tensor {
    pxl_ctx *ctx;
    pxl_dtype dtype;
    int ndim;
    int64_t shape[PXL_MAX_DIMS];
    int64_t nelem;
    size_t bytes;
    pxl_storage *st;
    size_t offset;   /* bytes into st (views) */
    void *host;      /* CPU context: st->host + offset */
    pxl_buffer *buf; /* GPU context: st->buf (the view starts `offset` bytes in) */
};

/* Row length (last dim) and number of rows. */
static inline int64_t pxl_t_cols(const pxl_tensor *t) { return t->shape[t->ndim - 1]; }
static inline int64_t pxl_t_rows(const pxl_tensor *t) { return t->nelem / pxl_t_cols(t); }
static inline int pxl_on_gpu(const pxl_ctx *ctx) { return pxl_ctx_backend(ctx) == PXL_BACKEND_GPU; }

/*
 * Argument checks, run by every op before it branches on the backend. Each
 * returns PXL_OK or fails with a message naming the op and the operand.
 * A NULL context cannot carry a message: ops return PXL_ERR_INVALID_ARG for
 * it first (PXL_REQUIRE_CTX, core/internal.h).
 */
/* t is not NULL and belongs to ctx. */
pxl_status pxl_check_tensor(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t);
/* pxl_check_tensor, then the dtype. */
pxl_status pxl_check_dtype(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                           pxl_dtype want);
pxl_status pxl_check_same_shape(pxl_ctx *ctx, const char *op, const char *an, const pxl_tensor *a,
                                const char *bn, const pxl_tensor *b);
/* Fails unless t has nelem elements and its last dim is cols. */
pxl_status pxl_check_vec(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *t,
                         int64_t cols);
/* pxl_attention's checks (op names the caller) and its work on checked arguments. */
pxl_status pxl_attention_check(pxl_ctx *ctx, const char *op, const pxl_tensor *q, const pxl_tensor *k,
                               const pxl_tensor *v, const pxl_tensor *y, int64_t kv_len);
pxl_status pxl_attention_run(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v,
                             pxl_tensor *y, int64_t kv_len, float scale);
/* An output: not read-only. */
pxl_status pxl_check_output(pxl_ctx *ctx, const char *op, const char *name, const pxl_tensor *y);
/* Output y against another operand x (an input, or another output): their
 * bytes may not overlap, except that with in_place set y may be exactly x
 * (the same memory and size). */
pxl_status pxl_check_overlap(pxl_ctx *ctx, const char *op, const char *yn, const pxl_tensor *y,
                             const char *xn, const pxl_tensor *x, int in_place);
/* 1 when a and b share memory and their byte ranges overlap. */
int pxl_tensors_overlap(const pxl_tensor *a, const pxl_tensor *b);

/*
 * GPU bindings of an op's tensors. A tensor is bound at its offset rounded
 * down to the device's storage offset alignment (at least 16 bytes), and the
 * rest, off[i], goes to the kernel in its Params: in elements for f32, i32
 * and f16 tensors, in bytes for the quantized dtypes. Every kernel adds it to
 * its indices, so every op takes views.
 * pxl_op_bind also keeps WebGPU's rule that a buffer written by a dispatch
 * has no other use in it (Dawn refuses a read-only and a read-write binding
 * of one buffer even when their ranges are apart): an input that shares a
 * buffer with an output (in place, or views of one tensor) is first copied
 * to scratch memory in the stream and bound from there. Inputs marked in `vec4` are read
 * as vec4<f32> by their kernel, so an input whose offset is not a multiple of
 * 16 bytes is copied the same way (then off[i] is a multiple of 4).
 * Outputs (`writes`) whose bound ranges overlap each other are refused.
 */
#define PXL_OP_MAX_TENSORS 14
typedef struct pxl_op_bindings {
    size_t n;
    pxl_binding b[PXL_OP_MAX_TENSORS];
    uint32_t off[PXL_OP_MAX_TENSORS];
} pxl_op_bindings;
pxl_status pxl_op_bind(pxl_ctx *ctx, const char *op, const pxl_tensor *const *tensors, size_t n,
                       uint32_t writes, uint32_t vec4, pxl_op_bindings *out);
/* The one-row products' bias binding (5, the fifth entry): b with its first
 * binding (A) again there when it has only four, for a kernel whose bias is
 * off (override BIAS) but declared. */
pxl_op_bindings pxl_op_bias_binding(const pxl_op_bindings *b);
/* off[i] that pxl_op_bind gives t when it needs no copy. */
uint32_t pxl_op_offset(pxl_ctx *ctx, const pxl_tensor *t);

/*
 * Records one dispatch into the context's stream: WGSL `wgsl` (named `label`
 * in messages), entry point `entry`, override constants, the bound tensors at
 * bindings 0..n-1 in order, and the uniform block `params` at binding n (if
 * params_size > 0). `groups` is the total number of workgroups; it is laid
 * out as a 2-D grid (x <= the device limit) and the kernel computes the
 * linear id as wid.y * nwg.x + wid.x.
 */
pxl_status pxl_op_dispatch(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                           const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                           const void *params, size_t params_size, uint64_t groups);

/* Same with an explicit 3-D grid (each dim <= the device limit). */
pxl_status pxl_op_dispatch3(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                            const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                            const void *params, size_t params_size, uint32_t gx, uint32_t gy, uint32_t gz);

/* pxl_op_dispatch3 with the uniform block at binding `uniform_binding`
 * instead of b->n (the bindings keep the numbers in b->b[i].binding), for
 * kernels with an operand bound after their uniform block (matmul_fused.c). */
pxl_status pxl_op_dispatch_ub(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                              const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                              uint32_t uniform_binding, const void *params, size_t params_size, uint32_t gx,
                              uint32_t gy, uint32_t gz);

/* Lays out `groups` workgroups as g[0] x g[1] within the device's limit per
 * dimension; fails naming op when even that grid is too small. */
pxl_status pxl_op_grid(pxl_ctx *ctx, const char *op, uint64_t groups, uint32_t g[2]);
/* The lanes that the one-row products kmv4, kmv6 and hmv (wgsl/common/rows_out.wgsl,
 * override SGW), qmv_xs and qmv_pair (wgsl/common/qmv_xs_body.wgsl) sum by
 * subgroup shuffles, for row groups of tpr invocations:
 * min(tpr, S) on a device with subgroups of one fixed size S (a power of two
 * >= 2), unless the tuning option mv_sg=0; else 1, and the kernels' plain
 * builds (kmv4.wgsl, not kmv4_sg.wgsl) run. */
uint32_t pxl_mv_sgw(const pxl_ctx *ctx, const pxl_gpu_info *gi, uint32_t tpr);

/* A product split along K (matmul.wgsl's gemm, kmm8w.wgsl): `split` partial
 * sums of batch x M x N floats each, in that order, in recorder scratch
 * (partials). The functions below are in matmul_quant.c. */
typedef struct {
    pxl_buffer *partials;
    uint32_t split, M, N, batch;
    uint32_t off_c, stride_c; /* C's view: its first float, the floats between batches */
    float alpha, beta;
} pxl_splitk;

/* `split` halved until sk's partial sums fit one binding and gx * split
 * workgroups fit the grid's x dimension (1: no split) */
uint32_t pxl_splitk_fit(const pxl_gpu_info *gi, const pxl_splitk *sk, uint32_t split, uint64_t gx);

/* Recorder scratch for sk's partial sums (sk->partials, owned by rec) and
 * its binding at slot 2, where the split kernels store them. Failure: as
 * pxl_recorder_scratch. */
pxl_status pxl_splitk_scratch(pxl_recorder *rec, pxl_splitk *sk, pxl_binding *b);

/* Records kmm8w.wgsl's kmm8_sum into rec: C (binding c) = alpha * (the
 * splits' sums, in split order) + beta * C. Failure: a grid or pipeline
 * error, set in ctx. */
pxl_status pxl_splitk_sum(pxl_ctx *ctx, pxl_recorder *rec, const pxl_splitk *sk, const pxl_binding *c);

/* The K-quant codecs (kquant.c); n is a multiple of 256, sizes checked by the caller. */
void pxl_q4k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q4k_dequantize(const uint8_t *p, float *y, int64_t n);
void pxl_q6k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q6k_dequantize(const uint8_t *p, float *y, int64_t n);
void pxl_q5k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q5k_dequantize(const uint8_t *p, float *y, int64_t n);
void pxl_q2k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q2k_dequantize(const uint8_t *p, float *y, int64_t n);
void pxl_q3k_quantize(const float *x, int64_t n, uint8_t *o);
void pxl_q3k_dequantize(const uint8_t *p, float *y, int64_t n);
/* The value of xquant.wgsl's override QT for Q5_0, Q4_1, Q5_1, Q5_K, Q2_K, Q3_K (matmul_quant.c). */
double pxl_xquant_type(pxl_dtype t);
/* Q5_0, Q4_1, Q5_1 and bf16 (quant32.c) */
void pxl_qx_quantize(pxl_dtype t, const float *x, int64_t n, uint8_t *o);
void pxl_qx_dequantize(pxl_dtype t, const uint8_t *p, float *y, int64_t n);
uint16_t pxl_f32_to_bf16(float f);
float pxl_bf16_to_f32(uint16_t h);

/*
 * Quantized matrix products (src/ops/matmul_quant.c): pxl_matmul hands over
 * when b is quantized. b: [N, K] (trans_b required), a: f32 [M, K] or
 * [batch, M, K], c: f32 [M, N] or [batch, M, N]; opts already defaulted and
 * shapes not yet checked. CPU and GPU paths, M = 1 (matvec) specialised.
 * opts->bias (checked by pxl_matmul) is added where a kernel stores C with it
 * (qmv_xs, qmv), and then *bias_done is set to 1; else left for pxl_matmul.
 */
pxl_status pxl_matmul_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                            const pxl_matmul_options *opts, int *bias_done);

/*
 * The fused RMSNorm of pxl_matmul_options (src/ops/matmul_fused.c).
 * pxl_matmul_check_norm: the checks of opts->norm and norm_eps against A
 * (f32 with A's K elements, no trans_a) and C (no overlap), the same on
 * every backend; PXL_OK when norm is NULL. pxl_matmul_norm_split: the
 * unfused path, for arguments already checked: pxl_rmsnorm of A into a
 * temporary tensor, then pxl_matmul of it without the norm (and without the
 * bias, which the outer pxl_matmul adds).
 */
pxl_status pxl_matmul_check_norm(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const char *cn,
                                 const pxl_tensor *c, const pxl_matmul_options *o);
/* The most rows of A the quantized matrix-vector kernels take (matmul_quant.c). */
#define PXL_QMV_MAX_NCOL 8
/* Whether pxl_matmul applies the norm inside its kernel for B of dtype b
 * and M rows of A (else pxl_matmul_norm_split): on a GPU, quantized B with
 * up to PXL_QMV_MAX_NCOL rows (the matrix-vector kernels), other B with one
 * row and trans_b (gemv_t). */
int pxl_matmul_norm_fused(pxl_ctx *ctx, pxl_dtype b, int64_t M, int trans_b);
/* pxl_rmsnorm of A by o's norm into a new temporary tensor *an (the caller frees it). */
pxl_status pxl_matmul_norm_temp(pxl_ctx *ctx, const pxl_tensor *a, const pxl_matmul_options *o, pxl_tensor **an);
/*
 * The fused matrix-vector kernels of pxl_matmul_swiglu on a GPU (matmul.c:
 * f32 / f16 / bf16 weights, M = 1; matmul_quant.c: GGUF blocks, M <= 4), for
 * checked arguments: `w` is a tensor spanning both weight matrices in one
 * buffer (its dtype, offset and bytes; shape unused), the gate rows start
 * gate_off bytes into it, the up rows up_off bytes; F rows each.
 */
pxl_status pxl_matmul_swiglu_dense(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w, size_t gate_off,
                                   size_t up_off, int64_t F, pxl_tensor *out, const pxl_matmul_options *o);
pxl_status pxl_matmul_swiglu_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w, size_t gate_off,
                                   size_t up_off, int64_t F, pxl_tensor *out, const pxl_matmul_options *o);
/* The workgroup of rowwise.wgsl's kernels for rows of `cols` values
 * (qa8.wgsl's qa8n takes the same, so that its sums of squares are
 * rmsnorm's). */
uint32_t pxl_rowwise_wg(pxl_ctx *ctx, int64_t cols);

/* pxl_matmul_multi's prompt products on 8-bit A: A rounded once for all of
 * them (matmul_quant.c). *taken stays 0, and nothing is recorded, where a
 * product would not take the tiled 8-bit kernels alone. */
pxl_status pxl_matmul_multi_q8(pxl_ctx *ctx, const pxl_tensor *a, size_t n, const pxl_tensor *const *b,
                               pxl_tensor *const *c, const pxl_matmul_options *o, int *taken);
/* Two products of one row of A (c[i] = A' . b[i]^T + s[i], s NULL or
 * entries NULL: no bias) in one dispatch where a kernel fits (matmul_quant.c:
 * kmv46.wgsl for a Q4_K or Q5_K product with a Q6_K one, qmv_pair.wgsl for
 * two of Q8_0, Q4_0 and Q5_0; the c[i] views of one buffer, and so the s[i]
 * when both are given); *taken 0 and nothing recorded otherwise. Arguments
 * checked by pxl_matmul_multi. */
pxl_status pxl_matmul_pair(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *const *b, pxl_tensor *const *c,
                           const pxl_tensor *const *s, const pxl_matmul_options *o, int *taken);
/* q_check of matmul_quant.c: the shapes of a product with quantized B. */
pxl_status pxl_matmul_quant_check(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, const pxl_tensor *c,
                                  const pxl_matmul_options *o);
/* pxl_matmul's checks of one product, without running it (op names the caller). */
pxl_status pxl_matmul_check(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const pxl_tensor *b,
                            const pxl_tensor *c, const pxl_matmul_options *o);
pxl_status pxl_matmul_norm_split(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                                 const pxl_matmul_options *o);

/*
 * The CPU product C = alpha * A . B^T + beta * C with B stored [N, K] rows
 * (src/ops/matmul_cpu.c): B f32, f16, bf16 or a GGUF block format; A f32
 * [M, K], C f32 [M, N], batches of M x K and N x row_bytes (A or B with
 * batch_a / batch_b 1 is shared). Decodes each B block once per 64 rows of
 * A; AVX2 / FMA / F16C (and AVX-512) kernels where pxl_cpu_simd says so.
 */
typedef struct {
    const float *a;
    const uint8_t *b;
    float *c;
    pxl_dtype dt;
    int64_t batch, batch_a, batch_b, M, N, K;
    size_t row_bytes;
    float alpha, beta;
    /* 1: B multiplies A rounded to 8 bits per 32 values (K a multiple of 32;
     * pxl_matmul_options.a_q8): in integers for Q8_0, Q4_0 and Q5_0, and
     * for Q4_K, Q5_K and Q6_K with M = 1 and AVX2; else A replaced by its
     * rounding and the exact path (matmul_cpu.c). 2: the same where it
     * multiplies in integers, A as given elsewhere */
    int a_q8;
} pxl_cpu_bt;
void pxl_cpu_matmul_bt(pxl_ctx *ctx, const pxl_cpu_bt *p);
/* The x86-64 vector code the CPU ops use: 0 none (plain C: no AVX2, FMA and
 * F16C, or the tuning option cpu_simd=0), 1 AVX2 + FMA + F16C, 2 that and
 * AVX-512 (F, BW, DQ, VL and VNNI; not with cpu_avx512=0). */
int pxl_cpu_simd(const pxl_ctx *ctx);

/* Splits [0, n) into about n_threads * 4 chunks and runs fn(arg, lo, hi) on the pool. */
typedef void (*pxl_range_fn)(void *arg, int64_t lo, int64_t hi);
void pxl_parallel_range(pxl_ctx *ctx, int64_t n, int64_t min_chunk, pxl_range_fn fn, void *arg);

#endif
