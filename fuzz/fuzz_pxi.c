/*
 * libFuzzer target for the .pxi (PNG) decoder. Each input is decoded twice:
 * as it is, and with every chunk's CRC recomputed (so that mutations get past
 * the CRC checks into IHDR, the zlib stream and the row filters). When a
 * decode succeeds, the image is encoded, decoded again and must come back
 * with the same pixels; a refusal must leave a message. abort() on any
 * mismatch. Everything is freed, so leaks show up under ASan.
 */
#include "fuzz_ctx.h"
#include "png_crc.h"
#include "pxl/vm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(pxl_ctx *ctx, const uint8_t *data, size_t size) {
    pxl_image *img = NULL;
    pxl_status s = pxl_pxi_decode(ctx, data, size, &img);
    if (s != PXL_OK) {
        if (img != NULL || pxl_ctx_error(ctx)[0] == '\0') abort();
        return;
    }
    if (!img || img->w == 0 || img->h == 0 || img->w > PXL_VM_MAX_SIDE ||
        img->h > PXL_VM_MAX_SIDE || (uint64_t)img->w * img->h > PXL_VM_MAX_PIXELS)
        abort();
    uint8_t *png = NULL;
    size_t len = 0;
    if (pxl_pxi_encode(ctx, img, &png, &len) != PXL_OK) abort();
    pxl_image *back = NULL;
    if (pxl_pxi_decode(ctx, png, len, &back) != PXL_OK) abort();
    if (back->w != img->w || back->h != img->h ||
        memcmp(back->px, img->px, (size_t)img->w * img->h * 4) != 0)
        abort();
    pxl_image_free(back);
    pxl_free(ctx, png);
    pxl_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    fuzz_png_both(ctx, data, size, check_one);
    pxl_ctx_free(ctx);
    return 0;
}
