/*
 * Fused matrix products for decoding, where one token costs a dispatch per
 * op: the RMSNorm option of pxl_matmul (the checks and the unfused path; the
 * fused kernels are NORM in matmul.wgsl's gemv_t and in the quantized
 * matrix-vector kernels), and pxl_matmul_swiglu, the gate, up and SwiGLU of
 * a feed-forward layer.
 *
 * The fused kernels normalise A as they load it (common/norm_mv.wgsl): each
 * workgroup first computes the inverse RMS of its rows of A from the K floats
 * it is about to read anyway. Where no kernel fuses (the CPU, M > 8, the
 * tiled kernels, B stored [K, N]) the op runs pxl_rmsnorm into a temporary
 * and then the plain product, so the CPU gives exactly the floats of the two
 * ops done one after the other.
 */
#include "ops_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

pxl_status pxl_matmul_check_norm(pxl_ctx *ctx, const char *op, const pxl_tensor *a, const char *cn,
                                 const pxl_tensor *c, const pxl_matmul_options *o) {
    if (!o->norm) return PXL_OK;
    pxl_status st;
    if ((st = pxl_check_dtype(ctx, op, "norm", o->norm, PXL_F32)) != PXL_OK) return st;
    if (o->trans_a)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: norm with trans_a (the norm runs over rows of A stored [M, K])",
                        op);
    if ((st = pxl_check_vec(ctx, op, "norm", o->norm, pxl_t_cols(a))) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, cn, c, "norm", o->norm, 0)) != PXL_OK) return st;
    if (!(o->norm_eps >= 0.0f) || !isfinite(o->norm_eps))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: norm_eps is %g (must be finite and >= 0)", op,
                        (double)o->norm_eps);
    return PXL_OK;
}

/* A temporary f32 tensor of t's shape with `cols` columns (its rows stay). */
static pxl_status temp_like(pxl_ctx *ctx, const pxl_tensor *t, int64_t cols, pxl_tensor **out) {
    int64_t shape[PXL_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[t->ndim - 1] = cols;
    return pxl_tensor_create(ctx, PXL_F32, t->ndim, shape, out);
}

int pxl_matmul_norm_fused(pxl_ctx *ctx, pxl_dtype b, int64_t M, int trans_b) {
    if (!pxl_on_gpu(ctx)) return 0;
    return pxl_dtype_is_quantized(b) ? M <= PXL_QMV_MAX_NCOL : M == 1 && trans_b;
}

pxl_status pxl_matmul_norm_temp(pxl_ctx *ctx, const pxl_tensor *a, const pxl_matmul_options *o, pxl_tensor **an) {
    *an = NULL;
    pxl_status st = temp_like(ctx, a, pxl_t_cols(a), an);
    if (st == PXL_OK) st = pxl_rmsnorm(ctx, a, o->norm, *an, o->norm_eps);
    if (st != PXL_OK) {
        pxl_tensor_free(*an);
        *an = NULL;
    }
    return st;
}

pxl_status pxl_matmul_norm_split(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *c,
                                 const pxl_matmul_options *o) {
    pxl_tensor *an = NULL;
    pxl_status st = pxl_matmul_norm_temp(ctx, a, o, &an);
    if (st == PXL_OK) {
        pxl_matmul_options plain = *o;
        plain.norm = NULL;
        plain.norm_eps = 0.0f;
        plain.bias = NULL; /* pxl_matmul adds it after this returns */
        st = pxl_matmul(ctx, an, b, c, &plain);
    }
    pxl_tensor_free(an); /* recorded GPU work that reads it still completes */
    return st;
}

pxl_status pxl_op_dispatch_ub(pxl_ctx *ctx, const char *label, const char *wgsl, const char *entry,
                              const pxl_constant *constants, size_t n_constants, const pxl_op_bindings *b,
                              uint32_t uniform_binding, const void *params, size_t params_size, uint32_t gx,
                              uint32_t gy, uint32_t gz) {
    pxl_kernel *k;
    pxl_status s = pxl_kernel_get_static(ctx, label, wgsl, entry, constants, n_constants, &k);
    if (s != PXL_OK) return s;
    pxl_recorder *rec;
    if ((s = pxl_gpu_stream(ctx, &rec)) != PXL_OK) return s;
    pxl_dispatch d = {k, b->b, b->n, params, params_size, uniform_binding, {gx, gy, gz}};
    return pxl_recorder_dispatch(rec, &d);
}

/* ---- pxl_matmul_swiglu ------------------------------------------------------------ */

typedef struct {
    int64_t M, K, F, rows; /* rows: of A (and out), all batches */
} sw_shape;

static pxl_status sw_check(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *wg, const pxl_tensor *wu,
                           const pxl_tensor *out, const pxl_matmul_options *o, sw_shape *s) {
    static const char op[] = "pxl_matmul_swiglu";
    pxl_status st;
    if ((st = pxl_check_dtype(ctx, op, "A", a, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_tensor(ctx, op, "w_gate", wg)) != PXL_OK) return st;
    if ((st = pxl_check_tensor(ctx, op, "w_up", wu)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op, "out", out, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_output(ctx, op, "out", out)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "out", out, "A", a, 0)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "out", out, "w_gate", wg, 0)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op, "out", out, "w_up", wu, 0)) != PXL_OK) return st;
    if (wu->dtype != wg->dtype)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: w_up is %s but w_gate is %s (one dtype expected)", op,
                        pxl_dtype_name(wu->dtype), pxl_dtype_name(wg->dtype));
    if (wg->dtype != PXL_F32 && wg->dtype != PXL_F16 && wg->dtype != PXL_BF16 && !pxl_dtype_is_quantized(wg->dtype))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: w_gate is %s (f32, f16, bf16 or a GGUF block format expected)",
                        op, pxl_dtype_name(wg->dtype));
    if (!o->trans_b || o->trans_a)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "%s: the weights are stored [F, K]: trans_b must be set and trans_a not", op);
    if (!(o->alpha == 0.0f || o->alpha == 1.0f) || o->beta != 0.0f)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: alpha must be 1 (or 0, the default) and beta 0", op);
    if (o->bias)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: no bias (add one to the products with pxl_matmul)", op);
    if (wg->ndim != 2 || wu->ndim != 2 || wg->shape[0] != wu->shape[0] || wg->shape[1] != wu->shape[1])
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: w_gate and w_up must both be [F, K] of one shape", op);
    if (a->ndim < 1 || a->ndim > 3 || out->ndim != a->ndim)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: A and out are [M, K] and [M, F] (or [batch, M, .])", op);
    s->F = wg->shape[0];
    s->K = wg->shape[1];
    if (pxl_t_cols(a) != s->K)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: A has K=%lld but the weights have K=%lld", op,
                        (long long)pxl_t_cols(a), (long long)s->K);
    for (int i = 0; i + 1 < a->ndim; i++)
        if (out->shape[i] != a->shape[i])
            return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out's rows do not match A's", op);
    if (pxl_t_cols(out) != s->F)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: out has %lld columns, expected F=%lld", op,
                        (long long)pxl_t_cols(out), (long long)s->F);
    s->M = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    s->rows = pxl_t_rows(a);
    return pxl_matmul_check_norm(ctx, op, a, "out", out, o);
}

