/*
 * Rotary position embedding: GPU against the CPU reference.
 *
 * Tolerance: |gpu - cpu| <= 1e-6 absolute with inputs in [-1, 1) (8 f32 ulps
 * at 1), at every position. Both backends use the same f32 theta_i (see
 * src/ops/rope.c). The CPU angle is exact to long double; the GPU reduces
 * pos * theta_i exactly in integers (error < 2^-31 turn, 3e-9 rad), rounds
 * the remainder to f32 (< 5e-8 rad) and evaluates f32 polynomials (< 1.2e-7
 * for cos and sin together, with rounding); the two products and the sum of
 * the rotation add at most 3 roundings of 6e-8. That sums to < 4e-7; the
 * tolerance leaves 2.5x headroom. The error does not grow with the position:
 * offset 100000 and positions near 2^31 are checked like offset 0, and the
 * first pair (theta = 1) at position 10^6 is checked against cos(10^6) and
 * sin(10^6) to 1e-6. In place (y = x) gives the same answers on both.
 */
#include "ops_common.h"

#define TOL 1e-6

static double g_worst; /* largest |gpu - cpu| seen, for the summary */

static void track(const float *want, const float *got, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)want[i] - (double)got[i]);
        if (d > g_worst && !isnan(d)) g_worst = d;
    }
}

/* Runs rope on ctx with input data; in place or not; returns the result (malloc'ed). */
static float *run_rope(pxl_ctx *ctx, const int64_t *shape, const float *data, int64_t off, float base,
                       pxl_rope_layout layout, int inplace) {
    pxl_tensor *x = ops_tensor(ctx, PXL_F32, 3, shape, data);
    pxl_tensor *y = inplace ? x : ops_tensor(ctx, PXL_F32, 3, shape, NULL);
    if (!x || !y) return NULL;
    pxl_status s = pxl_rope(ctx, x, y, off, base, layout);
    CHECK_MSG(s == PXL_OK, "pxl_rope: %s", pxl_ctx_error(ctx));
    float *r = ops_read(ctx, y);
    if (y != x) pxl_tensor_free(y);
    pxl_tensor_free(x);
    return r;
}

static void one(ops_ctx *o, int64_t T, int64_t H, int64_t D, int64_t off, float base, pxl_rope_layout layout,
                int specials) {
    int64_t shape[3] = {T, H, D}, n = T * H * D;
    float *x = malloc((size_t)n * sizeof *x);
    ops_fill(x, n, (uint32_t)(n * 31 + D), -1.0f, 1.0f);
    if (specials && n >= 8) {
        x[1] = NAN;      /* its pair gives NaN on both */
        x[n - 1] = NAN;
    }
    float *want = run_rope(o->cpu, shape, x, off, base, layout, 0);
    float *want_ip = run_rope(o->cpu, shape, x, off, base, layout, 1);
    float *got = run_rope(o->gpu, shape, x, off, base, layout, 0);
    float *got_ip = run_rope(o->gpu, shape, x, off, base, layout, 1);
    if (want && want_ip && got && got_ip) {
        char what[160];
        snprintf(what, sizeof what, "rope T=%lld H=%lld D=%lld off=%lld base=%g %s", (long long)T, (long long)H,
                 (long long)D, (long long)off, (double)base, layout == PXL_ROPE_ADJACENT ? "adjacent" : "halves");
        CHECK_MSG(memcmp(want, want_ip, (size_t)n * sizeof *want) == 0, "%s: CPU in place differs", what);
        ops_compare(what, want, got, n, TOL, 0.0);
        strncat(what, " in place", sizeof what - strlen(what) - 1);
        ops_compare(what, want, got_ip, n, TOL, 0.0);
        track(want, got, n);
        track(want, got_ip, n);
    }
    free(x);
    free(want);
    free(want_ip);
    free(got);
    free(got_ip);
}

