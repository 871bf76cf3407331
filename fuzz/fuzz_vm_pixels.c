/*
 * libFuzzer target for the validator and the interpreters' shared decoding,
 * without the PNG layer: the input's bytes are the image's pixels. Byte 0
 * gives the width (1 + byte, so 1..256), the rest are RGBA pixels row by row
 * (the last row zero-padded, at most 256 rows). Every image must survive
 * asm(disasm(img)) == img; an image that validates must run on the CPU
 * interpreter (small step budget) with OK or a run-time error the spec
 * defines, and a refusal must say why. fuzz_vm.c does the same through .pxi
 * files; this one spends no time in libpng and zlib.
 */
#include "fuzz_ctx.h"
#include "pxl/vm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pxl_ctx *g_ctx;

static void die(const char *what, const char *msg) {
    fprintf(stderr, "fuzz_vm_pixels: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_ctx) {
        g_ctx = fuzz_cpu_ctx();
        if (!g_ctx) die("cannot create a context", NULL);
    }
    if (size < 1) return 0;
    uint32_t w = 1u + data[0];
    const uint8_t *px = data + 1;
    size_t n = size - 1, row = (size_t)w * 4;
    uint32_t h = n ? (uint32_t)((n + row - 1) / row) : 1;
    if (h > 256) h = 256, n = row * 256;
    pxl_image *img = NULL;
    if (pxl_image_create(g_ctx, w, h, &img) != PXL_OK) die("image_create", pxl_ctx_error(g_ctx));
    memcpy(img->px, px, n);

    /* any image, valid or not, round-trips through the text format */
    char *text = NULL;
    size_t len = 0;
    pxl_image *back = NULL;
    if (pxl_vm_disasm(g_ctx, img, &text, &len) != PXL_OK) die("disasm failed", pxl_ctx_error(g_ctx));
    if (pxl_vm_asm(g_ctx, text, len, NULL, &back) != PXL_OK) die("asm(disasm(img)) failed", pxl_ctx_error(g_ctx));
    if (back->w != w || back->h != h || memcmp(back->px, img->px, (size_t)w * h * 4) != 0)
        die("asm(disasm(img)) != img", NULL);
    pxl_free(g_ctx, text);
    pxl_image_free(back);

    pxl_status s = pxl_vm_validate(g_ctx, img);
    if (s == PXL_OK) {
        pxl_vm_options vo = {0};
        vo.max_steps = (uint64_t)1 << 20; /* keep each input fast */
        s = pxl_vm_run_cpu(g_ctx, img, &vo);
        if (s != PXL_OK && s != PXL_ERR_INVALID_ARG) die("a valid program failed to run", pxl_ctx_error(g_ctx));
        if (s != PXL_OK && pxl_ctx_error(g_ctx)[0] == '\0') die("run-time error without a message", NULL);
    } else if (s != PXL_ERR_FORMAT || pxl_ctx_error(g_ctx)[0] == '\0') {
        die("a refusal that is not PXL_ERR_FORMAT with a message", pxl_status_str(s));
    }
    pxl_image_free(img);
    return 0;
}
