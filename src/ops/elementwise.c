/* Element-wise ops: GELU (tanh and erf), SiLU, SwiGLU, add/mul with row broadcast, scale.
 * All take views and work in place (y may be any input). */
#include "ops_internal.h"

#include <math.h>

#define EW_WG 256u

typedef struct {
    uint32_t n, cols;
    float s;
    uint32_t off_a, off_b, off_y, pad0, pad1;
} ew_params;
_Static_assert(sizeof(ew_params) == 32, "mirrors struct Params in elementwise.wgsl");

enum { EW_GELU_TANH, EW_GELU_ERF, EW_SILU, EW_SCALE, EW_ADD, EW_MUL, EW_SWIGLU };

/* ---- CPU references -------------------------------------------------------------------- */

typedef struct {
    const float *a, *b;
    float *y;
    int64_t cols; /* b broadcast row length, 0 if same shape */
    float s;
    int op;
} ew_job;

static float silu_ref(float x) { return x / (1.0f + expf(-x)); }

/* Reads a[i] and b[i] before writing y[i], so in place is safe. */
static void ew_range(void *arg, int64_t lo, int64_t hi) {
    ew_job *j = arg;
    for (int64_t i = lo; i < hi; i++) {
        float x = j->a[i];
        float bv = j->b ? j->b[j->cols ? i % j->cols : i] : 0.0f;
        float r;
        switch (j->op) {
        case EW_GELU_TANH: r = 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))); break;
        case EW_GELU_ERF: r = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); break;
        case EW_SILU: r = silu_ref(x); break;
        case EW_SCALE: r = j->s * x; break;
        case EW_ADD: r = x + bv; break;
        case EW_MUL: r = x * bv; break;
        default: r = silu_ref(x) * bv; break;
        }
        j->y[i] = r;
    }
}

/* Checks (the same on every backend), then the CPU loop or one dispatch.
 * b: NULL for unary ops; broadcast_ok: b may be one row of a. */
