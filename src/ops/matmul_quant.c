/*
 * Quantized matrix products: C = alpha * A . B^T + beta * C with B a GGUF
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K weight matrix [N, K] (or
 * [batch, N, K]), A f32 [M, K] or [batch, M, K], C f32 [M, N] or
 * [batch, M, N]. pxl_matmul hands over here when B is quantized.
 *
 * CPU (matmul_cpu.c): each block of B decoded once to f32 per 64 rows of A,
 * tiles of 16 B rows per task, f32 sums over 256-element chunks added in
 * double, AVX2 / FMA kernels on x86-64 where the CPU has them.
 *
 * GPU (wgsl/qmv_xs.wgsl, wgsl/quant.wgsl): M = 1 uses qmv_xs (qmv_xs_sg.wgsl
 * on devices with subgroups), which keeps the A vector in registers and
 * streams B (K from 512 to 16384, or 32768 where workgroups of 512 are
 * allowed; 4096-wide weights stream at about 3.1 TB/s in Q8_0 and 2.1 TB/s
 * in Q4_0 on an H200, on 8-bit A); M <= 8, and M = 1 outside that K range, use
 * qmv, which streams B once for all M rows of A; M > 8 uses qmm, a 64x64-tiled
 * kernel that decodes B tiles into workgroup memory. Launch shapes are
 * override constants, chosen below and open to tuning through environment
 * variables (benchmarks only). The K-quants have their own two kernels in
 * wgsl/kquant.wgsl: kmv (M <= 8) and kmm (M > 8); Q4_1, Q5_0, Q5_1, Q5_K,
 * Q2_K and Q3_K theirs in wgsl/xquant.wgsl: xmv (M <= 8) and xmm (M > 8).
 * The matrix-vector kernels take the fusions of matmul_fused.c as override
 * constants: NORM (the RMSNorm of A, in qmv_xs, qmv, kmv, xmv) and SWIGLU
 * (gate and up rows of one weight buffer, in qmv, kmv, xmv). */
#include "ops_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The uniform block of quant.wgsl, qmv_xs.wgsl and qmv_pair.wgsl (common/quant_params.wgsl)
 * and of the kernels that include common/qmm_params.wgsl (kquant, xquant,
 * kmv4, kmv6, kmv46, kmm8, kmm8w). */
typedef struct {
    uint32_t M, N, K, nb;                             /* nb = K / 32 */
    uint32_t row_bytes, stride_a, stride_b, stride_c; /* a, c in floats; b in bytes (0: broadcast) */
    float alpha, beta;
    uint32_t rpg;          /* rows per row group (qmv_xs) */
    uint32_t off_a, off_b, off_c, off_n; /* view offsets: a, c, the norm in floats, b in bytes */
    float eps;                            /* the fused RMSNorm's (NORM) */
    uint32_t off_s;                       /* the bias row's offset in floats (quant.wgsl's BIAS) */
    uint32_t n2, off_b2, off_c2;          /* a pair's second product (kmv46, qmv_pair): its rows, B in bytes, C in floats */
    uint32_t off_s2;                      /* and its bias row's offset in floats (BIAS2) */
    uint32_t off_u2, pad[2];              /* qmv_xs with SWIGLU: the up rows' byte offset (rpg: its rows) */
} qmm_params;
_Static_assert(sizeof(qmm_params) == 96, "mirrors common/quant_params.wgsl and common/qmm_params.wgsl");

typedef struct {
    int64_t batch, batch_a, batch_b, M, N, K;
    size_t row_bytes; /* bytes of one B row */
} q_shape;

static const char *OP = "pxl_matmul";

/* ---- argument checks ------------------------------------------------------- */

static pxl_status q_check(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, const pxl_tensor *c,
                          const pxl_matmul_options *o, q_shape *s) {
    /* pxl_matmul checked that a, b, c are tensors of ctx, a and c f32, c a
     * writable output apart from a and b */
    if (!pxl_dtype_is_quantized(b->dtype))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: B is %s, expected a GGUF block format", OP,
                        pxl_dtype_name(b->dtype));
    if (!o->trans_b)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: quantized B (%s) is stored [N, K]: trans_b must be set", OP,
                        pxl_dtype_name(b->dtype));
    if (o->trans_a)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: trans_a with a quantized B (%s) is not supported", OP,
                        pxl_dtype_name(b->dtype));
    if (a->ndim > 3 || b->ndim > 3 || c->ndim > 3)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: operands have at most 3 dimensions ([batch,] rows, cols)", OP);
    int64_t ar = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, ac = a->shape[a->ndim - 1];
    int64_t br = b->ndim >= 2 ? b->shape[b->ndim - 2] : 1, bc = b->shape[b->ndim - 1];
    int64_t cr = c->ndim >= 2 ? c->shape[c->ndim - 2] : 1, cc = c->shape[c->ndim - 1];
    int64_t ab = a->ndim == 3 ? a->shape[0] : 1, bb = b->ndim == 3 ? b->shape[0] : 1;
    int64_t cb = c->ndim == 3 ? c->shape[0] : 1;
    s->M = ar;
    s->K = ac;
    s->N = br;
    if (bc != s->K)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: A has K=%lld but B (%s, [N, K]) has K=%lld", OP,
                        (long long)s->K, pxl_dtype_name(b->dtype), (long long)bc);
    if (cr != s->M || cc != s->N)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: C is %lldx%lld, expected %lldx%lld", OP, (long long)cr,
                        (long long)cc, (long long)s->M, (long long)s->N);
    if ((ab != 1 && ab != cb) || (bb != 1 && bb != cb))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: batch sizes A=%lld B=%lld C=%lld (A and B must match C or be 1)", OP,
                        (long long)ab, (long long)bb, (long long)cb);
    s->batch = cb;
    s->batch_a = ab;
    s->batch_b = bb;
    s->row_bytes = pxl_dtype_row_bytes(b->dtype, s->K); /* nonzero: K is a multiple of the block since B exists */
    return PXL_OK;
}

/* ---- CPU ------------------------------------------------------------------------ */

static pxl_status q_cpu(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c, const q_shape *s,
                        const pxl_matmul_options *o) {
    pxl_cpu_bt p = {a->host, b->host, c->host, b->dtype, s->batch, s->batch_a, s->batch_b, s->M, s->N, s->K,
                    s->row_bytes, o->alpha, o->beta, o->a_q8};
    pxl_cpu_matmul_bt(ctx, &p);
    return PXL_OK;
}

/* ---- GPU ------------------------------------------------------------------------- */

/* qmv launch shape: WG invocations per workgroup, TPR invocations per row
 * group (4 per block, so TPR / 4 blocks side by side), ROWS rows per row group
 * (a workgroup computes WG / TPR * ROWS rows of C), UNROLL blocks per
 * invocation whose loads are issued together. The tuning option qmv=wg,tpr,rows,unroll
 * overrides it, for tuning benchmarks only. M in 2..8 (NCOL = M) uses
 * fewer rows and a shorter unroll (its registers hold NCOL sums per row).
 * Rows of fewer than TPR / 4 * UNROLL blocks (K < 1024 with one row of A,
 * K < 512 with more) take a row group just wide enough for them (TPR the
 * power of two >= 4 nb, at least 4), the unroll that covers the row in one
 * step, and eight row groups a workgroup: the idle lanes and the longer
 * reduction of the full shape cost more than the row's own loads there. On
 * an H100, tiny5 (K = 64: nb = 2, so WG 64, TPR 8, UNROLL 1) decoded 4,433
 * and 4,603 tok/s against 3,486 and 3,575 with the full shape, in one call
 * (`pxl bench llm --pp 0 --tg 128 --tune qmv=64,8,2,1`; docs/BENCHMARKS.md,
 * "Short rows in the one-row products"). */
#define QMV_WG 256u
#define QMV_TPR 32u
#define QMV_ROWS 2u
#define QMV_UNROLL 4u
#define QMV_MAX_NCOL PXL_QMV_MAX_NCOL

/* Q8_0, Q4_0 and Q5_0: 32-element blocks of 8 or 4 (5) bits and one f16 scale (quant.wgsl's formats) */
static int legacy_q(pxl_dtype dt) { return dt == PXL_Q8_0 || dt == PXL_Q4_0 || dt == PXL_Q5_0; }

/* Whether wgsl/quant.wgsl (and qmv_xs.wgsl) takes B of dtype dt with M
 * rows of A: Q8_0 and Q4_0 at any M (qmv_xs, qmv, qmm), Q5_0 (override Q5) in the
 * matrix-vector kernels only (M <= QMV_MAX_NCOL; its prompts take xmm). */
static int quant_takes(pxl_dtype dt, int64_t M) {
    return legacy_q(dt) && (dt != PXL_Q5_0 || M <= QMV_MAX_NCOL);
}

typedef struct {
    uint32_t wg, tpr, rows, unroll, ncol;
} qmv_launch;

/* The context's tuning option qmv=wg,tpr,rows,unroll overrides the defaults
 * (range-checked when the context was created). */
static qmv_launch qmv_shape(const pxl_tuning *t, const pxl_gpu_info *gi, uint32_t ncol, int64_t nb) {
    qmv_launch l = {QMV_WG, QMV_TPR, ncol > 1 ? 1u : QMV_ROWS, ncol > 1 ? 2u : QMV_UNROLL, ncol};
    if (nb > 0 && (uint64_t)nb * 4 < (uint64_t)l.tpr * l.unroll) { /* short rows */
        uint32_t tpr = 4;
        while (tpr < QMV_TPR && tpr < 4 * (uint64_t)nb) tpr *= 2;
        uint32_t unroll = (uint32_t)((4 * (uint64_t)nb + tpr - 1) / tpr);
        l.tpr = tpr;
        l.unroll = unroll < l.unroll ? unroll : l.unroll;
        l.wg = 8 * tpr < QMV_WG ? 8 * tpr : QMV_WG;
    }
    if (t->qmv_n == 4) {
        l.wg = t->qmv[0];
        l.tpr = t->qmv[1];
        l.rows = t->qmv[2];
        l.unroll = t->qmv[3];
    }
    while (l.rows * l.ncol > 32) l.rows /= 2;
    /* the reduction's workgroup memory: WG * ROWS * NCOL floats */
    uint32_t max_wg = gi->max_invocations_per_workgroup;
    while (l.wg > 4 && (l.wg > max_wg || (uint64_t)l.wg * l.rows * l.ncol * 4 > gi->max_workgroup_storage_size))
        l.wg /= 2;
    if (l.tpr > l.wg) l.tpr = l.wg;
    return l;
}

