/* Element-wise ops: GELU (tanh and erf), SiLU, SwiGLU, add/mul with row broadcast, scale. */
#include "ops_internal.h"

#include <math.h>

#define EW_WG 256u

typedef struct {
    uint32_t n4, cols;
    float s;
    uint32_t form;
} ew_params;
_Static_assert(sizeof(ew_params) == 16, "mirrors struct Params in elementwise.wgsl");

/* ---- CPU references -------------------------------------------------------------------- */

typedef struct {
    const float *a, *b;
    float *y;
    int64_t cols; /* b broadcast row length, 0 if same shape */
    float s;
    int op;       /* 0 gelu-tanh 1 gelu-erf 2 silu 3 scale 4 add 5 mul 6 swiglu */
} ew_job;

static float silu_ref(float x) { return x / (1.0f + expf(-x)); }

static void ew_range(void *arg, int64_t lo, int64_t hi) {
    ew_job *j = arg;
    for (int64_t i = lo; i < hi; i++) {
        float x = j->a[i];
        float bv = j->b ? j->b[j->cols ? i % j->cols : i] : 0.0f;
        float r;
        switch (j->op) {
        case 0: r = 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))); break;
        case 1: r = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); break;
        case 2: r = silu_ref(x); break;
        case 3: r = j->s * x; break;
        case 4: r = x + bv; break;
        case 5: r = x * bv; break;
        default: r = silu_ref(x) * bv; break;
        }
        j->y[i] = r;
    }
}

static pxl_status run(pxl_ctx *ctx, const char *op_name, const char *entry, int op, const pxl_tensor *a,
                      const pxl_tensor *b, pxl_tensor *y, float s, int broadcast_ok) {
    pxl_status st;
    if ((st = pxl_check_dtype(ctx, op_name, "x", a, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op_name, "y", y, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_same_shape(ctx, op_name, "x", a, "y", y)) != PXL_OK) return st;
    int64_t cols = 0;
    if (b) {
        if ((st = pxl_check_dtype(ctx, op_name, "b", b, PXL_F32)) != PXL_OK) return st;
        if (broadcast_ok && b->nelem == pxl_t_cols(a) && b->nelem != a->nelem) cols = b->nelem;
        else if ((st = pxl_check_same_shape(ctx, op_name, "a", a, "b", b)) != PXL_OK) return st;
        if (b == y) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the output may not be an input", op_name);
    }
    if (a == y && pxl_on_gpu(ctx))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "%s: the output may not be an input", op_name);
    if (a->nelem > UINT32_MAX)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^32 elements", op_name);
    if (!pxl_on_gpu(ctx)) {
        ew_job j = {a->host, b ? b->host : NULL, y->host, cols, s, op};
        pxl_parallel_range(ctx, a->nelem, 16384, ew_range, &j);
        return PXL_OK;
    }
    uint64_t n4 = ((uint64_t)a->nelem + 3) / 4;
    ew_params p = {(uint32_t)n4, (uint32_t)cols, s, op == 1 ? 1u : 0u};
    pxl_constant wg = {"WG", EW_WG};
    uint64_t groups = (n4 + EW_WG - 1) / EW_WG;
    if (b) {
        const pxl_tensor *t[3] = {a, b, y};
        return pxl_op_dispatch(ctx, "elementwise.wgsl", pxl_wgsl_ops_elementwise, entry, &wg, 1, t, 3, &p,
                               sizeof p, groups);
    }
    const pxl_tensor *t[2] = {a, y};
    return pxl_op_dispatch(ctx, "elementwise.wgsl", pxl_wgsl_ops_elementwise, entry, &wg, 1, t, 2, &p, sizeof p,
                           groups);
}

pxl_status pxl_gelu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, pxl_gelu_form form) {
    if (form != PXL_GELU_TANH && form != PXL_GELU_ERF)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_gelu: unknown form %d", (int)form);
    return run(ctx, "pxl_gelu", "gelu", form == PXL_GELU_ERF ? 1 : 0, x, NULL, y, 0, 0);
}
pxl_status pxl_silu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y) {
    return run(ctx, "pxl_silu", "silu", 2, x, NULL, y, 0, 0);
}
pxl_status pxl_scale(pxl_ctx *ctx, const pxl_tensor *x, float s, pxl_tensor *y) {
    return run(ctx, "pxl_scale", "scale", 3, x, NULL, y, s, 0);
}
pxl_status pxl_add(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y) {
    return run(ctx, "pxl_add", "add", 4, a, b, y, 0, 1);
}
pxl_status pxl_mul(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y) {
    return run(ctx, "pxl_mul", "mul", 5, a, b, y, 0, 1);
}
pxl_status pxl_swiglu(pxl_ctx *ctx, const pxl_tensor *gate, const pxl_tensor *up, pxl_tensor *y) {
    return run(ctx, "pxl_swiglu", "swiglu", 6, gate, up, y, 0, 0);
}