static pxl_status run(pxl_ctx *ctx, const char *op_name, int op, const char *an, const pxl_tensor *a,
                      const char *bn, const pxl_tensor *b, pxl_tensor *y, float s, int binary, int broadcast_ok) {
    PXL_REQUIRE_CTX(ctx);
    pxl_status st;
    if ((st = pxl_check_dtype(ctx, op_name, an, a, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_dtype(ctx, op_name, "y", y, PXL_F32)) != PXL_OK) return st;
    if ((st = pxl_check_output(ctx, op_name, "y", y)) != PXL_OK) return st;
    if ((st = pxl_check_same_shape(ctx, op_name, an, a, "y", y)) != PXL_OK) return st;
    if ((st = pxl_check_overlap(ctx, op_name, "y", y, an, a, 1)) != PXL_OK) return st;
    int64_t cols = 0;
    if (binary) {
        if ((st = pxl_check_dtype(ctx, op_name, bn, b, PXL_F32)) != PXL_OK) return st;
        if (broadcast_ok && b->nelem == pxl_t_cols(a) && b->nelem != a->nelem) cols = b->nelem;
        else if ((st = pxl_check_same_shape(ctx, op_name, an, a, bn, b)) != PXL_OK) return st;
        if ((st = pxl_check_overlap(ctx, op_name, "y", y, bn, b, !cols)) != PXL_OK) return st;
    }
    if (!pxl_on_gpu(ctx)) {
        ew_job j = {a->host, binary ? b->host : NULL, y->host, cols, s, op};
        pxl_parallel_range(ctx, a->nelem, 16384, ew_range, &j);
        return PXL_OK;
    }
    if (a->nelem > UINT32_MAX - 3)
        return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, "%s: more than 2^32 - 4 elements on the GPU", op_name);
    /* vec4 when every view starts on a vec4 and y's last vec4 is its own */
    int y_tail_free = a->nelem % 4 == 0 || y->offset + y->bytes == y->st->bytes;
    int vec = y_tail_free && pxl_op_offset(ctx, a) % 4 == 0 && (!binary || pxl_op_offset(ctx, b) % 4 == 0) &&
              pxl_op_offset(ctx, y) % 4 == 0;
    /* exactly in place: y bound once (binding 1 unary, 2 binary), a not bound,
     * so it needs no copy to scratch (wgsl/elementwise.wgsl) */
    if (a->st == y->st && a->offset == y->offset) {
        const pxl_tensor *t[2] = {binary ? b : y, y};
        size_t n = binary ? 2 : 1;
        pxl_op_bindings bd;
        if ((st = pxl_op_bind(ctx, op_name, t, n, 1u << (n - 1), vec ? (binary ? 1u : 0u) : 0u, &bd)) != PXL_OK)
            return st;
        for (size_t i = 0; i < n; i++) bd.b[i].binding = (uint32_t)i + 1;
        ew_params p = {(uint32_t)a->nelem, (uint32_t)cols, s, bd.off[n - 1], binary ? bd.off[0] : 0, bd.off[n - 1], 0, 0};
        pxl_constant k[2] = {{"WG", EW_WG}, {"OP", op}};
        uint64_t items = vec ? ((uint64_t)a->nelem + 3) / 4 : (uint64_t)a->nelem;
        uint32_t g[2];
        if ((st = pxl_op_grid(ctx, op_name, (items + EW_WG - 1) / EW_WG, g)) != PXL_OK) return st;
        const char *entry = binary ? (vec ? "ew4i" : "ew1i") : (vec ? "ew4ui" : "ew1ui");
        return pxl_op_dispatch_ub(ctx, "elementwise.wgsl", pxl_wgsl_ops_elementwise, entry, k, 2, &bd, binary ? 3u : 2u,
                                  &p, sizeof p, g[0], g[1], 1);
    }
    /* binary: (a, b, y) and params at 3; unary: (a, y) and params at 2 */
    const pxl_tensor *t[3] = {a, binary ? b : y, y};
    size_t n = binary ? 3 : 2;
    pxl_op_bindings bd;
    if ((st = pxl_op_bind(ctx, op_name, t, n, 1u << (n - 1), vec ? (binary ? 3u : 1u) : 0u, &bd)) != PXL_OK) return st;
    ew_params p = {(uint32_t)a->nelem, (uint32_t)cols, s, bd.off[0], binary ? bd.off[1] : 0, bd.off[n - 1], 0, 0};
    pxl_constant k[2] = {{"WG", EW_WG}, {"OP", op}};
    uint64_t items = vec ? ((uint64_t)a->nelem + 3) / 4 : (uint64_t)a->nelem;
    const char *entry = binary ? (vec ? "ew4" : "ew1") : (vec ? "ew4u" : "ew1u");
    return pxl_op_dispatch(ctx, "elementwise.wgsl", pxl_wgsl_ops_elementwise, entry, k, 2, &bd, &p, sizeof p,
                           (items + EW_WG - 1) / EW_WG);
}

pxl_status pxl_gelu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, pxl_gelu_form form) {
    if (ctx && form != PXL_GELU_TANH && form != PXL_GELU_ERF)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_gelu: unknown form %d", (int)form);
    return run(ctx, "pxl_gelu", form == PXL_GELU_ERF ? EW_GELU_ERF : EW_GELU_TANH, "x", x, NULL, NULL, y, 0, 0, 0);
}
pxl_status pxl_silu(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y) {
    return run(ctx, "pxl_silu", EW_SILU, "x", x, NULL, NULL, y, 0, 0, 0);
}
pxl_status pxl_scale(pxl_ctx *ctx, const pxl_tensor *x, float s, pxl_tensor *y) {
    return run(ctx, "pxl_scale", EW_SCALE, "x", x, NULL, NULL, y, s, 0, 0);
}
pxl_status pxl_add(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y) {
    return run(ctx, "pxl_add", EW_ADD, "a", a, "b", b, y, 0, 1, 1);
}
pxl_status pxl_mul(pxl_ctx *ctx, const pxl_tensor *a, const pxl_tensor *b, pxl_tensor *y) {
    return run(ctx, "pxl_mul", EW_MUL, "a", a, "b", b, y, 0, 1, 1);
}
pxl_status pxl_swiglu(pxl_ctx *ctx, const pxl_tensor *gate, const pxl_tensor *up, pxl_tensor *y) {
    return run(ctx, "pxl_swiglu", EW_SWIGLU, "gate", gate, "up", up, y, 0, 1, 0);
}
