/*
 * libFuzzer target for the pxVM assembler (src/vm/asm.c): assembles the
 * input; when that succeeds, disassembles the image, assembles the text
 * again and requires the same image byte for byte (and the same text from a
 * second disassembly). Any failure of that round trip aborts. file: data is
 * read relative to a directory that does not exist.
 */
#include "fuzz_ctx.h"
#include "pxl/vm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Round trips of images above this many pixels are skipped (speed only). */
#define ROUND_TRIP_MAX_PIXELS (1u << 20)

static pxl_ctx *g_ctx;

static void die(const char *what, const char *msg) {
    fprintf(stderr, "fuzz_asm: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_ctx) {
        g_ctx = fuzz_cpu_ctx();
        if (!g_ctx) die("cannot create a context", NULL);
    }
    const char *base = "/nonexistent/pxl-fuzz-asm";
    pxl_image *img = NULL;
    pxl_status s = pxl_vm_asm(g_ctx, (const char *)data, size, base, &img);
    if (s != PXL_OK) {
        const char *msg = pxl_ctx_error(g_ctx);
        if (s == PXL_ERR_FORMAT && strncmp(msg, "line ", 5) != 0) die("error without a line", msg);
        if (s != PXL_ERR_FORMAT && s != PXL_ERR_OUT_OF_MEMORY) die("unexpected status", pxl_status_str(s));
        if (img) die("image set on failure", NULL);
        return 0;
    }
    if ((uint64_t)img->w * img->h > ROUND_TRIP_MAX_PIXELS) {
        pxl_image_free(img);
        return 0;
    }
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    pxl_image *back = NULL;
    if (pxl_vm_disasm(g_ctx, img, &t1, &n1) != PXL_OK) die("disasm failed", pxl_ctx_error(g_ctx));
    if (pxl_vm_asm(g_ctx, t1, n1, NULL, &back) != PXL_OK) die("asm(disasm(img)) failed", pxl_ctx_error(g_ctx));
    if (back->w != img->w || back->h != img->h ||
        memcmp(back->px, img->px, (size_t)img->w * img->h * 4) != 0)
        die("asm(disasm(img)) != img", NULL);
    if (pxl_vm_disasm(g_ctx, back, &t2, &n2) != PXL_OK) die("second disasm failed", pxl_ctx_error(g_ctx));
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) die("disasm is not stable", NULL);
    pxl_free(g_ctx, t1);
    pxl_free(g_ctx, t2);
    pxl_image_free(back);
    pxl_image_free(img);
    return 0;
}