/* The pair with theta = 1 at position 10^6 against the true cos and sin. */
static void absolute(ops_ctx *o) {
    const double c = 0.93675212753314478699, s = -0.34999350217129293616; /* cos, sin of 10^6 */
    int64_t shape[3] = {1, 1, 4};
    float x[4] = {1.0f, 0.0f, 0.5f, 0.5f};
    pxl_ctx *ctxs[2] = {o->cpu, o->gpu};
    for (int k = 0; k < 2; k++) {
        float *y = run_rope(ctxs[k], shape, x, 1000000, 10000.0f, PXL_ROPE_ADJACENT, 0);
        if (!y) continue;
        CHECK_MSG(fabs(y[0] - c) < 1e-6 && fabs(y[1] - s) < 1e-6, "%s: cos/sin(1e6) = %.9f %.9f",
                  k ? "gpu" : "cpu", (double)y[0], (double)y[1]);
        free(y);
    }
}

static void bad_args(pxl_ctx *ctx) {
    int64_t s3[3] = {2, 3, 8}, s3b[3] = {2, 3, 6}, s3odd[3] = {2, 3, 5}, s2[2] = {6, 8};
    pxl_tensor *x = ops_tensor(ctx, PXL_F32, 3, s3, NULL), *yb = ops_tensor(ctx, PXL_F32, 3, s3b, NULL);
    pxl_tensor *xo = ops_tensor(ctx, PXL_F32, 3, s3odd, NULL), *x2 = ops_tensor(ctx, PXL_F32, 2, s2, NULL);
    pxl_tensor *xi = ops_tensor(ctx, PXL_I32, 3, s3, NULL), *y = ops_tensor(ctx, PXL_F32, 3, s3, NULL);
    CHECK(pxl_rope(ctx, x, y, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_OK);
    CHECK(pxl_rope(ctx, x, yb, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG); /* shape */
    CHECK(strstr(pxl_ctx_error(ctx), "pxl_rope") != NULL);
    CHECK(pxl_rope(ctx, xi, y, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG); /* dtype */
    CHECK(strstr(pxl_ctx_error(ctx), "x") != NULL);
    CHECK(pxl_rope(ctx, x, xi, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rope(ctx, xo, xo, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG); /* odd D */
    CHECK(pxl_rope(ctx, x2, x2, 0, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG); /* not [T, H, D] */
    CHECK(pxl_rope(ctx, x, y, 0, 10000.0f, (pxl_rope_layout)2) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rope(ctx, x, y, 0, 0.5f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rope(ctx, x, y, 0, NAN, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rope(ctx, x, y, 0, INFINITY, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_rope(ctx, x, y, 2147483647LL, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG); /* t = 1 */
    CHECK(pxl_rope(ctx, x, y, 2147483646LL, 10000.0f, PXL_ROPE_ADJACENT) == PXL_OK);
    CHECK(pxl_rope(ctx, x, y, -2147483648LL, 10000.0f, PXL_ROPE_ADJACENT) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_finish(ctx) == PXL_OK);
    pxl_tensor_free(x);
    pxl_tensor_free(yb);
    pxl_tensor_free(xo);
    pxl_tensor_free(x2);
    pxl_tensor_free(xi);
    pxl_tensor_free(y);
}

int main(void) {
    ops_ctx o;
    if (!ops_open(&o)) return PXL_SKIP;
    const int64_t Ts[] = {1, 5, 64}, Hs[] = {1, 3, 8}, Ds[] = {2, 64, 128}, offs[] = {0, 100000};
    const float bases[] = {10000.0f, 500000.0f};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                for (int d = 0; d < 2; d++)
                    for (int e = 0; e < 2; e++)
                        for (int l = 0; l < 2; l++)
                            one(&o, Ts[a], Hs[b], Ds[c], offs[d], bases[e], (pxl_rope_layout)l, 0);
    /* more than one dispatch of 768 pairs, odd head counts, NaN, extreme and negative positions */
    for (int l = 0; l < 2; l++) {
        one(&o, 3, 5, 1600, 7, 10000.0f, (pxl_rope_layout)l, 1);
        one(&o, 4, 2, 96, 2147483647LL - 3, 500000.0f, (pxl_rope_layout)l, 1);
        one(&o, 6, 9, 64, -1000003, 10000.0f, (pxl_rope_layout)l, 1);
        one(&o, 33, 2, 256, 999000, 1.0f, (pxl_rope_layout)l, 0);
    }
    absolute(&o);
    bad_args(o.cpu);
    bad_args(o.gpu);
    fprintf(stderr, "largest |gpu - cpu|: %.3g (tolerance %.3g)\n", g_worst, TOL);
    ops_close(&o);
    return test_result("test_ops_rope");
}