/* The unfused path: [rmsnorm,] two products into temporaries, pxl_swiglu. */
static pxl_status sw_split(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *wg, const pxl_tensor *wu,
                           pxl_tensor *out, const pxl_matmul_options *o, const sw_shape *s) {
    pxl_tensor *an = NULL, *g = NULL, *u = NULL;
    pxl_matmul_options plain = {0};
    plain.trans_b = 1;
    plain.a_q8 = o->a_q8;
    pxl_status st = PXL_OK;
    if (o->norm) st = pxl_matmul_norm_temp(ctx, a, o, &an);
    if (st == PXL_OK) st = temp_like(ctx, out, s->F, &g);
    if (st == PXL_OK) st = temp_like(ctx, out, s->F, &u);
    if (st == PXL_OK) st = pxl_matmul(ctx, an ? an : a, wg, g, &plain);
    if (st == PXL_OK) st = pxl_matmul(ctx, an ? an : a, wu, u, &plain);
    if (st == PXL_OK) st = pxl_swiglu(ctx, g, u, out);
    pxl_tensor_free(an);
    pxl_tensor_free(g);
    pxl_tensor_free(u);
    return st;
}

pxl_status pxl_matmul_swiglu(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *w_gate, const pxl_tensor *w_up,
                             pxl_tensor *out, const pxl_matmul_options *opts) {
    PXL_REQUIRE_CTX(ctx);
    pxl_matmul_options o = {0};
    if (opts) o = *opts;
    sw_shape s = {0, 0, 0, 0};
    pxl_status st = sw_check(ctx, a, w_gate, w_up, out, &o, &s);
    if (st != PXL_OK) return st;
    /* one dispatch where both weights lie in one buffer (views of one tensor)
     * and a matrix-vector kernel fits M */
    int q = pxl_dtype_is_quantized(w_gate->dtype);
    if (pxl_on_gpu(ctx) && w_gate->buf == w_up->buf && (q ? s.M <= 4 : s.M == 1)) {
        size_t lo = w_gate->offset < w_up->offset ? w_gate->offset : w_up->offset;
        size_t hg = w_gate->offset + w_gate->bytes, hu = w_up->offset + w_up->bytes, hi = hg > hu ? hg : hu;
        if (hi - lo + 256 <= pxl_gpu_get_info(ctx)->max_storage_binding_size && hi - lo < UINT32_MAX / 2) {
            pxl_tensor span = *w_gate; /* the bytes of both (pxl_op_bind reads buf, offset, bytes, dtype) */
            span.offset = lo;
            span.bytes = hi - lo;
            span.nelem = (int64_t)(span.bytes / (w_gate->dtype == PXL_F32 ? 4 : 2)); /* f32/f16/bf16: elements */
            size_t go = w_gate->offset - lo, uo = w_up->offset - lo;
            return q ? pxl_matmul_swiglu_quant(ctx, a, &span, go, uo, s.F, out, &o)
                     : pxl_matmul_swiglu_dense(ctx, a, &span, go, uo, s.F, out, &o);
        }
    }
    return sw_split(ctx, a, w_gate, w_up, out, &o, &s);
}