/* qmv_xs launch shape (M = 1, 32 <= 2 * nb <= 4 * WG): WG invocations; XT
 * invocations per row group (WG, or the power of two >= 2 * nb when a row
 * has fewer half blocks); XKCH = ceil(2 * nb / XT) half blocks per invocation;
 * XRB rows per step (XRB * XKCH <= 16, and what workgroup memory holds);
 * `steps` steps per row group. Defaults, from an H100 (Vulkan) sweep: WG 256
 * and steps of 8 rows; rows of more than 256 half blocks (K > 4096) take
 * WG 512 (XKCH <= 2) where the device allows. Two steps a row group where
 * that still makes XS_WIDE_GROUPS workgroups for the product's N rows (with
 * SwiGLU, N outputs of two rows each), else one: H200, 2026-11-28, Q8_0 on
 * 8-bit A (pxl bench ops), two steps against one: 4096 x 14336 (896
 * workgroups) 20.64 us against 21.14, Q4_0 16.00 against 17.50, Q5_0 20.09
 * against 22.42, 896 x 151,936 41.88 against 43.60; but 8192 x 2048 (128
 * workgroups) 10.31 against 9.84 and 4864 x 896 (56) 7.90 against 6.30, and
 * two steps for every product cost Llama-3.2-1B Q8_0 and Qwen2.5-0.5B
 * decode 10-20%. Rows of 32 to 63
 * half blocks (K 512 to 1023) run here too since 2026-11-27: on an H200,
 * Q8_0 896 x 151,936 (Qwen2.5-0.5B's logits) 58.6 and 59.1 us against 77.8
 * and 78.2 for qmv, Qwen2.5-0.5B Q8_0 greedy decoding 776 and 784 tok/s
 * against 766 and 768.
 * The context's tuning option qmv_xs=wg,xrb,steps overrides them, for tuning
 * benchmarks only. sgw > 1 (pxl_mv_sgw: subgroups of one size) takes the _sg
 * builds, whose sums go through subgroup shuffles: on an H200 (2026-11-29,
 * pxl bench ops, against the build without them in the same call) Q8_0
 * 4096 x 14336 took 19.98 us against 20.22, 8192 x 2048 9.25 against 9.66,
 * Q5_0 4096 x 14336 19.52 against 20.06, and Llama-3.2-1B Q8_0 decoded
 * (greedy) at 1,202 tok/s against 1,169 and 1,180. */
typedef struct {
    uint32_t wg, xt, kch, rb, steps;
    uint32_t sgw; /* lanes summed by shuffles (override SGW; 1: the plain builds) */
} xs_launch;

static uint32_t pow2_ceil(uint64_t v) {
    uint32_t r = 1;
    while (r < v) r *= 2;
    return r;
}

#define XS_WIDE_GROUPS 512u

/* 0 if qmv_xs does not apply to rows of nb blocks on this device; n: the
 * product's rows (outputs with SwiGLU, two rows each) */
static int xs_shape(const pxl_ctx *ctx, const pxl_gpu_info *gi, int64_t nb, int64_t n, int swiglu, xs_launch *l) {
    const pxl_tuning *t = pxl_ctx_tuning(ctx);
    uint64_t nh = 2 * (uint64_t)nb;
    int long_rows = nh > 256 && gi->max_invocations_per_workgroup >= 512;
    l->wg = long_rows ? 512u : 256u;
    l->rb = 8;
    l->steps = 1;
    if (t->qmv_xs_n == 3) {
        l->wg = t->qmv_xs[0];
        l->rb = t->qmv_xs[1];
        l->steps = t->qmv_xs[2];
    }
    while (l->wg > gi->max_invocations_per_workgroup) l->wg /= 2;
    if (nh < 32 || nh > 4 * (uint64_t)l->wg) return 0;
    l->xt = nh >= l->wg ? l->wg : pow2_ceil(nh);
    l->kch = (uint32_t)((nh + l->xt - 1) / l->xt);
    l->sgw = pxl_mv_sgw(ctx, gi, l->xt);
    while (l->rb * l->kch > 16) l->rb /= 2;
    while (l->rb > 1 && 4 * ((uint64_t)(l->wg / l->xt) * l->rb * (l->xt + 1) + l->wg) > gi->max_workgroup_storage_size)
        l->rb /= 2;
    if (t->qmv_xs_n != 3) { /* two steps where the product still makes XS_WIDE_GROUPS workgroups */
        uint64_t per2 = (uint64_t)(l->wg / l->xt) * l->rb * 2 / (swiglu ? 2u : 1u);
        if (((uint64_t)n + per2 - 1) / per2 >= XS_WIDE_GROUPS) l->steps = 2;
    }
    return 4 * ((uint64_t)(l->wg / l->xt) * l->rb * (l->xt + 1) + l->wg) <= gi->max_workgroup_storage_size;
}

/* A 2-D grid of workgroups that each compute per_wg of the N output columns. */
static pxl_status rows_grid(pxl_ctx *ctx, const q_shape *s, uint64_t per_wg, uint32_t g[2]) {
    return pxl_op_grid(ctx, OP, ((uint64_t)s->N + per_wg - 1) / per_wg, g);
}

/* Whether qmv_xs and qmv_pair round A to 8 bits (override Q8A): where a_q8
 * asks, unless the tuning option qmv_q8=0 turns it off (measurements). */
static int xs_q8(const pxl_tuning *t, const pxl_matmul_options *o) { return o->a_q8 && !t->qmv_q8_off; }

/* One dispatch of qmv_xs (qmv_xs.wgsl, or qmv_xs_sg.wgsl; M = 1, batches along z) in launch
 * shape xl for B of dtype dt: p->rpg set to the row groups' rows; with
 * swiglu, gate and up rows (half as many outputs a workgroup), else with
 * bias (override BIAS); a_q8: A rounded to 8 bits (override Q8A, xs_q8).
 * bd binds A, B, C and the norm; the bias binding (5) is bd's fifth, or A
 * again. */
static pxl_status xs_dispatch(pxl_ctx *ctx, const xs_launch *xl, pxl_dtype dt, const q_shape *s, qmm_params *p,
                              const pxl_op_bindings *bd, double norm, int swiglu, int bias, int a_q8) {
    p->rpg = xl->rb * xl->steps;
    uint32_t g[2] = {0, 0};
    pxl_status st = rows_grid(ctx, s, (uint64_t)(xl->wg / xl->xt) * p->rpg / (swiglu ? 2u : 1u), g);
    if (st != PXL_OK) return st;
    pxl_op_bindings b5 = pxl_op_bias_binding(bd);
    pxl_constant k[11] = {{"WG", xl->wg},       {"XT", xl->xt},          {"XKCH", xl->kch},
                          {"XRB", xl->rb},       {"Q4", dt != PXL_Q8_0}, {"Q5", dt == PXL_Q5_0},
                          {"NORM", norm},        {"BIAS", bias != 0},     {"SWIGLU", swiglu != 0},
                          {"Q8A", a_q8 != 0},    {"SGW", xl->sgw}};
    int sg = xl->sgw > 1;
    return pxl_op_dispatch_ub(ctx, sg ? "qmv_xs_sg.wgsl" : "qmv_xs.wgsl",
                              sg ? pxl_wgsl_ops_qmv_xs_sg : pxl_wgsl_ops_qmv_xs, "qmv_xs", k, 11, &b5, 3, p,
                              sizeof *p, g[0], g[1], (uint32_t)s->batch);
}

/* The grid of the 64 x 64-tiled kernels (qmm, kmm), which need 256 invocations. */
static pxl_status tiles_grid(pxl_ctx *ctx, const pxl_gpu_info *gi, const q_shape *s, uint32_t g[2]) {
    uint32_t maxd = gi->max_workgroups_per_dimension;
    uint64_t gx = ((uint64_t)s->N + 63) / 64, gy = ((uint64_t)s->M + 63) / 64;
    if (gx > maxd || gy > maxd)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: %lldx%lld output exceeds the device grid", OP,
                        (long long)s->M, (long long)s->N);
    if (gi->max_invocations_per_workgroup < 256)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: the quantized GEMM needs 256 invocations per workgroup", OP);
    g[0] = (uint32_t)gx;
    g[1] = (uint32_t)gy;
    return PXL_OK;
}

/* The K-quants (wgsl/kquant.wgsl): kmv for M <= 8, a row group of KMV_TPR
 * invocations per ROWS output columns (sharing the loads of A) and
 * KMV_WG / KMV_TPR row groups per workgroup; kmm (64 x 64 tiles) above.
 * From an H100 sweep of TPR 4..32 x ROWS 1..8 on a 4096 x 14336 matvec: Q4_K
 * best at TPR 32, ROWS 4 (34.5 us), Q6_K at TPR 32, ROWS 2 (55.0 us); ROWS
 * is divided by M (NCOL * ROWS <= 8). The context's tuning options kmv_tpr
 * and kmv_rows override them, for tuning only. */
#define KMV_WG 256u
#define KMV_TPR 32u

/* Q4_K and Q5_K with M = 1 (wgsl/kmv4.wgsl): B read 16 bytes at a time,
 * neighbouring invocations on neighbouring words; a row group of KMV4_TPR
 * invocations per KMV4_ROWS rows of B. Needs B's offset on 16 bytes, which
 * Q4_K and Q5_K rows (144 and 176 bytes a block) keep; else kmv or xmv runs.
 * Q6_K with M = 1 (wgsl/kmv6.wgsl): the same shape over 16-element units,
 * neighbouring invocations on neighbouring words. kmv4q (8-bit A) keeps
 * row groups of KMV4Q_TPR. The tuning options kmv_tpr and kmv_rows override
 * the shape. On an H100 (2026-11-27), row
 * groups of 64 against 32 for kmv4 and kmv6: TinyLlama Q4_K_M decode took
 * 1,645 and 1,648 us of GPU time a token against 1,780 and 1,782 (its rows
 * of 2048 are 64 units: one each), and decode was faster on all five files
 * of a peers run; kmv4q with 64: 1,589 us against 1,578. */
#define KMV4_WG 256u
#define KMV4_TPR 64u
#define KMV4Q_TPR 32u
#define KMV4_ROWS 2u
/* Products whose default shape would make more than KMV4_WIDE_GROUPS
 * workgroups (many waves: a large vocabulary's logits, wide FFNs) take row
 * groups of KMV4_WIDE_TPR, two units an invocation at K = 2048. H200,
 * 2026-11-27, one call, two rounds: Llama-3.2-1B Q4_K_M tg128 725 and 719
 * tok/s against 683 and 701 (its 128,256-row Q6_K logits product), greedy
 * generation 808 and 807 against 775 and 776; Q4_K 4096 x 14336 27.1 and
 * 27.0 us against 27.9; TinyLlama unchanged (692 against 690). */
