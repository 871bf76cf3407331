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
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.n_threads = 1;
    o.quiet = 1;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        pxl_ctx_free(ctx);
        return 0;
    }
    check_one(ctx, data, size);
    uint8_t *fixed = fuzz_fix_png_crcs(data, size);
    if (fixed) {
        check_one(ctx, fixed, size);
        free(fixed);
    }
    pxl_ctx_free(ctx);
    return 0;
}