/* ---- several products of one A (pxl_matmul_multi) ------------------------------------- */

pxl_status pxl_matmul_multi(pxl_ctx *ctx, const pxl_tensor *a, size_t n, const pxl_tensor *const *b,
                            pxl_tensor *const *c, const pxl_tensor *const *bias, const pxl_matmul_options *opts) {
    static const char op[] = "pxl_matmul_multi";
    PXL_REQUIRE_CTX(ctx);
    if (n < 1 || n > PXL_MATMUL_MULTI_MAX)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: %zu products (1 to %d expected)", op, n, PXL_MATMUL_MULTI_MAX);
    PXL_REQUIRE(ctx, op, b);
    PXL_REQUIRE(ctx, op, c);
    pxl_matmul_options o = {0};
    if (opts) o = *opts;
    if (o.alpha == 0.0f) o.alpha = 1.0f; /* zero is the default */
    if (o.bias)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: opts->bias must be NULL (each product's bias goes in bias[i])",
                        op);
    pxl_status st;
    /* the operands' names in messages (a table: no formatting on every call) */
    static const char *const bn[] = {"b[0]", "b[1]", "b[2]", "b[3]"}, *const cn[] = {"c[0]", "c[1]", "c[2]", "c[3]"};
    static const char *const sj[] = {"bias[0]", "bias[1]", "bias[2]", "bias[3]"};
    _Static_assert(sizeof bn / sizeof bn[0] == PXL_MATMUL_MULTI_MAX, "one name per product");
    for (size_t j = 0; j < n && bias; j++)
        if (bias[j] && (st = pxl_check_tensor(ctx, op, sj[j], bias[j])) != PXL_OK) return st;
    for (size_t i = 0; i < n; i++) {
        if ((st = pxl_check_tensor(ctx, op, bn[i], b[i])) != PXL_OK) return st;
        if ((st = pxl_check_tensor(ctx, op, cn[i], c[i])) != PXL_OK) return st;
        for (size_t j = 0; j < n && bias; j++)
            if (bias[j] && (st = pxl_check_overlap(ctx, op, cn[i], c[i], sj[j], bias[j], 0)) != PXL_OK) return st;
        for (size_t j = 0; j < n; j++) {
            if ((st = pxl_check_overlap(ctx, op, cn[i], c[i], bn[j], b[j], 0)) != PXL_OK) return st;
            if (j > i && (st = pxl_check_overlap(ctx, op, cn[i], c[i], cn[j], c[j], 0)) != PXL_OK) return st;
        }
        o.bias = bias ? bias[i] : NULL;
        if ((st = pxl_matmul_check(ctx, op, a, b[i], c[i], &o)) != PXL_OK) {
            char why[PXL_ERR_MAX];
            snprintf(why, sizeof why, "%s", pxl_ctx_error(ctx));
            return pxl_fail(ctx, st, "%s: product %zu: %s", op, i, why);
        }
    }
    o.bias = NULL;
    int any_bias = 0;
    for (size_t j = 0; j < n && bias; j++) any_bias |= bias[j] != NULL;
    if (pxl_on_gpu(ctx) && !any_bias) { /* prompts on 8-bit A: one rounding of A for all */
        int taken = 0;
        st = pxl_matmul_multi_q8(ctx, a, n, b, c, &o, &taken);
        if (st != PXL_OK || taken) return st;
    }
    if (pxl_on_gpu(ctx) && n == 2 && o.trans_b && !o.trans_a) {
        int taken = 0;
        st = pxl_matmul_pair(ctx, a, b, c, bias, &o, &taken);
        if (st != PXL_OK || taken) return st;
    }
    /* a norm that every product alone would split off as a pxl_rmsnorm of
     * its own (pxl_matmul_norm_fused false): one pxl_rmsnorm for all, the
     * same floats */
    pxl_tensor *an = NULL;
    st = PXL_OK;
    int64_t M = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    int split_all = o.norm != NULL;
    for (size_t i = 0; i < n && split_all; i++)
        if (pxl_matmul_norm_fused(ctx, b[i]->dtype, M, o.trans_b)) split_all = 0;
    if (split_all) {
        if ((st = pxl_matmul_norm_temp(ctx, a, &o, &an)) != PXL_OK) return st;
        o.norm = NULL;
        o.norm_eps = 0.0f;
    }
    for (size_t i = 0; i < n && st == PXL_OK; i++) {
        o.bias = bias ? bias[i] : NULL;
        st = pxl_matmul(ctx, an ? an : a, b[i], c[i], &o);
    }
    pxl_tensor_free(an); /* recorded GPU work that reads it still completes */
    return st;
}
