/*
 * libFuzzer target for the tuning option's parser (pxl_ctx_options.tuning:
 * the CLI's --tune and PXL_TUNE): the input, cut at its first NUL, is the
 * tuning string of a CPU context. A bad string must fail pxl_ctx_create
 * with PXL_ERR_INVALID_ARG and a message; a good one makes the context.
 */
#include "pxl/core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.n_threads = 1;
    o.quiet = 1;
    o.tuning = text;
    pxl_ctx *ctx = NULL;
    pxl_status s = pxl_ctx_create(&o, &ctx);
    if (s != PXL_OK && s != PXL_ERR_INVALID_ARG && s != PXL_ERR_OUT_OF_MEMORY) abort();
    if (s == PXL_ERR_INVALID_ARG && (!ctx || !pxl_ctx_error(ctx)[0])) abort(); /* a message, kept in the context */
    pxl_ctx_free(ctx);
    free(text);
    return 0;
}
