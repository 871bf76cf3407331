/*
 * Matrix products: C = alpha * op(A) . op(B) + beta * C, batched, any M, N, K.
 * f32 A; f32, f16 or bf16 B (quantized B goes to matmul_quant.c). M = 1 uses the
 * matrix-vector kernels.
 */
#include "ops_internal.h"

#include <string.h>

typedef struct {
    uint32_t M, N, K, off_a;
    uint32_t stride_a, stride_b, stride_c, off_b;
    float alpha, beta;
    uint32_t off_c, off_n; /* off_n: the norm's offset in floats (gemv_t with NORM) */
    float eps;
    uint32_t off_u; /* the up weights' offset (pxl_matmul_swiglu) */
    uint32_t off_s; /* the bias row's offset in floats (hmv with BIAS) */
    uint32_t pad;
} mm_params;
_Static_assert(sizeof(mm_params) == 64, "mirrors struct Params in matmul.wgsl");

typedef struct {
    int64_t batch, M, N, K;
    int64_t batch_a, batch_b; /* 1 or batch */
} mm_shape;

/* One row of A with f16 or bf16 B stored [N, K] (wgsl/hmv.wgsl): B read 16
 * bytes at a time, a row group of TPR invocations per HMV_ROWS rows (with
 * swiglu: HMV_ROWS / 2 gate and as many up rows), HMV_WG invocations a
 * workgroup. TPR is HMV_TPR, doubled up to HMV_TPR_MAX while each invocation
 * keeps at least two 8-element units of a row: an invocation walks its units
 * one after another, so long rows in few row groups (a down product) wait on
 * that chain. H200, 2026-11-28, one call (pxl bench ops, --tune kmv_tpr=32
 * against 128): f16 8192 x 2048 19.76 us against 11.56, 2048 x 2048 7.33
 * against 5.23, 4096 x 14336 30.25 against 30.63; Llama-3.2-1B F16 greedy
 * decode 818 tok/s against 947 and 952. The caller checked K, off_b (and
 * off_u) on 8 elements and bound A and the norm as vec4. The tuning options
 * kmv_wg, kmv_tpr and kmv_rows override the shape, as for kmv4. On a device
 * with subgroups of one size, hmv_sg.wgsl, whose row groups begin their sums
 * by subgroup shuffles (pxl_mv_sgw). */
#define HMV_WG 256u
#define HMV_TPR 32u
#define HMV_TPR_MAX 128u
#define HMV_ROWS 2u

uint32_t pxl_mv_sgw(const pxl_ctx *ctx, const pxl_gpu_info *gi, uint32_t tpr) {
    uint32_t s = gi->subgroup_min_size;
    if (pxl_ctx_tuning(ctx)->mv_sg_off || !gi->has_subgroups || s < 2 || s != gi->subgroup_max_size || (s & (s - 1)))
        return 1;
    return s < tpr ? s : tpr;
}

static pxl_status hmv_dispatch(pxl_ctx *ctx, const pxl_gpu_info *gi, const pxl_op_bindings *bd, const mm_params *p,
                               uint32_t batch, int bf16, int norm, int swiglu, int bias) {
    const pxl_tuning *tune = pxl_ctx_tuning(ctx); /* tuning benchmarks only */
    uint32_t wg = tune->kmv_wg ? tune->kmv_wg : HMV_WG;
    while (wg > gi->max_invocations_per_workgroup) wg /= 2;
    uint32_t tpr = tune->kmv_tpr ? tune->kmv_tpr : HMV_TPR;
    if (!tune->kmv_tpr)
        while (tpr < HMV_TPR_MAX && p->K / 8 >= 4 * (uint64_t)tpr) tpr *= 2;
    if (tpr > wg) tpr = wg;
    uint32_t rows = tune->kmv_rows ? tune->kmv_rows : HMV_ROWS;
    if (swiglu && rows < 2) rows = 2;
    if (swiglu) rows &= ~1u;
    uint64_t per_wg = (uint64_t)(wg / tpr) * (swiglu ? rows / 2 : rows);
    uint32_t g[2];
    pxl_status st = pxl_op_grid(ctx, swiglu ? "pxl_matmul_swiglu" : "pxl_matmul", (p->N + per_wg - 1) / per_wg, g);
    if (st != PXL_OK) return st;
    uint32_t sgw = pxl_mv_sgw(ctx, gi, tpr); /* > 1: hmv_sg.wgsl */
    pxl_constant k[8] = {{"WG", wg},     {"TPR", tpr},       {"ROWS", rows}, {"BF16", bf16},
                         {"NORM", norm}, {"SWIGLU", swiglu}, {"SGW", sgw},   {"BIAS", bias != 0}};
    pxl_op_bindings b5 = pxl_op_bias_binding(bd); /* binding 5: the bias (bd's fifth), or A again */
    return pxl_op_dispatch_ub(ctx, sgw > 1 ? "hmv_sg.wgsl" : "hmv.wgsl", sgw > 1 ? pxl_wgsl_ops_hmv_sg : pxl_wgsl_ops_hmv,
                              "hmv", k, 8, &b5, 3, p, sizeof *p, g[0], g[1], batch);
}

