/*
 * libFuzzer target for the pixel VM as a whole: the input is a .pxi (PNG)
 * file; it is decoded, validated, and if valid run by the CPU interpreter with
 * a small step budget. A valid program must run without crashing; run-time
 * errors the spec defines (budget, GATHER index) are fine. The GPU
 * interpreter is compared separately by tests/test_vm_gpu.c.
 */
#include "pxl/vm.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    pxl_ctx_free(ctx);
    return 0;
}
