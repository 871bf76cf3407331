/*
 * Embedding lookup: out[i, :] = table[ids[i], :] for f32, f16, bf16, Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K tables
 * (wgsl/embedding.wgsl on the GPU; Q4_K and Q6_K in wgsl/kquant.wgsl, Q4_1,
 * Q5_0, Q5_1, Q5_K, Q2_K and Q3_K in wgsl/xquant.wgsl). An id outside the table gives a row of NaN on every
 * backend (the GPU cannot refuse data it has not read back).
 */
#include "ops_internal.h"

#include <math.h>
#include <string.h>

#define EMB_WG 256u

typedef struct {
    uint32_t n, D, V, row_bytes;
    uint32_t off_t, off_ids, off_out, pad; /* view offsets (pxl_op_bind) */
} emb_params;
_Static_assert(sizeof(emb_params) == 32, "mirrors struct Params in embedding.wgsl");

/* The uniform block of kquant.wgsl and xquant.wgsl, for their kemb / xemb entries. */
typedef struct {
    uint32_t M, N, K, nb, row_bytes, stride_a, stride_b, stride_c;
    float alpha, beta;
    uint32_t rpg, off_a, off_b, off_c, pad2, pad3;
    uint32_t pad4[8]; /* common/qmm_params.wgsl's last two rows (the bias rows, a pair's second product), unused */
} kemb_params;
_Static_assert(sizeof(kemb_params) == 96, "mirrors struct Params in kquant.wgsl and xquant.wgsl");

typedef struct {
    pxl_ctx *ctx;
    const uint8_t *table;
    const int32_t *ids;
    float *out;
    pxl_dtype dt;
    int64_t D, V;
    size_t row_bytes;
} emb_job;

static void emb_range(void *arg, int64_t lo, int64_t hi) {
    const emb_job *j = arg;
    for (int64_t i = lo; i < hi; i++) {
        float *y = j->out + i * j->D;
        if (j->ids[i] < 0 || j->ids[i] >= j->V) {
            for (int64_t k = 0; k < j->D; k++) y[k] = NAN;
            continue;
        }
        const uint8_t *row = j->table + (size_t)j->ids[i] * j->row_bytes;
        if (j->dt == PXL_F32) {
            memcpy(y, row, (size_t)j->D * sizeof *y);
        } else if (j->dt == PXL_F16) {
            for (int64_t k = 0; k < j->D; k++) {
                uint16_t h;
                memcpy(&h, row + 2 * k, 2);
                y[k] = pxl_f16_to_f32(h);
            }
        } else {
            pxl_dequantize(j->ctx, j->dt, row, j->row_bytes, y, j->D); /* bf16 and blocks; cannot fail: checked sizes */
        }
    }
}