/* gemm's splits of K for a product of `tiles` 128 x 128 tiles and K
 * values: where the tiles alone would leave most of a large GPU idle (fewer
 * than GEMM_SPLIT_TILES: one 256-invocation workgroup a compute unit, 132 of
 * them on an H200), enough splits to reach that many, each at least
 * GEMM_SPLIT_STEPS steps of 16 along K, at most 8 (the tuning option
 * gemm_split=N caps them; 1: none); the caller fits them to the device
 * (pxl_splitk_fit). A prompt's output and down products (512 rows of 2048
 * outputs: 64 tiles) take 2. Measured on an H200: see docs/BENCHMARKS.md,
 * "Split K in the f32, f16 and bf16 GEMM". */
#define GEMM_SPLIT_TILES 128u
#define GEMM_SPLIT_STEPS 16u
static uint32_t gemm_split(const pxl_ctx *ctx, uint64_t tiles, int64_t K) {
    uint32_t cap = pxl_ctx_tuning(ctx)->gemm_split ? pxl_ctx_tuning(ctx)->gemm_split : 8u, split = 1;
    uint64_t steps = ((uint64_t)K + 15) / 16;
    while (split < cap && tiles * split < GEMM_SPLIT_TILES && steps / (split * 2u) >= GEMM_SPLIT_STEPS) split *= 2u;
    return split;
}

/* op(X) dims: rows x cols of the stored matrix, per its last two dims. */
static pxl_status shapes(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, const pxl_tensor *c,
                         const pxl_matmul_options *o, mm_shape *s) {
    if (a->ndim > 3 || b->ndim > 3 || c->ndim > 3)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_matmul: operands have at most 3 dimensions ([batch,] rows, cols)");
    int64_t ar = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, ac = a->shape[a->ndim - 1];
    int64_t br = b->ndim >= 2 ? b->shape[b->ndim - 2] : 1, bc = b->shape[b->ndim - 1];
    int64_t cr = c->ndim >= 2 ? c->shape[c->ndim - 2] : 1, cc = c->shape[c->ndim - 1];
    int64_t ab = a->ndim == 3 ? a->shape[0] : 1, bb = b->ndim == 3 ? b->shape[0] : 1;
    int64_t cb = c->ndim == 3 ? c->shape[0] : 1;
    s->M = o->trans_a ? ac : ar;
    s->K = o->trans_a ? ar : ac;
    int64_t kb = o->trans_b ? bc : br;
    s->N = o->trans_b ? br : bc;
    if (kb != s->K)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_matmul: A has K=%lld but B has K=%lld", (long long)s->K,
                        (long long)kb);
    if (cr != s->M || cc != s->N)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_matmul: C is %lldx%lld, expected %lldx%lld",
                        (long long)cr, (long long)cc, (long long)s->M, (long long)s->N);
    s->batch = cb;
    if ((ab != 1 && ab != cb) || (bb != 1 && bb != cb))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "pxl_matmul: batch sizes A=%lld B=%lld C=%lld (A and B must match C or be 1)",
                        (long long)ab, (long long)bb, (long long)cb);
    s->batch_a = ab;
    s->batch_b = bb;
    return PXL_OK;
}

/* ---- CPU: B stored [N, K] without trans_a goes to matmul_cpu.c (tiled,
 * decoded once per 64 rows of A, AVX2 where there is). The rest, here:
 * threads over output rows of every batch. B stored [K, N]: row-axpy order
 * (contiguous, vectorisable); trans_a with B [N, K]: dot products of
 * contiguous rows with four accumulators. ---------------------------------- */

