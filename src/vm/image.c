/* RGBA8 images (pxl/vm.h): create, clone, free. All memory through the context. */
#include "vm_internal.h"

#include <assert.h>
#include <string.h>

/* Checks the spec's size cap (section 1); fills *bytes with w * h * 4. */
static pxl_status image_size(pxl_ctx *ctx, uint32_t w, uint32_t h, size_t *bytes) {
    if (w == 0 || h == 0)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "image %ux%u: width and height must be at least 1", w, h);
    if (w > PXL_VM_MAX_SIDE || h > PXL_VM_MAX_SIDE)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "image %ux%u exceeds the %u side cap", w, h,
                        PXL_VM_MAX_SIDE);
    uint64_t pixels = (uint64_t)w * h;
    if (pixels > PXL_VM_MAX_PIXELS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "image %ux%u has %llu pixels, over the %u pixel cap", w, h,
                        (unsigned long long)pixels, PXL_VM_MAX_PIXELS);
    size_t n;
    if (!pxl_mul_size((size_t)w, (size_t)h, &n) || !pxl_mul_size(n, 4, &n))
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "image %ux%u: size overflows", w, h);
    *bytes = n;
    return PXL_OK;
}

/* Allocates an image; zero: clear its pixels. */
static pxl_status image_new(pxl_ctx *ctx, uint32_t w, uint32_t h, int zero, pxl_image **out) {
    size_t bytes = 0;
    pxl_status s = image_size(ctx, w, h, &bytes);
    if (s != PXL_OK) return s;
    pxl_image *img = pxl_alloc(ctx, sizeof *img);
    if (!img)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "out of memory allocating a %ux%u image",
                        w, h);
    img->px = zero ? pxl_calloc(ctx, bytes, 1) : pxl_alloc(ctx, bytes);
    if (!img->px) {
        pxl_free(ctx, img);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY,
                        "out of memory allocating %zu bytes of pixels for a %ux%u image", bytes,
                        w, h);
    }
    img->w = w;
    img->h = h;
    img->ctx = ctx;
    *out = img;
    return PXL_OK;
}

pxl_status pxl_image_create(pxl_ctx *ctx, uint32_t w, uint32_t h, pxl_image **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_image_create", out);
    return image_new(ctx, w, h, 1, out);
}

pxl_status pxl_image_clone(pxl_ctx *ctx, const pxl_image *src, pxl_image **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_image_clone", src);
    PXL_REQUIRE(ctx, "pxl_image_clone", out);
    pxl_image *img = NULL;
    pxl_status s = image_new(ctx, src->w, src->h, 0, &img);
    if (s != PXL_OK) return s;
    memcpy(img->px, src->px, (size_t)src->w * src->h * 4); /* checked by image_new */
    *out = img;
    return PXL_OK;
}

void pxl_image_free(pxl_image *img) {
    if (!img) return;
    pxl_ctx *ctx = img->ctx;
    pxl_free(ctx, img->px);
    pxl_free(ctx, img);
}