#define KMV4_WIDE_GROUPS 1024u
#define KMV4_WIDE_TPR 32u
/* kmv4q products (one row, not SwiGLU) that would make fewer than
 * KMV4Q_NARROW_GROUPS workgroups (few rows, such as a down product's) take
 * row groups twice as wide while each invocation keeps at least two units
 * (K / 32 a row): an invocation walks its units one after another, so few
 * long row groups wait on that chain. H200, 2026-11-28, one call (pxl bench
 * ops): TinyLlama's Q4_K down product on 8-bit A (5632 x 2048) 9.29 us in
 * groups of 32 against 8.39 in groups of 64. */
#define KMV4Q_NARROW_GROUPS 256u
/* Q4_K and Q5_K products in kmv4q (8-bit A, not SwiGLU) with rows of at
 * least KMV4Q_LONG_K values (down products, wide FFNs) take KMV4Q_LONG_ROWS
 * rows a row group: each pass over A's row serves more rows of B
 * (docs/BENCHMARKS.md, "Four rows a row group"). Where kmv4q's workgroup
 * memory does not hold the row with that many rows, the product keeps
 * KMV4_ROWS (kmv4q if it fits so, else kmv4): the shapes measured for them. */
#define KMV4Q_LONG_K 4096
#define KMV4Q_LONG_ROWS 4u

/* Whether kmv4 / kmv6 can take a product with B of dtype dt: Q6_K always,
 * Q4_K and Q5_K when every offset into B (off_b, the up rows' rpg, rows,
 * batches) is on 16 bytes. */
static int kmv46_fits(pxl_dtype dt, const qmm_params *p) {
    return dt == PXL_Q6_K || ((dt == PXL_Q4_K || dt == PXL_Q5_K) && p->off_b % 16u == 0 && p->rpg % 16u == 0 &&
                              p->row_bytes % 16u == 0 && p->stride_b % 16u == 0);
}

/* kmv4q's workgroup memory for rows of K values: A rounded (K bytes), a
 * vec4 per 32 values, and the reduction's WG * (ROWS + 2) floats
 * (wgsl/kmv4.wgsl) */
static uint64_t kmv4q_bytes(int64_t K, uint32_t wg, uint32_t rows) {
    return (uint64_t)K + (uint64_t)K / 2 + (uint64_t)wg * (rows + 2u) * 4u;
}

/* kmv4 (Q4_K; Q5_K with the override Q5) or kmv6 (Q6_K) for one row of A;
 * with swiglu each row group takes one gate and one up row (ROWS 2, override
 * SWIGLU). a_q8 with Q4_K or Q5_K: kmv4q, which rounds A to 8 bits in workgroup
 * memory first, where the device's workgroup memory holds the row (else
 * kmv4, A as given); with Q6_K: kmv6q (in kmv4.wgsl, after the same
 * rounding), else kmv6. bias: bd's fifth binding is the bias row (override
 * BIAS, binding 5, p->off_s); without it binding 5 is A again, unread. */
typedef struct {
    uint32_t wg, rows, tpr; /* invocations a workgroup, rows and invocations a row group */
    int q8;                 /* kmv4q or kmv6q (else kmv4 or kmv6) */
} kmv_launch;

/* Q6_K products of more rows than this take kmv6q where a_q8 asks (A rounded
 * to 8 bits, 64-value units from 16-byte words), fewer keep kmv6 (A as
 * given). H200, 2026-11-28, one call: 4096 x 14336 23.6 us against kmv6's
 * 34.6, the 2048 x 32000 logits 30.1 against 38.2, TinyLlama's down (5632 x
 * 2048) 9.8 against 10.4; Llama-3.2-1B Q4_K_M decode 1.06-1.08x faster (its
 * 128,256-row Q6_K logits). But a TinyLlama V product (256 rows, Q6_K) as
 * kmv6q beside its Q4_K Q and K in kmv46 took the pair from 6.2 to 8.3 us,
 * and TinyLlama's decode did not gain: the K and V products (a few hundred
 * rows) stay on kmv6, whose A is also unrounded. */
#define KMV6Q_MIN_N 1024

/* The launch shape of kmv4, kmv4q, kmv6 or kmv6q for a product of K columns
 * and N rows (a batch's) with B of dtype dt, the narrow rule
 * (KMV4Q_NARROW_GROUPS) applied and the wide rule not (kmv46 below): kmv4q
 * (Q4_K, Q5_K) or kmv6q (Q6_K, N > KMV6Q_MIN_N) where a_q8 asks for it and its
 * workgroup memory holds A's row. kmv46.wgsl runs each of its two products
 * in the shape its own kernel gets here. */
static kmv_launch kmv_shape(const pxl_tuning *tune, const pxl_gpu_info *gi, pxl_dtype dt, int64_t K, int64_t N,
                            int swiglu, int a_q8) {
    kmv_launch l;
    l.wg = tune->kmv_wg ? tune->kmv_wg : KMV4_WG;
    while (l.wg > gi->max_invocations_per_workgroup) l.wg /= 2;
    l.rows = swiglu ? 2u : tune->kmv_rows ? tune->kmv_rows : KMV4_ROWS;
    l.q8 = (dt == PXL_Q4_K || dt == PXL_Q5_K || (dt == PXL_Q6_K && N > KMV6Q_MIN_N)) && a_q8 &&
           kmv4q_bytes(K, l.wg, l.rows) <= gi->max_workgroup_storage_size;
    if (l.q8 && dt != PXL_Q6_K && !swiglu && !tune->kmv_rows && K >= KMV4Q_LONG_K &&
        kmv4q_bytes(K, l.wg, KMV4Q_LONG_ROWS) <= gi->max_workgroup_storage_size)
        l.rows = KMV4Q_LONG_ROWS;
    l.tpr = tune->kmv_tpr ? tune->kmv_tpr : l.q8 ? KMV4Q_TPR : KMV4_TPR;
    if (!tune->kmv_tpr && l.q8 && dt != PXL_Q6_K && !swiglu)
        while (2 * l.tpr <= l.wg && (uint64_t)K / 32 >= 4 * (uint64_t)l.tpr &&
               ((uint64_t)N + (l.wg / l.tpr) * l.rows - 1) / ((l.wg / l.tpr) * l.rows) < KMV4Q_NARROW_GROUPS)
            l.tpr *= 2;
    if (l.tpr > l.wg) l.tpr = l.wg;
    return l;
}

static pxl_status kmv46(pxl_ctx *ctx, const pxl_gpu_info *gi, pxl_dtype dt, const pxl_op_bindings *bd,
                        const q_shape *s, const qmm_params *p, double norm, int swiglu, int a_q8, int bias) {
    const pxl_tuning *tune = pxl_ctx_tuning(ctx); /* tuning benchmarks only */
    kmv_launch l = kmv_shape(tune, gi, dt, s->K, s->N, swiglu, a_q8);
    uint32_t wg = l.wg, rows = l.rows, tpr = l.tpr;
    int q4 = dt == PXL_Q4_K || dt == PXL_Q5_K; /* kmv4.wgsl */
    int q8 = l.q8;
    uint32_t out = swiglu ? rows / 2 : rows; /* output rows a row group */
    uint64_t per = (uint64_t)(wg / tpr) * out; /* and a workgroup */
    if (!tune->kmv_tpr && ((uint64_t)s->N + per - 1) / per * (uint64_t)s->batch > KMV4_WIDE_GROUPS) {
        tpr = KMV4_WIDE_TPR < wg ? KMV4_WIDE_TPR : wg;
        per = (uint64_t)(wg / tpr) * out;
    }
    uint32_t g[2] = {0, 0};
    pxl_status st = rows_grid(ctx, s, per, g);
    if (st != PXL_OK) return st;
    /* the row groups' sums begun by subgroup shuffles where the device allows
     * (the _sg builds); KQ sizes kmv4q's and kmv6q's row of A (256, the
     * least, for the other entries); Q5: Q5_K weights in kmv4 and kmv4q */
    uint32_t sgw = pxl_mv_sgw(ctx, gi, tpr);
    pxl_constant k[9] = {{"WG", wg},         {"TPR", tpr}, {"ROWS", rows},     {"NORM", norm},
                         {"SWIGLU", swiglu}, {"SGW", sgw}, {"BIAS", bias != 0}, {"KQ", q8 ? (double)s->K : 256.0},
                         {"Q5", dt == PXL_Q5_K}};
    int m4 = q4 || q8; /* kmv4.wgsl's module: kmv4, kmv4q, kmv6q */
    const char *file = m4 ? (sgw > 1 ? "kmv4_sg.wgsl" : "kmv4.wgsl") : (sgw > 1 ? "kmv6_sg.wgsl" : "kmv6.wgsl");
    const char *text = m4 ? (sgw > 1 ? pxl_wgsl_ops_kmv4_sg : pxl_wgsl_ops_kmv4)
                          : (sgw > 1 ? pxl_wgsl_ops_kmv6_sg : pxl_wgsl_ops_kmv6);
    const char *entry = q8 ? (q4 ? "kmv4q" : "kmv6q") : q4 ? "kmv4" : "kmv6";
    pxl_op_bindings b5 = pxl_op_bias_binding(bd); /* binding 5: the bias (bd's fifth), or A again */
    return pxl_op_dispatch_ub(ctx, file, text, entry, k, m4 ? 9 : 7, &b5, 3, p, sizeof *p, g[0], g[1],
                              (uint32_t)s->batch);
}

/* The tiled Q4_K, Q5_K, Q6_K, Q8_0, Q4_0 and Q5_0 products with 8-bit A (a_q8,
 * M > 8): A rounded into scratch memory by wgsl/qa8.wgsl (R = batch_a * M
 * rows: K bytes of integers a row, then 16 bytes of scales per 64 values),
 * then wgsl/kmm8.wgsl's 64 x 64 tiles (or kmm8w.wgsl's, below) on it, both
 * in the recorder that owns the scratch. Taken where the rounded rows fit
 * one binding and B's offsets are on 4 bytes for Q4_K, on 16 for Q5_K
 * (kmm8w only), on 2 for Q8_0, Q4_0 and Q5_0 with K a multiple of 64
 * (kmm8_fits); else kmm, xmm or qmm, A as given. */
/* The uniform block of wgsl/qa8.wgsl: R rows of K values of A from float
 * offset off_a; qa8n: the norm from float offset off_w, its epsilon. */
typedef struct {
    uint32_t R, K, off_a, off_w;
    float eps;
    uint32_t pad[3];
} qa8_params;
_Static_assert(sizeof(qa8_params) == 32, "mirrors struct Params in qa8.wgsl");