typedef struct {
    const float *a, *b;
    float *c;
    mm_shape s;
    pxl_matmul_options o;
} mm_job;

static void mm_rows(void *arg, int64_t lo, int64_t hi) {
    const mm_job *j = arg;
    const mm_shape *s = &j->s;
    int64_t K = s->K, N = s->N, M = s->M;
    float alpha = j->o.alpha, beta = j->o.beta;
    for (int64_t r = lo; r < hi; r++) { /* r = batch * M + m */
        int64_t bt = r / M, m = r % M;
        const float *a = j->a + (s->batch_a == 1 ? 0 : bt) * M * K;
        const float *b = j->b + (s->batch_b == 1 ? 0 : bt) * K * N;
        float *c = j->c + r * N;
        if (j->o.trans_b) {
            for (int64_t n = 0; n < N; n++) {
                const float *bn = b + n * K;
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int64_t k = 0;
                if (!j->o.trans_a) {
                    const float *am = a + m * K;
                    for (; k + 4 <= K; k += 4) {
                        s0 += am[k] * bn[k];
                        s1 += am[k + 1] * bn[k + 1];
                        s2 += am[k + 2] * bn[k + 2];
                        s3 += am[k + 3] * bn[k + 3];
                    }
                    for (; k < K; k++) s0 += am[k] * bn[k];
                } else {
                    for (; k < K; k++) s0 += a[k * M + m] * bn[k];
                }
                float acc = (s0 + s1) + (s2 + s3);
                c[n] = beta != 0.0f ? alpha * acc + beta * c[n] : alpha * acc;
            }
        } else {
            if (beta == 0.0f) memset(c, 0, (size_t)N * sizeof *c);
            else for (int64_t n = 0; n < N; n++) c[n] *= beta;
            for (int64_t k = 0; k < K; k++) {
                float av = alpha * (j->o.trans_a ? a[k * M + m] : a[m * K + k]);
                const float *bk = b + k * N;
                for (int64_t n = 0; n < N; n++) c[n] += av * bk[n];
            }
        }
    }
}

/* The checks every product takes: the operands' kinds, C apart from A and B,
 * the norm; and B's dtype */
static pxl_status operand_checks(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const pxl_tensor *b,
                                 const pxl_tensor *c, const pxl_matmul_options *o) {
    pxl_status st;
    if ((st = pxl_check_dtype(ctx, op, "A", a, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_tensor(ctx, op, "B", b)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op, "C", c, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_output(ctx, op, "C", c)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "C", c, "A", a, 0)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "C", c, "B", b, 0)) != PXL_OK) return st;
    if ((st = pxl_matmul_check_norm(ctx, op, a, "C", c, o)) != PXL_OK) return st;
    if (!pxl_dtype_is_quantized(b->dtype) && b->dtype != PXL_F32 && b->dtype != PXL_F16 && b->dtype != PXL_BF16)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: B is %s (f32, f16, bf16 or a GGUF block format expected)", op,
                        pxl_dtype_name(b->dtype));
    return PXL_OK;
}

/* o->bias (when set): an f32 row of C's N elements, not overlapping C */
static pxl_status bias_checks(pxl_ctx *ctx, const char *op, const pxl_tensor *c, const pxl_matmul_options *o) {
    pxl_status st;
    if (!o->bias) return PXL_OK;
    if ((st = pxl_check_dtype(ctx, op, "bias", o->bias, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op, "C", c, PXL_F32)) != PXL_OK) return st;
    if (o->bias->nelem != pxl_t_cols(c))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: bias has %lld elements, C has N=%lld columns", op,
                        (long long)o->bias->nelem, (long long)pxl_t_cols(c));
    return pxl_check_overlap(ctx, op, "C", c, "bias", o->bias, 0);
}

pxl_status pxl_matmul_check(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const pxl_tensor *b,
                            const pxl_tensor *c, const pxl_matmul_options *o) {
    pxl_status st = operand_checks(ctx, op, a, b, c, o);
    if (st == PXL_OK) st = bias_checks(ctx, op, c, o);
    if (st != PXL_OK) return st;
    if (pxl_dtype_is_quantized(b->dtype)) return pxl_matmul_quant_check(ctx, a, b, c, o);
    mm_shape s;
    return shapes(ctx, a, b, c, o, &s);
}