pxl_status pxl_embedding(pxl_ctx *ctx, const pxl_tensor *table, const pxl_tensor *ids, pxl_tensor *out) {
    static const char *op = "pxl_embedding";
    pxl_status st;
    PXL_REQUIRE_CTX(ctx);
    if ((st = pxl_check_tensor(ctx, op, "table", table)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op, "ids", ids, PXL_I32)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op, "out", out, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_output(ctx, op, "out", out)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "out", out, "table", table, 0)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "out", out, "ids", ids, 0)) != PXL_OK) return st;
    if (table->dtype != PXL_F32 && table->dtype != PXL_F16 && table->dtype != PXL_BF16 &&
        !pxl_dtype_is_quantized(table->dtype))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: table is %s (f32, f16, bf16 or a GGUF block format expected)", op,
                        pxl_dtype_name(table->dtype));
    if (table->ndim != 2)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: table has %d dimensions, expected 2 ([V, D])", op,
                        table->ndim);
    int64_t V = table->shape[0], D = table->shape[1], n = ids->nelem;
    if (ids->ndim != 1)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: ids has %d dimensions, expected 1 ([n])", op, ids->ndim);
    if (out->ndim != 2 || out->shape[0] != n || out->shape[1] != D)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out must be [%lld, %lld] ([n, D])", op, (long long)n,
                        (long long)D);
    size_t row_bytes = pxl_dtype_row_bytes(table->dtype, D);

    if (!pxl_on_gpu(ctx)) {
        emb_job j = {ctx, table->host, ids->host, out->host, table->dtype, D, V, row_bytes};
        int64_t min_rows = 1 + 16384 / D;
        pxl_parallel_range(ctx, n, min_rows, emb_range, &j);
        return PXL_OK;
    }

    if (out->nelem > UINT32_MAX || table->nelem > UINT32_MAX || table->bytes > UINT32_MAX - 64)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: tensors over 2^32 elements or bytes", op);
    uint32_t V32 = V > UINT32_MAX ? UINT32_MAX : (uint32_t)V;
    const pxl_gpu_info *gi = pxl_gpu_get_info(ctx);
    pxl_op_bindings bd;
    uint32_t wg = gi->max_invocations_per_workgroup >= EMB_WG ? EMB_WG : 64u;
    if (pxl_dtype_is_quantized(table->dtype) && table->dtype != PXL_Q8_0 && table->dtype != PXL_Q4_0) {
        /* kquant.wgsl's kemb (xquant.wgsl's xemb): eight outputs per invocation; ids bound first, the table as B */
        const pxl_tensor *kt[3] = {ids, table, out};
        if ((st = pxl_op_bind(ctx, op, kt, 3, 4u, 0u, &bd)) != PXL_OK) return st;
        kemb_params kp = {(uint32_t)n, V32, (uint32_t)D, (uint32_t)(D / pxl_dtype_block(table->dtype)), (uint32_t)row_bytes, 0, 0, 0, 1, 0,
                          0, bd.off[0], bd.off[1], bd.off[2], 0, 0, {0, 0, 0, 0}};
        uint64_t groups = ((uint64_t)out->nelem / 8 + wg - 1) / wg;
        if (table->dtype == PXL_Q4_K || table->dtype == PXL_Q6_K) {
            pxl_constant kk[2] = {{"WG", wg}, {"KQ6", table->dtype == PXL_Q6_K ? 1 : 0}};
            return pxl_op_dispatch(ctx, "kquant.wgsl", pxl_wgsl_ops_kquant, "kemb", kk, 2, &bd, &kp, sizeof kp,
                                   groups);
        }
        /* Q4_1, Q5_0, Q5_1, Q5_K, Q2_K, Q3_K: xquant.wgsl's xemb, the same bindings and params */
        double qt = pxl_xquant_type(table->dtype);
        pxl_constant kx[2] = {{"WG", wg}, {"QT", qt}};
        return pxl_op_dispatch(ctx, "xquant.wgsl", pxl_wgsl_ops_xquant, "xemb", kx, 2, &bd, &kp, sizeof kp, groups);
    }
    double dt = table->dtype == PXL_F32    ? 0
                : table->dtype == PXL_F16  ? 1
                : table->dtype == PXL_Q8_0 ? 2
                : table->dtype == PXL_Q4_0 ? 3
                                           : 4; /* bf16 */
    pxl_constant k[2] = {{"WG", wg}, {"DT", dt}};
    const pxl_tensor *t[3] = {table, ids, out};
    if ((st = pxl_op_bind(ctx, op, t, 3, 4u, 0u, &bd)) != PXL_OK) return st;
    emb_params p = {(uint32_t)n, (uint32_t)D, V32, (uint32_t)row_bytes, bd.off[0], bd.off[1], bd.off[2], 0};
    uint64_t groups = ((uint64_t)out->nelem + wg - 1) / wg;
    return pxl_op_dispatch(ctx, "embedding.wgsl", pxl_wgsl_ops_embedding, "embedding", k, 2, &bd, &p, sizeof p,
                           groups);
}