static uint64_t kmm8_bytes(const q_shape *s) {
    uint64_t rk = (uint64_t)s->batch_a * (uint64_t)s->M * (uint64_t)s->K;
    return rk + rk / 64 * 16;
}

static int kmm8_fits(const pxl_gpu_info *gi, pxl_dtype dt, const q_shape *s, const qmm_params *p) {
    int b_ok = dt == PXL_Q6_K || (dt == PXL_Q4_K && p->off_b % 4u == 0 && p->stride_b % 4u == 0) ||
               (dt == PXL_Q5_K && p->off_b % 16u == 0 && p->stride_b % 16u == 0) ||
               (legacy_q(dt) && s->K % 64 == 0 && p->off_b % 2u == 0 &&
                p->stride_b % 2u == 0);
    return b_ok && kmm8_bytes(s) + 16 <= gi->max_storage_binding_size && kmm8_bytes(s) / 16 <= UINT32_MAX;
}

/* kmm8w.wgsl's columns per invocation (its tiles are 64 x 16 tn), or 0 for
 * kmm8.wgsl. Q6_K: kmm8w6, tn 4. Q4_K whose views start on 16 bytes (rows
 * do: 144 bytes a block), Q5_K (kmm8_fits asks for 16 bytes), and Q8_0, Q4_0
 * and Q5_0 (override QB; kmm8_fits asks for 2 bytes and K % 64 == 0): kmm8w,
 * tn 8 where that still makes KMM8W_WIDE tiles, else 4. Measured on an H200
 * (2026-11-27; --tune kmm8=0|4|8, pxl bench ops --only q8a_matmul): Q4_K
 * 512x2048x5632 236 us (tn 8), 259 (4), 385 (kmm8); 512x2048x2048 99, 95,
 * 155; 512x2048x256 99, 63, 110. The tuning option kmm8=0 takes kmm8.wgsl
 * (all but Q5_K, which keeps kmm8w), kmm8=4 or 8 sets tn (kmm8w); pxl_tuning
 * keeps them plus one. */
#define KMM8W_WIDE 256u
static uint32_t kmm8w_tn(const pxl_ctx *ctx, pxl_dtype dt, const q_shape *s, const qmm_params *p) {
    uint32_t t = pxl_ctx_tuning(ctx)->kmm8;
    if (t == 1 && dt != PXL_Q5_K) return 0;
    if (t == 1) t = 0;
    if (dt == PXL_Q6_K) return 4;
    int legacy = legacy_q(dt); /* kmm8_fits: on 2 bytes, K % 64 == 0 */
    if (!legacy && ((dt != PXL_Q4_K && dt != PXL_Q5_K) || p->off_b % 16u || p->stride_b % 16u)) return 0;
    if (t) return t - 1;
    uint64_t wide = ((uint64_t)s->N + 127) / 128 * (((uint64_t)s->M + 63) / 64) * (uint64_t)s->batch;
    return wide >= KMM8W_WIDE ? 8u : 4u;
}

/* kmm8w's splits of K for a product of `tiles` workgroups and `steps` steps
 * of 64 values: where the tiles alone would leave most of a large GPU idle
 * (fewer than KMM8W_SPLIT_TILES), enough splits to reach that many, at most
 * 8 and at least 4 steps each; the tuning option kmm8_split=N caps them (1:
 * none). Measured on an H200 (2026-11-27): Q4_K 512x2048x256, 32 tiles,
 * took 63 us unsplit. */
#define KMM8W_SPLIT_TILES 128u
static uint32_t kmm8w_split(const pxl_ctx *ctx, uint64_t tiles, uint64_t steps) {
    uint32_t cap = pxl_ctx_tuning(ctx)->kmm8_split ? pxl_ctx_tuning(ctx)->kmm8_split : 8u, split = 1;
    while (split < cap && tiles * split < KMM8W_SPLIT_TILES && steps / (split * 2u) >= 4u) split *= 2u;
    return split;
}

/* qa8: the R = batch_a * M rows of A (bound as bd->b[0], from float
 * bd->off[0]) rounded into a new scratch buffer of the stream, which *rec
 * returns and *qbind binds (at 0); with nb (NULL: none) qa8n: rmsnorm(A) *
 * w rounded, w bound as nb->b[0] from float nb->off[0], epsilon eps. The
 * products on it must be recorded into *rec itself (pxl_recorder_dispatch):
 * pxl_gpu_stream may submit a full stream, and the scratch lives as long as
 * its recorder. */
static pxl_status kmm8_round(pxl_ctx *ctx, const pxl_op_bindings *bd, const pxl_op_bindings *nb, float eps,
                             const q_shape *s, pxl_recorder **rec, pxl_binding *qbind) {
    uint64_t R = (uint64_t)s->batch_a * (uint64_t)s->M, qbytes = kmm8_bytes(s);
    uint32_t qg[2] = {0, 0};
    pxl_status st = pxl_op_grid(ctx, OP, nb ? R : (R * (uint64_t)s->K / 16 + 255) / 256, qg);
    if (st != PXL_OK) return st;
    pxl_buffer *buf;
    if ((st = pxl_gpu_stream(ctx, rec)) != PXL_OK) return st;
    if ((st = pxl_recorder_scratch(*rec, (size_t)qbytes, &buf)) != PXL_OK) return st;
    *qbind = (pxl_binding){0, buf, 0, (size_t)(qbytes + 15) / 16 * 16};
    /* qa8: A (binding 0, as bound for the product) into the scratch (1); qa8n: the norm at 3 */
    qa8_params qp = {(uint32_t)R, (uint32_t)s->K, bd->off[0], nb ? nb->off[0] : 0, eps, {0, 0, 0}};
    pxl_binding qb[3] = {bd->b[0], *qbind, nb ? nb->b[0] : bd->b[0]};
    qb[0].binding = 0;
    qb[1].binding = 1;
    qb[2].binding = 3;
    pxl_constant wg[1] = {{"WG", nb ? pxl_rowwise_wg(ctx, s->K) : 256}};
    pxl_kernel *k;
    if ((st = pxl_kernel_get_static(ctx, "qa8.wgsl", pxl_wgsl_ops_qa8, nb ? "qa8n" : "qa8", wg, 1, &k)) != PXL_OK)
        return st;
    pxl_dispatch d = {k, qb, nb ? 3u : 2u, &qp, sizeof qp, 2, {qg[0], qg[1], 1}};
    return pxl_recorder_dispatch(*rec, &d);
}

/* The tiled product of A rounded by kmm8_round (qbind, in rec) with B and C
 * as bound in bb and bc (p's off_b and off_c from their bindings):
 * kmm8.wgsl, or kmm8w.wgsl's tiles (kmm8w_tn) with K split where they are
 * few, then the splits' sum. */
static pxl_status kmm8_mul(pxl_ctx *ctx, const pxl_gpu_info *gi, pxl_dtype dt, pxl_recorder *rec,
                           const pxl_binding *qbind, const pxl_binding *bb, const pxl_binding *bc, const q_shape *s,
                           const qmm_params *p) {
    uint32_t g[2] = {0, 0};
    pxl_status st = tiles_grid(ctx, gi, s, g);
    if (st != PXL_OK) return st;
    uint64_t R = (uint64_t)s->batch_a * (uint64_t)s->M;
    /* kmm8: the rounded rows (0), B (1), C (2) */
    qmm_params p8 = *p;
    p8.off_a = (uint32_t)(R * (uint64_t)s->K / 16);
    p8.stride_a = s->batch_a == 1 ? 0u : (uint32_t)s->M;
    pxl_binding mb[3] = {*qbind, *bb, *bc};
    mb[1].binding = 1;
    mb[2].binding = 2;
    pxl_kernel *k;
    uint32_t tn = kmm8w_tn(ctx, dt, s, p);
    if (!tn) {
        pxl_constant kq[4] = {{"KQ6", dt == PXL_Q6_K},
                              {"KQ8", dt == PXL_Q8_0},
                              {"KQ40", dt == PXL_Q4_0 || dt == PXL_Q5_0},
                              {"KQ50", dt == PXL_Q5_0}};
        if ((st = pxl_kernel_get_static(ctx, "kmm8.wgsl", pxl_wgsl_ops_kmm8, "kmm8", kq, 4, &k)) != PXL_OK) return st;
        pxl_dispatch d2 = {k, mb, 3, &p8, sizeof p8, 3, {g[0], g[1], (uint32_t)s->batch}};
        return pxl_recorder_dispatch(rec, &d2);
    }
    /* kmm8w, kmm8w6: 64 x 16 tn tiles, K split where they are few */
    uint64_t gx = ((uint64_t)s->N + 16u * tn - 1) / (16u * tn);
    pxl_splitk sk = {NULL, 0, p->M, p->N, (uint32_t)s->batch, p->off_c, p->stride_c, p->alpha, p->beta};
    sk.split = pxl_splitk_fit(gi, &sk, kmm8w_split(ctx, gx * (uint64_t)g[1] * (uint64_t)s->batch, (uint64_t)s->K / 64),
                              gx);
    uint32_t split = sk.split;
    if (split > 1 && (st = pxl_splitk_scratch(rec, &sk, &mb[2])) != PXL_OK) return st;
    uint32_t qblk = dt == PXL_Q8_0 ? 34u : dt == PXL_Q4_0 ? 18u : dt == PXL_Q5_0 ? 22u : 0u;
    pxl_constant c[4] = {{"TN", tn}, {"SPLITK", split}, {"Q5", dt == PXL_Q5_K}, {"QB", qblk}};
    if ((st = pxl_kernel_get_static(ctx, "kmm8w.wgsl", pxl_wgsl_ops_kmm8w, dt == PXL_Q6_K ? "kmm8w6" : "kmm8w", c,
                                    dt == PXL_Q6_K ? 2 : 4, &k)) != PXL_OK)
        return st;
    pxl_dispatch d2 = {k, mb, 3, &p8, sizeof p8, 3, {(uint32_t)(gx * split), g[1], (uint32_t)s->batch}};
    if ((st = pxl_recorder_dispatch(rec, &d2)) != PXL_OK || split == 1) return st;
    return pxl_splitk_sum(ctx, rec, &sk, bc);
}

static pxl_status kmm8(pxl_ctx *ctx, const pxl_gpu_info *gi, pxl_dtype dt, const pxl_op_bindings *bd,
                       const q_shape *s, const qmm_params *p) {
    pxl_recorder *rec; /* after pxl_op_bind, which may submit a full stream */
    pxl_binding qbind;
    pxl_status st = kmm8_round(ctx, bd, NULL, 0.0f, s, &rec, &qbind);
    if (st != PXL_OK) return st;
    return kmm8_mul(ctx, gi, dt, rec, &qbind, &bd->b[1], &bd->b[2], s, p);
}

