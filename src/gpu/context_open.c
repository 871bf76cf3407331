/*
 * pxl_ctx_create: the core part of a context (core/context.c,
 * pxl_ctx_init), then the GPU backend it asks for. It lives here, above
 * core, so that core/ never calls into gpu/: the context only keeps the
 * close function this file leaves in it.
 */
#include "gpu_internal.h"

#include <assert.h>

pxl_status pxl_ctx_create(const pxl_ctx_options *opts, pxl_ctx **out) {
    if (!out) return PXL_ERR_INVALID_ARG;
    pxl_backend b = PXL_BACKEND_CPU;
    pxl_status s = pxl_ctx_init(opts, out, &b);
    if (s != PXL_OK || b == PXL_BACKEND_CPU) return s;
    pxl_ctx *ctx = *out;
    ctx->close_backend = pxl_gpu_close;
    s = pxl_gpu_open(ctx);
    if (s == PXL_OK) {
        ctx->active = PXL_BACKEND_GPU;
        return PXL_OK;
    }
    if (s == PXL_ERR_OUT_OF_MEMORY) {
        pxl_ctx_free(ctx);
        *out = NULL;
        return s;
    }
    pxl_copy_str(ctx->gpu_reason, sizeof ctx->gpu_reason, ctx->error);
    if (b == PXL_BACKEND_GPU) return s;
    pxl_clear_error(ctx); /* AUTO: carry on with the CPU */
    return PXL_OK;
}
