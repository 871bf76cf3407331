/* TEMPORARY: weak placeholders for ops whose families are being written, so
 * that everything links meanwhile. Each real definition overrides its stub.
 * This file is deleted once all families have landed. */
#include "ops_internal.h"

#define PENDING(name) return pxl_fail(ctx, PXL_ERR_UNSUPPORTED, name ": not built yet")
__attribute__((weak)) pxl_status pxl_softmax(pxl_ctx *ctx, const pxl_tensor *x, pxl_tensor *y, float scale, int causal, int64_t off) { (void)x, (void)y, (void)scale, (void)causal, (void)off; PENDING("pxl_softmax"); }
__attribute__((weak)) pxl_status pxl_rmsnorm(pxl_ctx *ctx, const pxl_tensor *x, const pxl_tensor *w, pxl_tensor *y, float eps) { (void)x, (void)w, (void)y, (void)eps; PENDING("pxl_rmsnorm"); }
__attribute__((weak)) pxl_status pxl_attention(pxl_ctx *ctx, const pxl_tensor *q, const pxl_tensor *k, const pxl_tensor *v, pxl_tensor *y, int64_t kv_len, float scale) { (void)q, (void)k, (void)v, (void)y, (void)kv_len, (void)scale; PENDING("pxl_attention"); }