/* bytes of sk's partial sums for `split` splits */
static uint64_t splitk_bytes(const pxl_splitk *sk, uint32_t split) {
    return (uint64_t)split * sk->batch * sk->M * sk->N * 4u;
}

uint32_t pxl_splitk_fit(const pxl_gpu_info *gi, const pxl_splitk *sk, uint32_t split, uint64_t gx) {
    while (split > 1 && (splitk_bytes(sk, split) > gi->max_storage_binding_size ||
                         gx * split > gi->max_workgroups_per_dimension))
        split /= 2u;
    return split;
}

pxl_status pxl_splitk_scratch(pxl_recorder *rec, pxl_splitk *sk, pxl_binding *b) {
    uint64_t part = splitk_bytes(sk, sk->split);
    pxl_status st = pxl_recorder_scratch(rec, (size_t)part, &sk->partials);
    if (st == PXL_OK) *b = (pxl_binding){2, sk->partials, 0, (size_t)(part + 15) / 16 * 16};
    return st;
}

pxl_status pxl_splitk_sum(pxl_ctx *ctx, pxl_recorder *rec, const pxl_splitk *sk, const pxl_binding *c) {
    uint64_t part = splitk_bytes(sk, sk->split);
    qmm_params ps = {0};
    ps.M = sk->M;
    ps.N = sk->N;
    ps.nb = sk->split;
    ps.stride_a = sk->batch;
    ps.stride_c = sk->stride_c;
    ps.off_c = sk->off_c;
    ps.alpha = sk->alpha;
    ps.beta = sk->beta;
    pxl_binding sb[2] = {{0, sk->partials, 0, (size_t)(part + 15) / 16 * 16}, *c};
    sb[1].binding = 2;
    uint32_t sg[2] = {0, 0};
    pxl_status st = pxl_op_grid(ctx, OP, (part / 4 / sk->split + 255) / 256, sg);
    pxl_kernel *k;
    if (st == PXL_OK) st = pxl_kernel_get_static(ctx, "kmm8w.wgsl", pxl_wgsl_ops_kmm8w, "kmm8_sum", NULL, 0, &k);
    if (st != PXL_OK) return st;
    pxl_dispatch d = {k, sb, 2, &ps, sizeof ps, 3, {sg[0], sg[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

/* The kernels that declare no bias binding (5): bd without it. */
static pxl_op_bindings without_bias(const pxl_op_bindings *bd) {
    pxl_op_bindings b = *bd;
    if (b.n > 4) b.n = 4;
    return b;
}

/* bias: bd's fifth binding is the bias row; kmv46 adds it (*bias_done set),
 * the other kernels leave it to pxl_matmul. */
static pxl_status k_gpu(pxl_ctx *ctx, const pxl_gpu_info *gi, const pxl_tensor *const t[3],
                        const pxl_op_bindings *bd5, const q_shape *s, const qmm_params *p, double norm, int a_q8,
                        int bias, int *bias_done) {
    double kq6 = t[1]->dtype == PXL_Q6_K ? 1 : 0;
    if (s->M == 1 && kmv46_fits(t[1]->dtype, p)) {
        *bias_done = bias;
        return kmv46(ctx, gi, t[1]->dtype, bd5, s, p, norm, 0, a_q8, bias);
    }
    pxl_op_bindings bd4 = without_bias(bd5), *bd = &bd4;
    if (s->M <= QMV_MAX_NCOL) {
        uint32_t wg = KMV_WG;
        while (wg > gi->max_invocations_per_workgroup) wg /= 2;
        const pxl_tuning *tune = pxl_ctx_tuning(ctx); /* tuning benchmarks only */
        uint32_t tpr = tune->kmv_tpr ? tune->kmv_tpr : KMV_TPR;
        if (tpr > wg) tpr = wg;
        uint32_t rows = (t[1]->dtype == PXL_Q4_K ? 4u : 2u) / (uint32_t)s->M;
        if (tune->kmv_rows && tune->kmv_rows * (uint32_t)s->M <= 8) rows = tune->kmv_rows;
        if (rows < 1) rows = 1;
        uint32_t g[2] = {0, 0};
        pxl_status st = rows_grid(ctx, s, (uint64_t)(wg / tpr) * rows, g);
        if (st != PXL_OK) return st;
        pxl_constant k[6] = {{"WG", wg},     {"TPR", tpr}, {"NCOL", (double)s->M},
                             {"ROWS", rows}, {"KQ6", kq6}, {"NORM", norm}};
        return pxl_op_dispatch_ub(ctx, "kquant.wgsl", pxl_wgsl_ops_kquant, "kmv", k, 6, bd, 3, p, sizeof *p, g[0],
                                  g[1], (uint32_t)s->batch);
    }
    uint32_t g[2] = {0, 0};
    pxl_status st = tiles_grid(ctx, gi, s, g);
    if (st != PXL_OK) return st;
    pxl_constant k[1] = {{"KQ6", kq6}};
    return pxl_op_dispatch3(ctx, "kquant.wgsl", pxl_wgsl_ops_kquant, "kmm", k, 1, bd, p, sizeof *p, g[0], g[1],
                            (uint32_t)s->batch);
}

/* Q4_1, Q5_1, Q5_K, Q2_K and Q3_K, and Q5_0 prompts (wgsl/xquant.wgsl;
 * q_gpu sends the 8-bit tiled products to kmm8 first): Q5_K with M = 1 on
 * 16-byte offsets in kmv4 (Q5); else xmv for M <= 8, a row group of KMV_TPR
 * invocations per ROWS output columns (8 / M, at most 4; the decoded
 * sub-blocks of the ROWS rows serve all M rows of A), xmm (64 x 64 tiles)
 * above. Not tuned. */
double pxl_xquant_type(pxl_dtype t) {
    return t == PXL_Q5_0 ? 0 : t == PXL_Q4_1 ? 1 : t == PXL_Q5_1 ? 2 : t == PXL_Q2_K ? 4 : t == PXL_Q3_K ? 5 : 3;
}

static pxl_status x_gpu(pxl_ctx *ctx, const pxl_gpu_info *gi, const pxl_tensor *const t[3],
                        const pxl_op_bindings *bd5, const q_shape *s, const qmm_params *p, double norm, int a_q8,
                        int bias, int *bias_done) {
    double qt = pxl_xquant_type(t[1]->dtype);
    if (s->M == 1 && kmv46_fits(t[1]->dtype, p)) { /* Q5_K: kmv4 with Q5, or kmv4q where a_q8 asks */
        *bias_done = bias;
        return kmv46(ctx, gi, t[1]->dtype, bd5, s, p, norm, 0, a_q8, bias);
    }
    pxl_op_bindings bd4 = without_bias(bd5), *bd = &bd4;
    if (s->M <= QMV_MAX_NCOL) {
        uint32_t wg = KMV_WG, tpr = KMV_TPR;
        while (wg > gi->max_invocations_per_workgroup) wg /= 2;
        if (tpr > wg) tpr = wg;
        uint32_t rows = 8u / (uint32_t)s->M;
        if (rows > 4) rows = 4;
        uint32_t g[2] = {0, 0};
        pxl_status st = rows_grid(ctx, s, (uint64_t)(wg / tpr) * rows, g);
        if (st != PXL_OK) return st;
        pxl_constant k[6] = {{"WG", wg}, {"TPR", tpr}, {"NCOL", (double)s->M}, {"ROWS", rows}, {"QT", qt}, {"NORM", norm}};
        return pxl_op_dispatch_ub(ctx, "xquant.wgsl", pxl_wgsl_ops_xquant, "xmv", k, 6, bd, 3, p, sizeof *p, g[0],
                                  g[1], (uint32_t)s->batch);
    }
    uint32_t g[2] = {0, 0};
    pxl_status st = tiles_grid(ctx, gi, s, g);
    if (st != PXL_OK) return st;
    pxl_constant k[1] = {{"QT", qt}};
    return pxl_op_dispatch3(ctx, "xquant.wgsl", pxl_wgsl_ops_xquant, "xmm", k, 1, bd, p, sizeof *p, g[0], g[1],
                            (uint32_t)s->batch);
}

/* The uniform block of a product of shape s with B of b's dtype, the
 * bindings' offsets still 0. */
static qmm_params q_params(const q_shape *s, const pxl_tensor *b, const pxl_matmul_options *o) {
    return (qmm_params){(uint32_t)s->M,
                        (uint32_t)s->N,
                        (uint32_t)s->K,
                        (uint32_t)(s->K / pxl_dtype_block(b->dtype)),
                        (uint32_t)s->row_bytes,
                        (uint32_t)(s->batch_a == 1 ? 0 : s->M * s->K),
                        (uint32_t)(s->batch_b == 1 ? 0 : (size_t)s->N * s->row_bytes),
                        (uint32_t)(s->M * s->N),
                        o->alpha,
                        o->beta,
                        0, 0, 0, 0, 0, o->norm_eps, 0, 0, 0, 0, 0, 0, {0, 0}};
}

static pxl_status q_gpu(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c, const q_shape *s,
                        const pxl_matmul_options *o, int *bias_done) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    if (a->nelem > UINT32_MAX || c->nelem > UINT32_MAX || b->bytes > UINT32_MAX - 64)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: operands over 2^32 elements or bytes", OP);
    uint32_t maxd = gi->max_workgroups_per_dimension;
    if (s->batch > maxd)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: batch %lld exceeds the device grid", OP,
                        (long long)s->batch);
    qmm_params p = q_params(s, b, o);
    /* The matrix-vector kernels (M <= 8) bind a fourth tensor at binding 4
     * (after the uniform block at 3): the norm (override NORM), or A again
     * (bound, not read). A and the norm are read as vec4. qmv_xs, qmv (Q8_0,
     * Q4_0, Q5_0), kmv4 and kmv6 (Q4_K, Q5_K, Q6_K, M = 1) bind a fifth at
     * 5: the bias (override BIAS), or A again; the others get bd without it. */
    int mv = s->M <= QMV_MAX_NCOL;
    double norm = o->norm != NULL;
    int bias = mv && o->bias;
    const pxl_tensor *t[5] = {a, b, c, o->norm ? o->norm : a, bias ? o->bias : a};
    pxl_op_bindings bd;
    pxl_status bs = pxl_op_bind(ctx, OP, t, mv ? 5 : 3, 4u, 9u, &bd);
    if (bs != PXL_OK) return bs;
    if (mv) bd.b[3].binding = 4;
    if (mv) bd.b[4].binding = 5;
    p.off_a = bd.off[0];
    p.off_b = bd.off[1];
    p.off_c = bd.off[2];
    p.off_n = mv ? bd.off[3] : 0;
    p.off_s = mv ? bd.off[4] : 0;
    /* the tiled products on 8-bit A, for every format kmm8_fits takes */
    if (s->M > QMV_MAX_NCOL && o->a_q8 && kmm8_fits(gi, b->dtype, s, &p)) return kmm8(ctx, gi, b->dtype, &bd, s, &p);
    if (b->dtype == PXL_Q4_K || b->dtype == PXL_Q6_K)
        return k_gpu(ctx, gi, t, &bd, s, &p, norm, o->a_q8, bias, bias_done);
    if (!quant_takes(b->dtype, s->M)) return x_gpu(ctx, gi, t, &bd, s, &p, norm, o->a_q8, bias, bias_done);
    double q4 = b->dtype != PXL_Q8_0, q5 = b->dtype == PXL_Q5_0;
    xs_launch xl;
    const pxl_tuning *tune = pxl_ctx_tuning(ctx); /* qmv_kernel=q: never qmv_xs (tuning only) */
    if (s->M == 1 && !tune->qmv_plain && xs_shape(ctx, gi, s->K / PXL_QK, s->N, 0, &xl)) {
        *bias_done = bias != 0;
        return xs_dispatch(ctx, &xl, b->dtype, s, &p, &bd, norm, 0, bias, xs_q8(tune, o));
    }
    if (s->M <= QMV_MAX_NCOL) {
        qmv_launch l = qmv_shape(tune, gi, (uint32_t)s->M, s->K / PXL_QK);
        uint32_t g[2] = {0, 0};
        pxl_status st = rows_grid(ctx, s, (uint64_t)(l.wg / l.tpr) * l.rows, g);
        if (st != PXL_OK) return st;
        pxl_constant k[9] = {{"WG", l.wg},     {"TPR", l.tpr}, {"ROWS", l.rows}, {"UNROLL", l.unroll},
                             {"NCOL", l.ncol}, {"Q4", q4},     {"Q5", q5},       {"NORM", norm},
                             {"BIAS", bias}};
        *bias_done = bias != 0;
        return pxl_op_dispatch_ub(ctx, "quant.wgsl", pxl_wgsl_ops_quant, "qmv", k, 9, &bd, 3, &p, sizeof p, g[0],
                                  g[1], (uint32_t)s->batch);
    }
    uint32_t g[2] = {0, 0};
    pxl_status st = tiles_grid(ctx, gi, s, g);
    if (st != PXL_OK) return st;
    pxl_constant k[1] = {{"Q4", q4}};
    return pxl_op_dispatch3(ctx, "quant.wgsl", pxl_wgsl_ops_quant, "qmm", k, 1, &bd, &p, sizeof p, g[0], g[1],
                            (uint32_t)s->batch);
}

pxl_status pxl_matmul_quant_check(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, const pxl_tensor *c,
                                  const pxl_matmul_options *o) {
    q_shape s;
    return q_check(ctx, a, b, c, o, &s);
}

pxl_status pxl_matmul_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                            const pxl_matmul_options *o, int *bias_done) {
    q_shape s;
    pxl_status st = q_check(ctx, a, b, c, o, &s);
    if (st != PXL_OK) return st;
    if (o->norm && !pxl_matmul_norm_fused(ctx, b->dtype, s.M, o->trans_b)) /* only the matrix-vector kernels */
        return pxl_matmul_norm_split(ctx, a, b, c, o);
    return pxl_on_gpu(ctx) ? q_gpu(ctx, a, b, c, &s, o, bias_done) : q_cpu(ctx, a, b, c, &s, o);
}

/* ---- several prompt products of one A on 8-bit A (pxl_matmul_multi) ------------------ */

/* The merged shape of products i .. j - 1 of pxl_matmul_multi_q8 (their
 * rows of B one after another): s[i]'s with N their sum. */
static q_shape kmm8_span_shape(const q_shape *s, size_t i, size_t j) {
    q_shape m = s[i];
    for (size_t t = i + 1; t < j; t++) m.N += s[t].N;
    return m;
}

/* Where products i .. j - 1 of pxl_matmul_multi_q8 (2 <= j - i <= 3) are
 * one kmm8wn dispatch: their weights are rows of one matrix in turn (views
 * of one buffer, each starting where the last ends: a layer's Q, K and V,
 * or gate and up, as the GGUF runtime uploads them), of one format that
 * kmm8w takes; no batches; outputs in buffers of their own; each output but
 * the last a whole number of tiles wide, so that no tile straddles two; B's
 * binding over their rows within the device's limit; and so many tiles that
 * kmm8w would not split K (kmm8w_split), which kmm8wn does not do. Then a product that would split K alone (K and V) shares the
 * tiles of the wide one, and the split passes, their sums and the
 * dispatches between go.
 *
 * By default only where K <= KMM8W_MERGE_MAX_K. Measured on an H200
 * (2026-11-29, prompts of 512 tokens; docs/BENCHMARKS.md): Qwen2.5-0.5B
 * (K = 896) prefilled 10.7% faster with both of its runs made one, while at
 * K = 2048 the figures moved between -1.8% (TinyLlama) and +1.2% (Q, K and
 * V of Llama-3.2-1B's Q8_0 file): there the tiles are long, and how many the
 * merged product has against the device's units (wave quantization) decides
 * more than the dispatches it saves. The tuning option kmm8_merge=0 turns
 * it off, kmm8_merge=1 on for every K. */
#define KMM8W_MERGE_MAX_K 1024

/* The bytes of the binding of B over products i .. j - 1's rows: from
 * product i's binding to the end of product j - 1's (bd: pxl_op_bind's) */
static uint64_t kmm8_span_bytes(const pxl_op_bindings *bd, size_t i, size_t j) {
    return (uint64_t)bd[j - 1].b[1].offset + bd[j - 1].b[1].size - bd[i].b[1].offset;
}

static int kmm8_spans(pxl_ctx *ctx, const pxl_gpu_info *gi, const pxl_tensor *const *b, pxl_tensor *const *c,
                      const q_shape *s, const qmm_params *p, const pxl_op_bindings *bd, size_t i, size_t j) {
    pxl_dtype dt = b[i]->dtype;
    uint32_t t8 = pxl_ctx_tuning(ctx)->kmm8_merge; /* 0: default; else 1 + the option */
    if (t8 == 1 || (!t8 && s[i].K > KMM8W_MERGE_MAX_K) || dt == PXL_Q6_K || gi->max_storage_buffers_per_stage < 5)
        return 0; /* kmm8wn binds five storage buffers */
    for (size_t t = i; t < j; t++) {
        if (s[t].batch != 1 || s[t].batch_a != 1 || s[t].batch_b != 1) return 0;
        for (size_t u = i; u < t; u++)
            if (c[u]->buf == c[t]->buf) return 0;
        if (t > i && (b[t]->dtype != dt || b[t]->buf != b[t - 1]->buf || b[t]->offset != b[t - 1]->offset + b[t - 1]->bytes))
            return 0;
    }
    q_shape m = kmm8_span_shape(s, i, j);
    uint32_t tn = kmm8w_tn(ctx, dt, &m, &p[i]);
    if (!tn || m.N > UINT32_MAX || (uint64_t)m.N * m.row_bytes > UINT32_MAX - 64 ||
        kmm8_span_bytes(bd, i, j) > gi->max_storage_binding_size)
        return 0;
    for (size_t t = i; t + 1 < j; t++)
        if (s[t].N % (16 * tn)) return 0;
    uint64_t tiles = ((uint64_t)m.N + 16u * tn - 1) / (16u * tn) * (((uint64_t)m.M + 63) / 64);
    return kmm8w_split(ctx, tiles, (uint64_t)m.K / 64) == 1;
}

/* The end of the run of products from i that pxl_matmul_multi_q8 makes one
 * dispatch (the longest of up to 3 that kmm8_spans takes), or i + 1. */
static size_t kmm8_span(pxl_ctx *ctx, const pxl_gpu_info *gi, size_t n, const pxl_tensor *const *b,
                        pxl_tensor *const *c, const q_shape *s, const qmm_params *p, const pxl_op_bindings *bd,
                        size_t i) {
    for (size_t j = i + 3 < n ? i + 3 : n; j >= i + 2; j--)
        if (kmm8_spans(ctx, gi, b, c, s, p, bd, i, j)) return j;
    return i + 1;
}

/* Products i .. j - 1 (kmm8_spans) as one kmm8wn dispatch into rec, on A
 * rounded by kmm8_round (qbind): B bound over all their rows (from product
 * i's binding to product j - 1's end), outputs at bindings 2, 4 and 5 (a
 * scratch word at 5 for two). */
static pxl_status kmm8_mul_n(pxl_ctx *ctx, const pxl_gpu_info *gi, pxl_dtype dt, pxl_recorder *rec,
                             const pxl_binding *qbind, const pxl_op_bindings *bd, const q_shape *s,
                             const qmm_params *p, size_t i, size_t j) {
    q_shape m = kmm8_span_shape(s, i, j);
    uint32_t g[2] = {0, 0};
    pxl_status st = tiles_grid(ctx, gi, &m, g);
    if (st != PXL_OK) return st;
    pxl_binding mb[5] = {*qbind, bd[i].b[1], bd[i].b[2], bd[i + 1].b[2], {0}};
    mb[1].binding = 1;
    mb[2].binding = 2;
    mb[3].binding = 4;
    mb[1].size = (size_t)kmm8_span_bytes(bd, i, j);
    if (j - i == 3) {
        mb[4] = bd[i + 2].b[2];
    } else {
        pxl_buffer *word;
        if ((st = pxl_recorder_scratch(rec, 16, &word)) != PXL_OK) return st;
        mb[4] = (pxl_binding){0, word, 0, 16};
    }
    mb[4].binding = 5;
    qmm_params p8 = p[i];
    p8.N = (uint32_t)m.N;
    p8.off_a = (uint32_t)((uint64_t)m.M * (uint64_t)m.K / 16); /* the scales after the rounded rows */
    p8.stride_a = 0;
    p8.n2 = (uint32_t)s[i].N;
    p8.off_u2 = j - i == 3 ? (uint32_t)(s[i].N + s[i + 1].N) : (uint32_t)m.N;
    p8.off_c2 = p[i + 1].off_c;
    p8.off_s2 = j - i == 3 ? p[i + 2].off_c : 0;
    uint32_t tn = kmm8w_tn(ctx, dt, &m, &p8);
    uint32_t qblk = dt == PXL_Q8_0 ? 34u : dt == PXL_Q4_0 ? 18u : dt == PXL_Q5_0 ? 22u : 0u;
    pxl_constant c[5] = {{"TN", tn}, {"SPLITK", 1}, {"Q5", dt == PXL_Q5_K}, {"QB", qblk}, {"NOUT", (double)(j - i)}};
    pxl_kernel *k;
    if ((st = pxl_kernel_get_static(ctx, "kmm8w.wgsl", pxl_wgsl_ops_kmm8w, "kmm8wn", c, 5, &k)) != PXL_OK) return st;
    uint64_t gx = ((uint64_t)m.N + 16u * tn - 1) / (16u * tn);
    pxl_dispatch d = {k, mb, 5, &p8, sizeof p8, 3, {(uint32_t)gx, g[1], 1}};
    return pxl_recorder_dispatch(rec, &d);
}

/* c[i] = alpha A' . b[i]^T + beta c[i] for the n products of
 * pxl_matmul_multi (checked) where each would take the tiled kernels on
 * 8-bit A alone (a_q8, M > QMV_MAX_NCOL, kmm8_fits), A' = A or, with
 * o->norm, rmsnorm(A) * norm: A' is made and rounded once (kmm8_round; qa8n
 * for the norm, the sums and operations of pxl_rmsnorm's kernel) and every
 * product's tiles read that (kmm8_mul, or kmm8_mul_n for a run of products
 * of one matrix's rows that kmm8_span finds), where each product alone
 * would round it (and normalize it) again. Taken (*taken = 1) only where no
 * operand needs a copy to be bound (A on 16 bytes; A and every b[i] in
 * buffers apart from every c[j]'s), so that the rounding and the products
 * go into one recorder; else nothing is recorded. */
pxl_status pxl_matmul_multi_q8(pxl_ctx *ctx, const pxl_tensor *a, size_t n, const pxl_tensor *const *b,
                               pxl_tensor *const *c, const pxl_matmul_options *o, int *taken) {
    *taken = 0;
    if (!o->a_q8 || o->bias || o->trans_a || !o->trans_b || n < 1 || n > PXL_MATMUL_MULTI_MAX ||
        a->offset % 16 != 0 || (n == 1 && !o->norm))
        return PXL_OK;
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    q_shape s[PXL_MATMUL_MULTI_MAX];
    qmm_params p[PXL_MATMUL_MULTI_MAX];
    pxl_op_bindings bd[PXL_MATMUL_MULTI_MAX];
    for (size_t j = 0; j < n; j++)
        if (c[j]->buf == a->buf || (o->norm && c[j]->buf == o->norm->buf)) return PXL_OK;
    for (size_t i = 0; i < n; i++) {
        if (!pxl_dtype_is_quantized(b[i]->dtype)) return PXL_OK;
        for (size_t j = 0; j < n; j++)
            if (c[j]->buf == b[i]->buf) return PXL_OK;
        pxl_status st = q_check(ctx, a, b[i], c[i], o, &s[i]);
        if (st != PXL_OK) return st;
        if (s[i].M <= QMV_MAX_NCOL || a->nelem > UINT32_MAX || c[i]->nelem > UINT32_MAX ||
            b[i]->bytes > UINT32_MAX - 64 || s[i].batch > gi->max_workgroups_per_dimension)
            return PXL_OK;
        p[i] = q_params(&s[i], b[i], o);
        const pxl_tensor *t[3] = {a, b[i], c[i]};
        if ((st = pxl_op_bind(ctx, OP, t, 3, 4u, 1u, &bd[i])) != PXL_OK) return st;
        p[i].off_a = bd[i].off[0];
        p[i].off_b = bd[i].off[1];
        p[i].off_c = bd[i].off[2];
        if (!kmm8_fits(gi, b[i]->dtype, &s[i], &p[i])) return PXL_OK;
    }
    pxl_op_bindings nb;
    if (o->norm) {
        pxl_status st = pxl_op_bind(ctx, OP, &o->norm, 1, 0u, 0u, &nb);
        if (st != PXL_OK) return st;
    }
    *taken = 1;
    pxl_recorder *rec;
    pxl_binding qbind;
    pxl_status st = kmm8_round(ctx, &bd[0], o->norm ? &nb : NULL, o->norm_eps, &s[0], &rec, &qbind);
    for (size_t i = 0; i < n && st == PXL_OK;) {
        size_t j = kmm8_span(ctx, gi, n, b, c, s, p, bd, i);
        if (j - i >= 2) st = kmm8_mul_n(ctx, gi, b[i]->dtype, rec, &qbind, bd, s, p, i, j);
        else st = kmm8_mul(ctx, gi, b[i]->dtype, rec, &qbind, &bd[i].b[1], &bd[i].b[2], &s[i], &p[i]);
        i = j;
    }
    return st;
}

/* ---- gate, up and SwiGLU in one matrix-vector dispatch (pxl_matmul_swiglu) ----------- */

/* out = silu(A' . Wg^T) * (A' . Wu^T) for M <= 4 (matmul_fused.c checked the
 * arguments and chose this path): `w` spans both weight matrices in one
 * buffer, the gate rows start gate_off bytes into it and the up rows up_off
 * bytes. Each row group of qmv / kmv / xmv (override SWIGLU) takes R gate
 * rows and the same R up rows, so ROWS = 2 R; qmv_xs (one row of A, rows
 * it takes) XRB / 2 gate rows and their up rows a step. */
pxl_status pxl_matmul_swiglu_quant(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w, size_t gate_off,
                                   size_t up_off, int64_t F, pxl_tensor *out, const pxl_matmul_options *o) {
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    q_shape s;
    s.K = pxl_t_cols(a);
    s.M = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    s.N = F;
    s.batch = a->ndim == 3 ? a->shape[0] : 1;
    s.batch_a = s.batch;
    s.batch_b = 1;
    s.row_bytes = pxl_dtype_row_bytes(w->dtype, s.K);
    if (a->nelem > UINT32_MAX || out->nelem > UINT32_MAX || w->bytes > UINT32_MAX - 64)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_matmul_swiglu: operands over 2^32 elements or bytes");
    if (s.batch > gi->max_workgroups_per_dimension)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_matmul_swiglu: batch %lld exceeds the device grid",
                        (long long)s.batch);
    const pxl_tensor *t[4] = {a, w, out, o->norm ? o->norm : a};
    pxl_op_bindings bd;
    pxl_status st = pxl_op_bind(ctx, "pxl_matmul_swiglu", t, 4, 4u, 9u, &bd);
    if (st != PXL_OK) return st;
    bd.b[3].binding = 4;
    qmm_params p = {(uint32_t)s.M,
                    (uint32_t)s.N,
                    (uint32_t)s.K,
                    (uint32_t)(s.K / pxl_dtype_block(w->dtype)),
                    (uint32_t)s.row_bytes,
                    (uint32_t)(s.batch_a == 1 ? 0 : s.M * s.K),
                    0,
                    (uint32_t)(s.M * s.N),
                    1.0f,
                    0.0f,
                    bd.off[1] + (uint32_t)up_off, /* rpg: the up rows (SWIGLU) */
                    bd.off[0],
                    bd.off[1] + (uint32_t)gate_off,
                    bd.off[2],
                    bd.off[3],
                    o->norm_eps,
                    0,
                    0, 0, 0, 0, 0, {0, 0}};
    double norm = o->norm != NULL, M = (double)s.M;
    uint32_t g[2] = {0, 0};
    const pxl_tuning *tune = pxl_ctx_tuning(ctx);
    if (s.M == 1 && kmv46_fits(w->dtype, &p)) return kmv46(ctx, gi, w->dtype, &bd, &s, &p, norm, 1, o->a_q8, 0);
    if (!quant_takes(w->dtype, s.M)) {
        int kq = w->dtype == PXL_Q4_K || w->dtype == PXL_Q6_K;
        uint32_t wg = KMV_WG, tpr = kq && tune->kmv_tpr ? tune->kmv_tpr : KMV_TPR;
        while (wg > gi->max_invocations_per_workgroup) wg /= 2;
        if (tpr > wg) tpr = wg;
        /* the plain kernels' rows (kmv: 4 or 2 over M; xmv: 8 over M, at most 4), halved: R gate + R up rows */
        uint32_t rows = kq ? (w->dtype == PXL_Q4_K ? 4u : 2u) / (uint32_t)s.M : 8u / (uint32_t)s.M;
        if (rows > 4) rows = 4;
        uint32_t R = rows / 2 ? rows / 2 : 1;
        if ((st = rows_grid(ctx, &s, (uint64_t)(wg / tpr) * R, g)) != PXL_OK) return st;
        if (kq) {
            pxl_constant k[7] = {{"WG", wg},       {"TPR", tpr},   {"NCOL", M},      {"ROWS", 2.0 * R},
                                 {"KQ6", w->dtype == PXL_Q6_K}, {"NORM", norm}, {"SWIGLU", 1}};
            return pxl_op_dispatch_ub(ctx, "kquant.wgsl", pxl_wgsl_ops_kquant, "kmv", k, 7, &bd, 3, &p, sizeof p, g[0],
                                      g[1], (uint32_t)s.batch);
        }
        pxl_constant k[7] = {{"WG", wg},    {"TPR", tpr},   {"NCOL", M},   {"ROWS", 2.0 * R},
                             {"QT", pxl_xquant_type(w->dtype)}, {"NORM", norm}, {"SWIGLU", 1}};
        return pxl_op_dispatch_ub(ctx, "xquant.wgsl", pxl_wgsl_ops_xquant, "xmv", k, 7, &bd, 3, &p, sizeof p, g[0],
                                  g[1], (uint32_t)s.batch);
    }
    /* one row: qmv_xs's split, XRB / 2 gate rows and their up rows a step */
    xs_launch xl;
    if (s.M == 1 && !tune->qmv_plain && xs_shape(ctx, gi, s.K / PXL_QK, s.N, 1, &xl) && xl.rb >= 2) {
        p.off_u2 = p.rpg; /* the up rows' offset, which qmv, kmv and xmv take in rpg's place */
        return xs_dispatch(ctx, &xl, w->dtype, &s, &p, &bd, norm, 1, 0, xs_q8(tune, o));
    }
    qmv_launch l = qmv_shape(tune, gi, (uint32_t)s.M, s.K / PXL_QK);
    uint32_t R = l.rows;
    while (R > 1 && (2 * R * l.unroll > 16 || 2 * R * l.ncol > 32)) R /= 2;
    while (l.wg > 4 && (uint64_t)l.wg * 2 * R * l.ncol * 4 > gi->max_workgroup_storage_size) l.wg /= 2;
    if (l.tpr > l.wg) l.tpr = l.wg;
    if ((st = rows_grid(ctx, &s, (uint64_t)(l.wg / l.tpr) * R, g)) != PXL_OK) return st;
    bd = pxl_op_bias_binding(&bd); /* qmv declares the bias binding (5), unread without BIAS */
    pxl_constant k[9] = {{"WG", l.wg},          {"TPR", l.tpr},   {"ROWS", 2.0 * R},
                         {"UNROLL", l.unroll},  {"NCOL", l.ncol}, {"Q4", w->dtype != PXL_Q8_0},
                         {"Q5", w->dtype == PXL_Q5_0}, {"NORM", norm}, {"SWIGLU", 1}};
    return pxl_op_dispatch_ub(ctx, "quant.wgsl", pxl_wgsl_ops_quant, "qmv", k, 9, &bd, 3, &p, sizeof p, g[0], g[1],
                              (uint32_t)s.batch);
}

