/* Allocation through the context's hooks. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* NULL context: NULL (no allocator to ask), as for a failed allocation. */
void *pxl_alloc(pxl_ctx *ctx, size_t size) {
    if (!ctx) return NULL;
    return ctx->alloc.alloc(ctx->alloc.user, size ? size : 1);
}

void *pxl_calloc(pxl_ctx *ctx, size_t count, size_t size) {
    size_t total;
    if (!pxl_mul_size(count, size, &total)) return NULL;
    void *p = pxl_alloc(ctx, total);
    if (p) memset(p, 0, total);
    return p;
}

void *pxl_realloc(pxl_ctx *ctx, void *ptr, size_t size) {
    if (!ctx) return NULL;
    return ctx->alloc.realloc(ctx->alloc.user, ptr, size ? size : 1);
}

void pxl_free(pxl_ctx *ctx, void *ptr) {
    if (ptr && ctx) ctx->alloc.free(ctx->alloc.user, ptr);
}

char *pxl_strdup(pxl_ctx *ctx, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = pxl_alloc(ctx, n);
    if (p) memcpy(p, s, n);
    return p;
}

void pxl_copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}
