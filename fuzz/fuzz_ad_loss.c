/*
 * libFuzzer target for the robust-loss parser (pxl_ad_loss_parse,
 * src/ad/loss.c): the input up to its first NUL byte is the text. A loss
 * that parses has a known kind and a finite scale > 0 (0 for none); a
 * refusal is PXL_ERR_FORMAT with a message. abort() on anything else.
 */
#include "fuzz_ctx.h"
#include "pxl/ad.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pxl_ctx *ctx = fuzz_cpu_ctx();
    if (!ctx) return 0;
    char *text = malloc(size + 1);
    if (!text) abort();
    if (size) memcpy(text, data, size);
    text[size] = '\0';
    pxl_ad_loss l;
    pxl_status st = pxl_ad_loss_parse(ctx, text, &l);
    if (st == PXL_OK) {
        if ((int)l.kind < PXL_AD_LOSS_NONE || (int)l.kind > PXL_AD_LOSS_TUKEY) abort();
        if (l.kind == PXL_AD_LOSS_NONE ? l.scale != 0 : !(l.scale > 0) || !isfinite(l.scale)) abort();
    } else if (st != PXL_ERR_FORMAT || pxl_ctx_error(ctx)[0] == '\0') {
        abort();
    }
    free(text);
    pxl_ctx_free(ctx);
    return 0;
}