/* ---- two products of one row of A in one dispatch (pxl_matmul_multi) ------------------ */

/* x and y (y may be NULL) as one f32 tensor to bind: x, or the bytes from the
 * lower of the two to the end of the higher (pxl_op_bind reads buf, offset,
 * bytes and dtype). 0 where they lie in two buffers or the span is too large
 * for one binding. */
static int pair_span(const pxl_gpu_info *gi, const pxl_tensor *x, const pxl_tensor *y, pxl_tensor *span) {
    *span = *x;
    if (!y) return 1;
    if (x->buf != y->buf) return 0;
    size_t lo = x->offset < y->offset ? x->offset : y->offset;
    size_t hx = x->offset + x->bytes, hy = y->offset + y->bytes, hi = hx > hy ? hx : hy;
    if (hi - lo + 256 > gi->max_storage_binding_size || hi - lo >= UINT32_MAX / 2) return 0;
    span->offset = lo;
    span->bytes = hi - lo;
    span->nelem = (int64_t)(span->bytes / 4);
    return 1;
}

/* The float offset of view v inside the span bound with offset `off`. */
static uint32_t in_span(const pxl_tensor *span, uint32_t off, const pxl_tensor *v) {
    return v ? off + (uint32_t)((v->offset - span->offset) / 4) : 0;
}

