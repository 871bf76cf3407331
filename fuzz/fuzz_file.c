/*
 * libFuzzer target for file loading and saving (pxl_file_read/write,
 * pxl_pxi_load/save), through a real directory:
 *  - the input's bytes are written with pxl_file_write (over a file whose
 *    mode byte 0 picks, sometimes through a symlink) and must read back the
 *    same with pxl_file_read, keeping the mode and the link; a cap one byte
 *    short must fail with "too large";
 *  - the same file is loaded as a .pxi: any outcome but a crash is fine, a
 *    refusal must say why, and an image that loads must save and load back
 *    with the same pixels;
 *  - an image made from the bytes (width 1 + byte 0) must save and load back
 *    with the same pixels.
 * The directory is made once per process and removed at exit.
 */
#include "fuzz_ctx.h"
#include "pxl/vm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pxl_ctx *g_ctx;
static char g_dir[64], g_raw[96], g_link[96], g_pxi[96];

static void die(const char *what, const char *msg) {
    fprintf(stderr, "fuzz_file: %s%s%s\n", what, msg ? ": " : "", msg ? msg : "");
    abort();
}

static void cleanup(void) {
    unlink(g_link);
    unlink(g_raw);
    unlink(g_pxi);
    rmdir(g_dir);
    pxl_ctx_free(g_ctx);
}

static void setup(void) {
    g_ctx = fuzz_cpu_ctx();
    if (!g_ctx) die("cannot create a context", NULL);
    snprintf(g_dir, sizeof g_dir, "/tmp/pxl_fuzz_file_XXXXXX");
    if (!mkdtemp(g_dir)) die("mkdtemp failed", NULL);
    snprintf(g_raw, sizeof g_raw, "%s/raw", g_dir);
    snprintf(g_link, sizeof g_link, "%s/link", g_dir);
    snprintf(g_pxi, sizeof g_pxi, "%s/img.pxi", g_dir);
    if (symlink("raw", g_link) != 0) die("symlink failed", NULL);
    atexit(cleanup);
}

static int same_pixels(const pxl_image *a, const pxl_image *b) {
    return a->w == b->w && a->h == b->h && memcmp(a->px, b->px, (size_t)a->w * a->h * 4) == 0;
}

/* img must save to g_pxi and load back the same. */
static void save_load(pxl_image *img) {
    if (pxl_pxi_save(g_ctx, img, g_pxi) != PXL_OK) die("save failed", pxl_ctx_error(g_ctx));
    pxl_image *back = NULL;
    if (pxl_pxi_load(g_ctx, g_pxi, &back) != PXL_OK) die("load after save failed", pxl_ctx_error(g_ctx));
    if (!same_pixels(img, back)) die("load(save(img)) != img", NULL);
    pxl_image_free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_ctx) setup();
    /* raw bytes: written (maybe through the link) over a file of a chosen mode, read back */
    static const mode_t modes[4] = {0600, 0640, 0644, 0604};
    mode_t mode = modes[size ? data[0] & 3 : 0];
    const char *target = size && (data[0] & 4) ? g_link : g_raw;
    if (access(g_raw, F_OK) != 0 && pxl_file_write(g_ctx, g_raw, "", 0) != PXL_OK)
        die("cannot create the file", pxl_ctx_error(g_ctx));
    if (chmod(g_raw, mode) != 0) die("chmod failed", NULL);
    if (pxl_file_write(g_ctx, target, data, size) != PXL_OK) die("write failed", pxl_ctx_error(g_ctx));
    struct stat st;
    if (lstat(g_link, &st) != 0 || !S_ISLNK(st.st_mode)) die("the symlink was replaced", NULL);
    if (stat(g_raw, &st) != 0 || (st.st_mode & 0777) != mode) die("the mode was not kept", NULL);
    uint8_t *got = NULL;
    size_t n = 0;
    if (pxl_file_read(g_ctx, target, size, &got, &n) != PXL_OK) die("read failed", pxl_ctx_error(g_ctx));
    if (n != size || memcmp(got, data, size) != 0 || got[n] != 0) die("read != written", NULL);
    pxl_free(g_ctx, got);
    if (size > 0) {
        got = NULL;
        if (pxl_file_read(g_ctx, g_raw, size - 1, &got, &n) != PXL_ERR_FORMAT || got ||
            !strstr(pxl_ctx_error(g_ctx), "too large"))
            die("a file over the cap was not refused", pxl_ctx_error(g_ctx));
    }

    /* the same bytes as a .pxi file */
    pxl_image *img = NULL;
    if (pxl_pxi_load(g_ctx, g_raw, &img) == PXL_OK) {
        save_load(img);
        pxl_image_free(img);
        img = NULL;
    } else if (img || pxl_ctx_error(g_ctx)[0] == '\0') {
        die("a refused load left an image or no message", NULL);
    }

    /* an image made of the bytes */
    if (size >= 1) {
        uint32_t w = 1u + data[0];
        size_t row = (size_t)w * 4, rest = size - 1;
        uint32_t h = rest ? (uint32_t)((rest + row - 1) / row) : 1;
        if (h > 256) h = 256, rest = row * 256;
        if (pxl_image_create(g_ctx, w, h, &img) != PXL_OK) die("image_create", pxl_ctx_error(g_ctx));
        memcpy(img->px, data + 1, rest);
        save_load(img);
        pxl_image_free(img);
    }
    return 0;
}
