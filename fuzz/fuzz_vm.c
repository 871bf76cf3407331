/*
 * libFuzzer target for the pixel VM as a whole: the input is a .pxi (PNG)
 * file; it is decoded as it is and with every chunk's CRC repaired (almost
 * every mutation of a PNG breaks a CRC, and libpng would stop there, before
 * the validator and the interpreter), validated, and if valid run by the CPU
 * interpreter with a small step budget. A valid program must run without
 * crashing; run-time errors the spec defines (budget, GATHER index) are fine.
 * fuzz_vm_pixels.c reaches the same code without the PNG layer; the GPU
 * interpreter is compared separately by tests/test_vm_gpu.c.
 */
#include "fuzz_ctx.h"
#include "png_crc.h"
#include "pxl/vm.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(pxl_ctx *ctx, const uint8_t *data, size_t size) {
    pxl_image *img = NULL;
    if (pxl_pxi_decode(ctx, data, size, &img) == PXL_OK) {
        if (pxl_vm_validate(ctx, img) == PXL_OK) {
            pxl_vm_options vo = {0};
            vo.max_steps = (uint64_t)1 << 22; /* keep each input fast */
            pxl_status s = pxl_vm_run_cpu(ctx, img, &vo);
            if (s != PXL_OK && s != PXL_ERR_INVALID_ARG) abort(); /* a valid program must run */
        } else if (pxl_ctx_error(ctx)[0] == '\0') {
            abort(); /* every rejection must say why */
        }
    }
    pxl_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    fuzz_png_both(ctx, data, size, check_one);
    pxl_ctx_free(ctx);
    return 0;
}