/* c[i] = A' . b[i]^T (+ bias s[i] where not NULL) for i = 0, 1, with alpha,
 * beta and A' = A, or rmsnorm(A) * norm, from o, for one row of A, in one
 * dispatch where one kernel takes both products:
 *   kmv46.wgsl: a Q4_K or Q5_K product and a Q6_K one (in either order; the
 *     first as kmv4q where a_q8 asks and kmv4q would take it alone, else as
 *     kmv4; the second as kmv6q or kmv6 by the same rule); b's offset and
 *     rows on 16 bytes;
 *   qmv_pair.wgsl: two of Q8_0, Q4_0 and Q5_0, rows that qmv_xs takes (both
 *     have K's blocks, so one launch shape), unless the tuning option
 *     qmv_kernel=q turns qmv_xs off.
 * Each product runs in the row groups its own kernel would give it alone, so
 * the floats are those of two pxl_matmul calls (kmv46: but for a product of
 * over KMV4_WIDE_GROUPS workgroups' rows, which kmv46() alone gives narrower
 * groups). The c[i] must be views of one buffer, and so must the s[i] where
 * both are given. The arguments are checked (pxl_matmul_multi). *taken
 * stays 0, and nothing is recorded, where no kernel fits. */
pxl_status pxl_matmul_pair(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *const *b, pxl_tensor *const *c,
                           const pxl_tensor *const *s, const pxl_matmul_options *o, int *taken) {
    static const char op[] = "pxl_matmul_multi";
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    const pxl_tuning *tune = pxl_ctx_tuning(ctx); /* tuning benchmarks only */
    *taken = 0;
    pxl_dtype d0 = b[0]->dtype, d1 = b[1]->dtype;
    int q4k0 = d0 == PXL_Q4_K || d0 == PXL_Q5_K, q4k1 = d1 == PXL_Q4_K || d1 == PXL_Q5_K;
    int kpair = (q4k0 && d1 == PXL_Q6_K) || (q4k1 && d0 == PXL_Q6_K), qpair = legacy_q(d0) && legacy_q(d1);
    if ((!kpair && !qpair) || pxl_t_rows(a) != 1) return PXL_OK;
    int f = kpair && d0 == PXL_Q6_K; /* the first product: the Q4_K / Q5_K one (kmv46), else b[0] */
    const pxl_tensor *b0 = b[f], *b1 = b[!f], *s0 = s ? s[f] : NULL, *s1 = s ? s[!f] : NULL;
    const pxl_tensor *c0 = c[f], *c1 = c[!f];
    int64_t K = pxl_t_cols(a), N0 = pxl_t_cols(c0), N1 = pxl_t_cols(c1);
    pxl_tensor cspan, sspan = *a; /* the bias rows' binding: A again without either */
    if (!pair_span(gi, c0, c1, &cspan)) return PXL_OK;
    if ((s0 || s1) && !pair_span(gi, s0 ? s0 : s1, s0 ? s1 : NULL, &sspan)) return PXL_OK;
    if (a->nelem > UINT32_MAX || b0->bytes > UINT32_MAX - 64 || b1->bytes > UINT32_MAX - 64) return PXL_OK;
    xs_launch xl = {0};
    kmv_launch l4 = {0}, l6 = {0};
    if (qpair) {
        if (tune->qmv_plain || !xs_shape(ctx, gi, K / PXL_QK, N0 + N1, 0, &xl)) return PXL_OK;
    } else {
        /* each part in the shape its own kernel takes alone: kmv4q's or kmv4's, and kmv6q's or kmv6's */
        l4 = kmv_shape(tune, gi, b0->dtype, K, N0, 0, o->a_q8);
        l6 = kmv_shape(tune, gi, PXL_Q6_K, K, N1, 0, o->a_q8);
        /* the module's workgroup memory: kmv4q's, for A's row with Q8A or Q8A2 (else KQ's default 256) */
        if (kmv4q_bytes(l4.q8 || l6.q8 ? K : 256, l4.wg, l4.rows) > gi->max_workgroup_storage_size) return PXL_OK;
        if (pxl_op_offset(ctx, b0) % 16u || pxl_dtype_row_bytes(b0->dtype, K) % 16u) return PXL_OK; /* 16-byte words */
    }
    const pxl_tensor *t[6] = {a, b0, &cspan, o->norm ? o->norm : a, &sspan, b1};
    pxl_op_bindings bd;
    pxl_status st = pxl_op_bind(ctx, op, t, 6, 4u, 9u, &bd);
    if (st != PXL_OK) return st;
    bd.b[3].binding = 4;
    bd.b[4].binding = 5; /* the bias rows, or A again (unread without BIAS and BIAS2) */
    bd.b[5].binding = 6;
    qmm_params p = {1,
                    (uint32_t)N0,
                    (uint32_t)K,
                    (uint32_t)(K / pxl_dtype_block(b0->dtype)),
                    (uint32_t)pxl_dtype_row_bytes(b0->dtype, K),
                    0,
                    0,
                    0,
                    o->alpha,
                    o->beta,
                    qpair ? xl.rb * xl.steps : 0,
                    bd.off[0],
                    bd.off[1],
                    in_span(&cspan, bd.off[2], c0),
                    o->norm ? bd.off[3] : 0,
                    o->norm_eps,
                    in_span(&sspan, bd.off[4], s0),
                    (uint32_t)N1,
                    bd.off[5],
                    in_span(&cspan, bd.off[2], c1),
                    in_span(&sspan, bd.off[4], s1),
                    0,
                    {0, 0}};
    uint32_t g[2] = {0, 0};
    if (qpair) {
        uint64_t per = (uint64_t)(xl.wg / xl.xt) * p.rpg; /* rows a workgroup, both products */
        if ((st = pxl_op_grid(ctx, op, ((uint64_t)N0 + per - 1) / per + ((uint64_t)N1 + per - 1) / per, g)) != PXL_OK)
            return st;
        pxl_constant k[13] = {{"WG", xl.wg},        {"XT", xl.xt},         {"XKCH", xl.kch},
                              {"XRB", xl.rb},       {"Q4", b0->dtype != PXL_Q8_0}, {"Q5", b0->dtype == PXL_Q5_0},
                              {"Q4B", b1->dtype != PXL_Q8_0}, {"Q5B", b1->dtype == PXL_Q5_0},
                              {"NORM", o->norm != NULL}, {"BIAS", s0 != NULL}, {"BIAS2", s1 != NULL},
                              {"Q8A", xs_q8(tune, o)}, {"SGW", xl.sgw}};
        *taken = 1;
        int sg = xl.sgw > 1;
        return pxl_op_dispatch_ub(ctx, sg ? "qmv_pair_sg.wgsl" : "qmv_pair.wgsl",
                                  sg ? pxl_wgsl_ops_qmv_pair_sg : pxl_wgsl_ops_qmv_pair, "qmv_pair", k, 13, &bd, 3, &p,
                                  sizeof p, g[0], g[1], 1);
    }
    uint32_t wg = l4.wg, rows = l4.rows, tpr = l4.tpr, tpr2 = l6.tpr;
    uint64_t per = (uint64_t)(wg / tpr) * rows, per2 = (uint64_t)(wg / tpr2) * rows;
    if ((st = pxl_op_grid(ctx, op, ((uint64_t)N0 + per - 1) / per + ((uint64_t)N1 + per2 - 1) / per2, g)) != PXL_OK)
        return st;
    uint32_t sgw = pxl_mv_sgw(ctx, gi, tpr < tpr2 ? tpr : tpr2);
    pxl_constant k[13] = {{"WG", wg},     {"TPR", tpr},   {"ROWS", rows},  {"NORM", o->norm != NULL},
                          {"SWIGLU", 0},  {"SGW", sgw},   {"BIAS", s0 != NULL}, {"TPR2", tpr2},
                          {"Q8A", l4.q8}, {"KQ", l4.q8 || l6.q8 ? (double)K : 256.0}, {"Q5", b0->dtype == PXL_Q5_K},
                          {"BIAS2", s1 != NULL}, {"Q8A2", l6.q8}};
    *taken = 1;
    return pxl_op_dispatch_ub(ctx, sgw > 1 ? "kmv46_sg.wgsl" : "kmv46.wgsl",
                              sgw > 1 ? pxl_wgsl_ops_kmv46_sg : pxl_wgsl_ops_kmv46, "kmv46", k, 13, &bd, 3, &p,
                              sizeof p, g[0], g[1], 1);
}
