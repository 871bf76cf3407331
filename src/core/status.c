/* Status names, backend names and the context's error message. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *pxl_status_str(pxl_status s) {
    switch (s) {
    case PXL_OK: return "PXL_OK";
    case PXL_ERR_INVALID_ARG: return "PXL_ERR_INVALID_ARG";
    case PXL_ERR_OUT_OF_MEMORY: return "PXL_ERR_OUT_OF_MEMORY";
    case PXL_ERR_IO: return "PXL_ERR_IO";
    case PXL_ERR_FORMAT: return "PXL_ERR_FORMAT";
    case PXL_ERR_UNSUPPORTED: return "PXL_ERR_UNSUPPORTED";
    case PXL_ERR_NO_LIBRARY: return "PXL_ERR_NO_LIBRARY";
    case PXL_ERR_NO_ADAPTER: return "PXL_ERR_NO_ADAPTER";
    case PXL_ERR_GPU: return "PXL_ERR_GPU";
    case PXL_ERR_SHADER: return "PXL_ERR_SHADER";
    case PXL_ERR_DEVICE_LOST: return "PXL_ERR_DEVICE_LOST";
    case PXL_ERR_TIMEOUT: return "PXL_ERR_TIMEOUT";
    }
    return "PXL_ERR_(unknown)";
}

pxl_status pxl_backend_parse(const char *text, pxl_backend *out) {
    if (!text) return PXL_ERR_INVALID_ARG;
    if (strcmp(text, "auto") == 0) *out = PXL_BACKEND_AUTO;
    else if (strcmp(text, "gpu") == 0) *out = PXL_BACKEND_GPU;
    else if (strcmp(text, "cpu") == 0) *out = PXL_BACKEND_CPU;
    else return PXL_ERR_INVALID_ARG;
    return PXL_OK;
}

const char *pxl_backend_name(pxl_backend b) {
    switch (b) {
    case PXL_BACKEND_AUTO: return "auto";
    case PXL_BACKEND_GPU: return "gpu";
    case PXL_BACKEND_CPU: return "cpu";
    }
    return "?";
}

pxl_status pxl_failv(pxl_ctx *ctx, pxl_status s, const char *fmt, va_list ap) {
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    return s;
}

pxl_status pxl_fail(pxl_ctx *ctx, pxl_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pxl_failv(ctx, s, fmt, ap);
    va_end(ap);
    return s;
}

void pxl_append_error(pxl_ctx *ctx, const char *fmt, ...) {
    size_t used = strlen(ctx->error);
    if (used + 1 >= sizeof ctx->error) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error + used, sizeof ctx->error - used, fmt, ap);
    va_end(ap);
}

void pxl_clear_error(pxl_ctx *ctx) { ctx->error[0] = '\0'; }

const char *pxl_ctx_error(const pxl_ctx *ctx) { return ctx->error; }
