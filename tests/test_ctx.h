/* Contexts for the tests: quiet ones, and a GPU one that says why it is missing. */
#ifndef PXL_TESTS_TEST_CTX_H
#define PXL_TESTS_TEST_CTX_H

#include "pxl/core.h"
#include "pxl/gpu.h"

#include <stdio.h>
#include <stdlib.h>

/* A quiet context on backend b with `threads` CPU threads (0: all cores), the
 * given tuning option (test_ctx: $PXL_TUNE, as the pxl tool reads it; ctest
 * sets cpu_simd=0 for the plain-C run of the op cases) and, with $PXL_TEST_UNCHECKED=1, the GPU
 * kernels without Dawn's bounds checks (pxl_ctx_options.gpu_unchecked, as the
 * GGUF commands run them); NULL if it cannot be made. */
static inline pxl_ctx *test_ctx_tuned(pxl_backend b, int threads, const char *tuning) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = b;
    o.n_threads = threads;
    o.quiet = 1;
    o.tuning = tuning;
    const char *unchecked = getenv("PXL_TEST_UNCHECKED");
    o.gpu_unchecked = unchecked && unchecked[0] == '1';
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}
static inline pxl_ctx *test_ctx(pxl_backend b, int threads) { return test_ctx_tuned(b, threads, getenv("PXL_TUNE")); }

/* A GPU context, with its adapter printed; NULL, with the reason printed, when
 * there is none (the test then exits PXL_SKIP). */
static inline pxl_ctx *test_gpu_ctx(void) {
    pxl_ctx *ctx = test_ctx(PXL_BACKEND_AUTO, 0);
    if (!ctx || pxl_ctx_backend(ctx) != PXL_BACKEND_GPU) {
        fprintf(stderr, "no GPU adapter: %s\n", ctx ? pxl_ctx_gpu_unavailable_reason(ctx) : "?");
        pxl_ctx_free(ctx);
        return NULL;
    }
    const pxl_gpu_info *i = pxl_gpu_get_info(ctx);
    fprintf(stderr, "adapter: %s (%s, %s%s)\n", i->adapter_name, i->backend, i->feature_level,
            i->unchecked ? ", no bounds checks" : "");
    return ctx;
}

#endif