/* pxl_matmul without its bias checks: the product, with o->bias added where a
 * kernel stores C with it (*bias_done set), else left to pxl_matmul. */
static pxl_status matmul_run(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                             const pxl_matmul_options *opts, int *bias_done) {
    static const char op[] = "pxl_matmul";
    pxl_matmul_options o = *opts;
    pxl_status st = operand_checks(ctx, op, a, b, c, &o);
    if (st != PXL_OK) return st;
    if (pxl_dtype_is_quantized(b->dtype)) return pxl_matmul_quant(ctx, a, b, c, &o, bias_done);
    mm_shape s;
    if ((st = shapes(ctx, a, b, c, &o, &s)) != PXL_OK) return st;
    if (o.norm && !pxl_matmul_norm_fused(ctx, b->dtype, s.M, o.trans_b)) /* fused only into gemv_t */
        return pxl_matmul_norm_split(ctx, a, b, c, &o);

    if (!pxl_on_gpu(ctx) && o.trans_b && !o.trans_a) { /* B [N, K]: the weights' layout (matmul_cpu.c) */
        size_t esz = b->dtype == PXL_F32 ? 4 : 2;
        pxl_cpu_bt p = {a->host, b->host, c->host, b->dtype, s.batch, s.batch_a, s.batch_b, s.M, s.N, s.K,
                        (size_t)s.K * esz, o.alpha, o.beta, 0};
        pxl_cpu_matmul_bt(ctx, &p);
        return PXL_OK;
    }
    if (!pxl_on_gpu(ctx)) {
        float *bf = NULL; /* f16 / bf16 B is widened once */
        if (b->dtype != PXL_F32) {
            bf = pxl_calloc(ctx, (size_t)b->nelem, sizeof *bf);
            if (!bf) return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "pxl_matmul: out of memory widening %s B",
                                     pxl_dtype_name(b->dtype));
            const uint16_t *h = b->host;
            if (b->dtype == PXL_F16)
                for (int64_t i = 0; i < b->nelem; i++) bf[i] = pxl_f16_to_f32(h[i]);
            else
                for (int64_t i = 0; i < b->nelem; i++) bf[i] = pxl_bf16_to_f32(h[i]);
        }
        mm_job j = {a->host, bf ? bf : b->host, c->host, s, o};
        int64_t min_rows = 1 + 65536 / (s.N * s.K);
        pxl_parallel_range(ctx, s.batch * s.M, min_rows, mm_rows, &j);
        pxl_free(ctx, bf);
        return PXL_OK;
    }

    if (a->nelem > UINT32_MAX || b->nelem > UINT32_MAX || c->nelem > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_matmul: operands over 2^32 elements");
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    if (s.batch > gi->max_workgroups_per_dimension)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_matmul: batch %lld exceeds the device grid",
                        (long long)s.batch);
    /* gemv_t (M = 1, trans_b) binds a fourth tensor at binding 4: the norm
     * (override NORM), or A again (bound, not read); hmv a fifth at 5: the
     * bias (override BIAS), or A again */
    int gemv_t = s.M == 1 && o.trans_b;
    int f16 = b->dtype == PXL_F16, bf16 = b->dtype == PXL_BF16;
    int hmv = gemv_t && (f16 || bf16) && s.K % 8 == 0; /* A and the norm then read as vec4 */
    const pxl_tensor *t[5] = {a, b, c, o.norm ? o.norm : a, o.bias && hmv ? o.bias : a};
    pxl_op_bindings bd;
    if ((st = pxl_op_bind(ctx, op, t, hmv ? 5 : gemv_t ? 4 : 3, 4u, hmv ? 9u : 0u, &bd)) != PXL_OK) return st;
    mm_params p = {(uint32_t)s.M, (uint32_t)s.N, (uint32_t)s.K, bd.off[0],
                   (uint32_t)(s.batch_a == 1 ? 0 : s.M * s.K), (uint32_t)(s.batch_b == 1 ? 0 : s.K * s.N),
                   (uint32_t)(s.M * s.N), bd.off[1], o.alpha, o.beta, bd.off[2], 0, o.norm_eps, 0,
                   hmv ? bd.off[4] : 0, 0};
    uint32_t maxd = gi->max_workgroups_per_dimension;

    if (s.M == 1) {
        uint32_t wg = gi->max_invocations_per_workgroup >= 256 ? 256 : gi->max_invocations_per_workgroup;
        if (o.trans_b) {
            bd.b[3].binding = 4;
            p.off_n = bd.off[3];
            if (hmv) bd.b[4].binding = 5;
            if (hmv && p.off_b % 8 == 0) {
                *bias_done = o.bias != NULL;
                return hmv_dispatch(ctx, gi, &bd, &p, (uint32_t)s.batch, bf16, o.norm != NULL, 0, o.bias != NULL);
            }
            if (bd.n > 4) bd.n = 4; /* gemv_t declares no bias binding */
            uint32_t rows = 4;
            uint32_t g[2];
            st = pxl_op_grid(ctx, "pxl_matmul", ((uint64_t)s.N + rows - 1) / rows, g);
            if (st != PXL_OK) return st;
            pxl_constant k[5] = {{"WG", wg}, {"ROWS", rows}, {"B_F16", f16}, {"B_BF16", bf16}, {"NORM", o.norm != NULL}};
            return pxl_op_dispatch_ub(ctx, "matmul.wgsl", pxl_wgsl_ops_matmul, "gemv_t", k, 5, &bd, 3, &p, sizeof p,
                                      g[0], g[1], (uint32_t)s.batch);
        }
        uint32_t g[2];
        st = pxl_op_grid(ctx, "pxl_matmul", ((uint64_t)s.N + wg - 1) / wg, g);
        if (st != PXL_OK) return st;
        pxl_constant k[3] = {{"WG", wg}, {"B_F16", f16}, {"B_BF16", bf16}};
        return pxl_op_dispatch3(ctx, "matmul.wgsl", pxl_wgsl_ops_matmul, "gemv_n", k, 3, &bd, &p, sizeof p, g[0], g[1],
                                (uint32_t)s.batch);
    }
    int check = !(s.M % 128 == 0 && s.N % 128 == 0 && s.K % 16 == 0);
    uint64_t gx = ((uint64_t)s.N + 127) / 128, gy = ((uint64_t)s.M + 127) / 128;
    if (gx > maxd || gy > maxd)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "pxl_matmul: %lldx%lld output exceeds the device grid",
                        (long long)s.M, (long long)s.N);
    pxl_splitk sk = {NULL, 0, (uint32_t)s.M, (uint32_t)s.N, (uint32_t)s.batch, p.off_c, p.stride_c, o.alpha, o.beta};
    sk.split = pxl_splitk_fit(gi, &sk, gemm_split(ctx, gx * gy * (uint64_t)s.batch, s.K), gx);
    pxl_constant k[6] = {{"TRANS_A", o.trans_a != 0}, {"TRANS_B", o.trans_b != 0}, {"B_F16", f16},
                         {"B_BF16", bf16}, {"CHECK", check}, {"SPLITK", sk.split}};
    if (sk.split == 1)
        return pxl_op_dispatch3(ctx, "matmul.wgsl", pxl_wgsl_ops_matmul, "gemm", k, 5, &bd, &p, sizeof p,
                                (uint32_t)gx, (uint32_t)gy, (uint32_t)s.batch);
    /* the splits' raw sums into recorder scratch, then kmm8_sum into C */
    pxl_recorder *rec; /* after pxl_op_bind, which may submit a full stream */
    pxl_kernel *kern;
    pxl_binding mb[3] = {bd.b[0], bd.b[1], {0}};
    mb[0].binding = 0;
    mb[1].binding = 1;
    if ((st = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return st;
    if ((st = pxl_splitk_scratch(rec, &sk, &mb[2])) != PXL_OK) return st;
    if ((st = pxl_kernel_get_static(ctx, "matmul.wgsl", pxl_wgsl_ops_matmul, "gemm", k, 6, &kern)) != PXL_OK)
        return st;
    pxl_dispatch d = {kern, mb, 3, &p, sizeof p, 3, {(uint32_t)(gx * sk.split), (uint32_t)gy, (uint32_t)s.batch}};
    if ((st = pxl_recorder_dispatch(rec, &d)) != PXL_OK) return st;
    return pxl_splitk_sum(ctx, rec, &sk, &bd.b[2]);
}

pxl_status pxl_matmul(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                      const pxl_matmul_options *opts) {
    static const char op[] = "pxl_matmul";
    PXL_REQUIRE_CTX(ctx);
    pxl_matmul_options o = {0};
    o.alpha = 1.0f;
    if (opts) {
        o = *opts;
        if (o.alpha == 0.0f) o.alpha = 1.0f; /* zero is the default */
    }
    pxl_status st;
    if ((st = bias_checks(ctx, op, c, &o)) != PXL_OK) return st;
    int done = 0;
    if ((st = matmul_run(ctx, a, b, c, &o, &done)) != PXL_OK || !o.bias || done) return st;
    /* the bias row after the product: pxl_add of the bias read with C's
     * shape when C is one row, else as one row [N] broadcast over C's rows
     * (a copy of its descriptor with another shape: the same memory) */
    pxl_tensor row = *o.bias;
    if (c->nelem == row.nelem) {
        row.ndim = c->ndim;
        memcpy(row.shape, c->shape, sizeof row.shape);
    } else {
        row.ndim = 1;
        row.shape[0] = row.nelem;
    }
    return pxl_add(ctx, c, &row, c);
}

/* out = silu(a . Wg^T) * (a . Wu^T) for M = 1 with f32 / f16 / bf16 weights
 * (matmul_fused.c checked the arguments and chose this path): `w` spans both
 * weight matrices in one buffer, the gate rows start gate_off bytes into it
 * and the up rows up_off bytes. gemv_t with SWIGLU: each workgroup takes 2
 * gate rows and the same 2 up rows (ROWS = 4, as the plain product). */
pxl_status pxl_matmul_swiglu_dense(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w, size_t gate_off,
                                   size_t up_off, int64_t F, pxl_tensor *out, const pxl_matmul_options *o) {
    static const char op[] = "pxl_matmul_swiglu";
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    int64_t K = pxl_t_cols(a), batch = a->ndim == 3 ? a->shape[0] : 1;
    if (a->nelem > UINT32_MAX || w->nelem > UINT32_MAX || out->nelem > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: operands over 2^32 elements", op);
    if (batch > gi->max_workgroups_per_dimension)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: batch %lld exceeds the device grid", op, (long long)batch);
    const pxl_tensor *t[4] = {a, w, out, o->norm ? o->norm : a};
    int hmv = w->dtype != PXL_F32 && K % 8 == 0; /* A and the norm then read as vec4 */
    pxl_op_bindings bd;
    pxl_status st = pxl_op_bind(ctx, op, t, 4, 4u, hmv ? 9u : 0u, &bd);
    if (st != PXL_OK) return st;
    bd.b[3].binding = 4;
    uint32_t esz = w->dtype == PXL_F32 ? 4 : 2;
    mm_params p = {1, (uint32_t)F, (uint32_t)K, bd.off[0], (uint32_t)(batch == 1 ? 0 : K), 0, (uint32_t)F,
                   bd.off[1] + (uint32_t)(gate_off / esz), 1.0f, 0.0f, bd.off[2], bd.off[3], o->norm_eps,
                   bd.off[1] + (uint32_t)(up_off / esz), 0, 0};
    if (hmv && p.off_b % 8 == 0 && p.off_u % 8 == 0)
        return hmv_dispatch(ctx, gi, &bd, &p, (uint32_t)batch, w->dtype == PXL_BF16, o->norm != NULL, 1, 0);
    uint32_t wg = gi->max_invocations_per_workgroup >= 256 ? 256 : gi->max_invocations_per_workgroup, g[2];
    if ((st = pxl_op_grid(ctx, op, ((uint64_t)F + 1) / 2, g)) != PXL_OK) return st;
    pxl_constant k[6] = {{"WG", wg}, {"ROWS", 4}, {"B_F16", w->dtype == PXL_F16}, {"B_BF16", w->dtype == PXL_BF16},
                         {"NORM", o->norm != NULL}, {"SWIGLU", 1}};
    return pxl_op_dispatch_ub(ctx, "matmul.wgsl", pxl_wgsl_ops_matmul, "gemv_t", k, 6, &bd, 3, &p, sizeof p, g[0], g[1],
                              (uint32_t)batch);
}
