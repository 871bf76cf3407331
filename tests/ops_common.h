/*
 * Helpers for the differential op tests (test-backend-ops style): every op
 * runs on a CPU context and on a GPU context with the same inputs, and the
 * results are compared with a tolerance stated per op.
 */
#ifndef PXL_TESTS_OPS_COMMON_H
#define PXL_TESTS_OPS_COMMON_H

#include "check.h"
#include "test_ctx.h"
#include "pxl/ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    pxl_ctx *cpu, *gpu;
} ops_ctx;

/* Opens both contexts; returns 0 (and prints why) if there is no GPU. */
static inline int ops_open(ops_ctx *o) {
    o->cpu = test_ctx(PXL_BACKEND_CPU, 0);
    o->gpu = o->cpu ? test_gpu_ctx() : NULL;
    if (!o->gpu) {
        pxl_ctx_free(o->cpu);
        o->cpu = NULL;
        return 0;
    }
    return 1;
}

static inline void ops_close(ops_ctx *o) {
    pxl_ctx_free(o->cpu);
    pxl_ctx_free(o->gpu);
}

/* Deterministic uniform floats in [lo, hi). */
static inline void ops_fill(float *x, int64_t n, uint32_t seed, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)(seed >> 8) / 16777216.0f;
    }
}

/* A tensor in ctx holding `data` (bytes must match). NULL on failure (a CHECK fails). */
static inline pxl_tensor *ops_tensor(pxl_ctx *ctx, pxl_dtype dt, int ndim, const int64_t *shape,
                                     const void *data) {
    pxl_tensor *t = NULL;
    pxl_status s = pxl_tensor_create(ctx, dt, ndim, shape, &t);
    CHECK_MSG(s == PXL_OK, "tensor_create: %s", pxl_ctx_error(ctx));
    if (s != PXL_OK) return NULL;
    if (data) {
        s = pxl_tensor_write(ctx, t, data, pxl_tensor_bytes(t));
        CHECK_MSG(s == PXL_OK, "tensor_write: %s", pxl_ctx_error(ctx));
    }
    return t;
}

/* Reads a tensor into a malloc'ed buffer. */
static inline void *ops_read(pxl_ctx *ctx, const pxl_tensor *t) {
    size_t n = pxl_tensor_bytes(t);
    void *p = malloc(n ? n : 1);
    pxl_status s = pxl_tensor_read(ctx, t, p, n);
    CHECK_MSG(s == PXL_OK, "tensor_read: %s", pxl_ctx_error(ctx));
    return p;
}

/*
 * Compares n floats: |got - want| <= abs_tol + rel_tol * |want|, and NaN/Inf
 * must match in class and sign. Reports the first few mismatches. Returns the
 * number of mismatches.
 */
static inline int64_t ops_compare(const char *what, const float *want, const float *got, int64_t n,
                                  double abs_tol, double rel_tol) {
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        float w = want[i], g = got[i];
        int ok;
        if (isnan(w) || isnan(g)) ok = isnan(w) && isnan(g);
        else if (isinf(w) || isinf(g)) ok = w == g;
        else {
            double d = fabs((double)g - (double)w);
            ok = d <= abs_tol + rel_tol * fabs((double)w);
            double r = d / (abs_tol + rel_tol * fabs((double)w));
            if (r > worst) worst = r;
        }
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "%s: [%lld] cpu %.9g gpu %.9g\n", what, (long long)i, (double)w, (double)g);
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "%s: %lld of %lld values outside tolerance\n", what, (long long)bad, (long long)n);
        g_failures++;
    }
    return bad;
}

#endif
