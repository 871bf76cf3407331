/*
 * ops/dot: the CPU reference against a long-double sum, determinism across
 * thread counts, and (argument "gpu") the GPU path against the CPU one.
 *
 * GPU tolerance: |gpu - cpu| <= 1e-5 * sum|a_i b_i|. The GPU sums in f32: each
 * invocation's chain is at most ~n/(1024*256) vec4 steps, then two tree
 * reductions of depth 8 and a pass over <= 1024 partials per chunk, so the
 * worst-case bound is about (n/262144 + 30) * 2^-24 relative to sum|a_i b_i|,
 * 2.3e-6 at n = 2^24. 1e-5 leaves margin without hiding a wrong sum (a single
 * dropped or doubled element moves the result by ~1/n of the scale, far more).
 */
#include "check.h"
#include "test_ctx.h"
#include "pxl/ops.h"

#include <math.h>
#include <string.h>

static void fill(float *a, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = (float)((int32_t)(seed >> 8) - (1 << 23)) / (float)(1 << 23); /* [-1, 1) */
    }
}

static long double exact(const float *a, const float *b, size_t n, long double *scale) {
    long double s = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        long double p = (long double)a[i] * (long double)b[i];
        s += p;
        m += fabsl(p);
    }
    *scale = m;
    return s;
}


static const size_t k_sizes[] = {1, 2, 3, 4, 5, 7, 255, 256, 257, 1023, 65535, 65536, 65537,
                                 131071, (1u << 20) + 1, (1u << 24) + 3};

static void test_cpu(void) {
    pxl_ctx *c1 = test_ctx(PXL_BACKEND_CPU, 1), *c3 = test_ctx(PXL_BACKEND_CPU, 3);
    size_t nmax = (1u << 24) + 3;
    float *a = malloc(nmax * sizeof *a), *b = malloc(nmax * sizeof *b);
    fill(a, nmax, 1);
    fill(b, nmax, 2);
    for (size_t k = 0; k < sizeof k_sizes / sizeof k_sizes[0]; k++) {
        size_t n = k_sizes[k];
        float r1 = 0, r3 = 0;
        CHECK(pxl_dot_cpu(c1, a, b, n, &r1) == PXL_OK);
        CHECK(pxl_dot_cpu(c3, a, b, n, &r3) == PXL_OK);
        CHECK_MSG(memcmp(&r1, &r3, sizeof r1) == 0, "n=%zu: 1 thread %.9g, 3 threads %.9g", n, (double)r1, (double)r3);
        long double scale, e = exact(a, b, n, &scale);
        /* f64 accumulation of exact products: within one f32 rounding plus f64 noise */
        long double err = fabsl((long double)r1 - e);
        CHECK_MSG(err <= fabsl(e) * 6e-8L + scale * 1e-15L, "n=%zu: cpu %.9g exact %.12Lg", n, (double)r1, e);
    }
    float z = 1;
    CHECK(pxl_dot(c1, a, b, 0, &z) == PXL_OK && z == 0.0f);
    free(a);
    free(b);
    pxl_ctx_free(c1);
    pxl_ctx_free(c3);
}

static int same_class(float x, float y) {
    if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
    if (isinf(x) || isinf(y)) return x == y;
    return 1;
}

static void test_special(pxl_ctx *ctx, const char *who) {
    enum { N = 1031 };
    float a[N], b[N];
    struct { int ia; float va; int ib; float vb; const char *what; } cases[] = {
        {5, NAN, -1, 0, "NaN in a"},
        {N - 1, INFINITY, N - 1, 2.0f, "+Inf * 2 in the tail"},
        {7, -INFINITY, 7, 3.0f, "-Inf * 3"},
        {9, INFINITY, 9, 0.0f, "Inf * 0"},
        {3, INFINITY, 1000, INFINITY, "Inf*1 + 1*Inf"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int i = 0; i < N; i++) a[i] = b[i] = 1.0f;
        a[cases[c].ia] = cases[c].va;
        if (cases[c].ib >= 0) b[cases[c].ib] = cases[c].vb;
        float ref = 0, got = 0;
        CHECK(pxl_dot_cpu(ctx, a, b, N, &ref) == PXL_OK);
        CHECK(pxl_dot(ctx, a, b, N, &got) == PXL_OK);
        CHECK_MSG(same_class(ref, got), "%s: %s: cpu %g, %s %g", who, cases[c].what, (double)ref, who, (double)got);
    }
    /* +Inf and -Inf products together give NaN */
    for (int i = 0; i < N; i++) a[i] = b[i] = 1.0f;
    a[1] = INFINITY;
    a[600] = -INFINITY;
    float ref = 0, got = 0;
    CHECK(pxl_dot_cpu(ctx, a, b, N, &ref) == PXL_OK && isnan(ref));
    CHECK(pxl_dot(ctx, a, b, N, &got) == PXL_OK);
    CHECK_MSG(isnan(got), "%s: Inf - Inf gave %g", who, (double)got);
}

static int test_gpu(void) {
    pxl_ctx *ctx = test_gpu_ctx();
    if (!ctx) return PXL_SKIP;
    /* 2^25 + 5 floats is 128 MiB + 20 bytes: more than llvmpipe's 128 MiB binding, so
     * that size runs in two chunks there */
    size_t nmax = (1u << 25) + 5;
    float *a = malloc(nmax * sizeof *a), *b = malloc(nmax * sizeof *b);
    fill(a, nmax, 3);
    fill(b, nmax, 4);
    size_t sizes[sizeof k_sizes / sizeof k_sizes[0] + 1];
    memcpy(sizes, k_sizes, sizeof k_sizes);
    sizes[sizeof k_sizes / sizeof k_sizes[0]] = nmax;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        float ref = 0, got = 0;
        CHECK(pxl_dot_cpu(ctx, a, b, n, &ref) == PXL_OK);
        pxl_status s = pxl_dot(ctx, a, b, n, &got);
        CHECK_MSG(s == PXL_OK, "n=%zu: %s", n, pxl_ctx_error(ctx));
        double scale = 0;
        for (size_t i = 0; i < n; i++) scale += fabs((double)a[i] * (double)b[i]);
        double err = fabs((double)got - (double)ref);
        CHECK_MSG(err <= 1e-5 * scale, "n=%zu: gpu %.9g cpu %.9g rel.err %.3g", n, (double)got, (double)ref, err / scale);
    }
    /* exact small-integer case: every partial sum is exact, so results are equal */
    for (size_t i = 0; i < 100003; i++) a[i] = (float)(i % 7), b[i] = (float)(i % 5) - 2.0f;
    float r1, r2;
    CHECK(pxl_dot_cpu(ctx, a, b, 100003, &r1) == PXL_OK);
    CHECK(pxl_dot(ctx, a, b, 100003, &r2) == PXL_OK);
    CHECK_MSG(r1 == r2, "integer dot: cpu %.9g gpu %.9g", (double)r1, (double)r2);
    test_special(ctx, "gpu");
    free(a);
    free(b);
    pxl_ctx_free(ctx);
    return -1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "gpu") == 0) {
        int r = test_gpu();
        if (r == PXL_SKIP) return r;
        return test_result("test_ops_dot gpu");
    }
    test_cpu();
    pxl_ctx *ctx = test_ctx(PXL_BACKEND_CPU, 2);
    test_special(ctx, "cpu");
    pxl_ctx_free(ctx);
    return test_result("test_ops_dot cpu");
}
