/*
 * Element-wise ops: GPU against the CPU reference.
 * Tolerance: |gpu - cpu| <= 1e-6 + 32 * 2^-23 * |cpu| (4e-6 relative): WGSL's
 * exp is allowed 3 + 2|x| ULP and the GPU erf is an approximation with
 * |error| < 1.2e-7; add, mul and scale are exact and compared exactly.
 */
#include "ops_common.h"

#define REL (32.0 / 8388608.0)

static void one_shape(ops_ctx *o, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    int64_t cols = shape[ndim - 1];
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *row = malloc((size_t)cols * 4);
    ops_fill(a, n, (uint32_t)n, -12.0f, 12.0f);
    ops_fill(b, n, (uint32_t)n + 7u, -3.0f, 3.0f);
    ops_fill(row, cols, 99u, -2.0f, 2.0f);
    if (n > 4) { /* specials propagate as on the CPU */
        a[0] = NAN;
        a[1] = INFINITY;
        a[2] = -INFINITY;
        a[3] = -0.0f;
    }
    pxl_tensor *ta[2], *tb[2], *tr[2], *ty[2];
    pxl_ctx *c[2] = {o->cpu, o->gpu};
    for (int k = 0; k < 2; k++) {
        ta[k] = ops_tensor(c[k], PXL_F32, ndim, shape, a);
        tb[k] = ops_tensor(c[k], PXL_F32, ndim, shape, b);
        tr[k] = ops_tensor(c[k], PXL_F32, 1, &cols, row);
        ty[k] = ops_tensor(c[k], PXL_F32, ndim, shape, NULL);
    }
    const char *names[] = {"gelu_tanh", "gelu_erf", "silu", "scale", "add", "mul", "add_row", "mul_row", "swiglu"};
    for (int op = 0; op < 9; op++) {
        float *r[2];
        for (int k = 0; k < 2; k++) {
            pxl_status s;
            switch (op) {
            case 0: s = pxl_gelu(c[k], ta[k], ty[k], PXL_GELU_TANH); break;
            case 1: s = pxl_gelu(c[k], ta[k], ty[k], PXL_GELU_ERF); break;
            case 2: s = pxl_silu(c[k], ta[k], ty[k]); break;
            case 3: s = pxl_scale(c[k], ta[k], -0.375f, ty[k]); break;
            case 4: s = pxl_add(c[k], ta[k], tb[k], ty[k]); break;
            case 5: s = pxl_mul(c[k], ta[k], tb[k], ty[k]); break;
            case 6: s = pxl_add(c[k], ta[k], tr[k], ty[k]); break;
            case 7: s = pxl_mul(c[k], ta[k], tr[k], ty[k]); break;
            default: s = pxl_swiglu(c[k], ta[k], tb[k], ty[k]); break;
            }
            CHECK_MSG(s == PXL_OK, "%s: %s", names[op], pxl_ctx_error(c[k]));
            r[k] = ops_read(c[k], ty[k]);
        }
        char what[96];
        snprintf(what, sizeof what, "%s n=%lld", names[op], (long long)n);
        int exact = op >= 3 && op <= 7;
        ops_compare(what, r[0], r[1], n, exact ? 0.0 : 1e-6, exact ? 0.0 : REL);
        free(r[0]);
        free(r[1]);
    }
    for (int k = 0; k < 2; k++) {
        pxl_tensor_free(ta[k]);
        pxl_tensor_free(tb[k]);
        pxl_tensor_free(tr[k]);
        pxl_tensor_free(ty[k]);
    }
    free(a);
    free(b);
    free(row);
}

static void bad_args(pxl_ctx *ctx) {
    int64_t s3[1] = {3}, s4[1] = {4}, s2x3[2] = {2, 3};
    pxl_tensor *a = ops_tensor(ctx, PXL_F32, 1, s3, NULL), *b = ops_tensor(ctx, PXL_F32, 1, s4, NULL);
    pxl_tensor *m = ops_tensor(ctx, PXL_F32, 2, s2x3, NULL), *i = ops_tensor(ctx, PXL_I32, 1, s3, NULL);
    CHECK(pxl_add(ctx, a, b, a) == PXL_ERR_INVALID_ARG);            /* shape mismatch */
    CHECK(strstr(pxl_ctx_error(ctx), "pxl_add") != NULL);
    CHECK(pxl_silu(ctx, i, a) == PXL_ERR_INVALID_ARG);              /* dtype */
    CHECK(pxl_silu(ctx, a, m) == PXL_ERR_INVALID_ARG);              /* y shape */
    CHECK(pxl_gelu(ctx, a, a, (pxl_gelu_form)7) == PXL_ERR_INVALID_ARG);
    pxl_tensor *y = ops_tensor(ctx, PXL_F32, 2, s2x3, NULL);
    CHECK(pxl_add(ctx, m, a, y) == PXL_OK);                         /* row broadcast */
    CHECK(pxl_add(ctx, m, b, y) == PXL_ERR_INVALID_ARG);            /* wrong row */
    CHECK(pxl_add(ctx, m, y, y) == PXL_OK);                         /* in place: y is b */
    pxl_tensor_free(a);
    pxl_tensor_free(b);
    pxl_tensor_free(m);
    pxl_tensor_free(i);
    pxl_tensor_free(y);
}

int main(void) {
    ops_ctx o;
    if (!ops_open(&o)) return PXL_SKIP;
    int64_t shapes[][4] = {{1}, {7}, {256}, {257}, {3, 5}, {17, 1023}, {2, 3, 4, 64}, {1000003}};
    int nd[] = {1, 1, 1, 1, 2, 2, 4, 1};
    for (size_t i = 0; i < sizeof nd / sizeof nd[0]; i++) one_shape(&o, nd[i], shapes[i]);
    bad_args(o.cpu);
    bad_args(o.gpu);
    ops_close(&o);
    return test_result("test_ops_elementwise");
}
