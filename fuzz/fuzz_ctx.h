/* The context every fuzz target runs on: the CPU backend, one thread, quiet. */
#ifndef PXL_FUZZ_CTX_H
#define PXL_FUZZ_CTX_H

#include "pxl/core.h"

/* A new context, or NULL if none can be made (the caller frees it). */
static inline pxl_ctx *fuzz_cpu_ctx(void) {
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.n_threads = 1;
    o.quiet = 1;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

#endif
