/*
 * pxVM images and the .pxi (PNG) codec: round trips, hand-built broken and
 * hostile inputs (each must fail with a message, never crash or over-allocate),
 * out-of-memory injection (no leaks), and save/load through a temporary
 * directory (a failed save leaves the target intact).
 *
 * usage: test_vm_pxi [SOURCE_DIR]   (the source dir is not needed)
 */
#define _XOPEN_SOURCE 700 /* setrlimit, mkdtemp */

#include "check.h"
#include "pxl/vm.h"

#include <png.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- a counting allocator with failure injection --------------------------------- */

typedef struct counting {
    long live;         /* allocations not yet freed */
    long calls;        /* alloc/realloc calls so far */
    long fail_at;      /* the call with this index fails (-1: never) */
    size_t largest;    /* largest single request */
} counting;

static void *c_alloc(void *user, size_t size) {
    counting *c = user;
    if (c->fail_at >= 0 && c->calls++ >= c->fail_at) return NULL;
    if (size > c->largest) c->largest = size;
    void *p = malloc(size);
    if (p) c->live++;
    return p;
}
static void *c_realloc(void *user, void *ptr, size_t size) {
    counting *c = user;
    if (c->fail_at >= 0 && c->calls++ >= c->fail_at) return NULL;
    if (size > c->largest) c->largest = size;
    void *p = realloc(ptr, size);
    if (p && !ptr) c->live++;
    return p;
}
static void c_free(void *user, void *ptr) {
    counting *c = user;
    if (ptr) c->live--;
    free(ptr);
}

static counting g_count = {0, 0, -1, 0};
static int g_verbose; /* PXL_TEST_VERBOSE=1: print every refusal */

static pxl_ctx *make_ctx(void) {
    static pxl_allocator a; /* copied by pxl_ctx_create */
    a.alloc = c_alloc;
    a.realloc = c_realloc;
    a.free = c_free;
    a.user = &g_count;
    pxl_ctx_options o = pxl_ctx_options_default();
    o.backend = PXL_BACKEND_CPU;
    o.quiet = 1;
    o.n_threads = 1;
    o.allocator = &a;
    pxl_ctx *ctx = NULL;
    if (pxl_ctx_create(&o, &ctx) != PXL_OK) {
        fprintf(stderr, "cannot create a CPU context\n");
        exit(1);
    }
    return ctx;
}

/* Starts counting a call: returns the live count before it. */
static long count_begin(void) {
    g_count.largest = 0;
    return g_count.live;
}

/* ---- helpers --------------------------------------------------------------------- */


static pxl_image *random_image(pxl_ctx *ctx, uint32_t w, uint32_t h) {
    pxl_image *img = NULL;
    if (pxl_image_create(ctx, w, h, &img) != PXL_OK) return NULL;
    for (size_t i = 0; i < (size_t)w * h * 4; i++) img->px[i] = (uint8_t)test_rnd();
    return img;
}

static int same_image(const pxl_image *a, const pxl_image *b) {
    return a && b && a->w == b->w && a->h == b->h &&
           memcmp(a->px, b->px, (size_t)a->w * a->h * 4) == 0;
}

/* A growable byte buffer (plain malloc: test data, not library memory). */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void bytes_put(bytes *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_be32(bytes *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    bytes_put(b, x, 4);
}

/* Appends a chunk with a correct CRC (or a claimed length that differs from the data). */
static void put_chunk_len(bytes *b, const char *type, const void *data, size_t n,
                          uint32_t claimed) {
    put_be32(b, claimed);
    size_t at = b->n;
    bytes_put(b, type, 4);
    if (n) bytes_put(b, data, n);
    put_be32(b, (uint32_t)crc32(0, b->p + at, (uInt)(4 + n))); /* zlib's CRC-32 */
}
static void put_chunk(bytes *b, const char *type, const void *data, size_t n) {
    put_chunk_len(b, type, data, n, (uint32_t)n);
}

static const uint8_t k_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static void put_ihdr(bytes *b, uint32_t w, uint32_t h, uint8_t depth, uint8_t ct,
                     uint8_t interlace) {
    uint8_t d[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                     (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                     depth, ct, 0, 0, interlace};
    put_chunk(b, "IHDR", d, 13);
}

/* Writes a PNG of any colour type with libpng directly (plain malloc). */
static void w_write(png_structp png, png_bytep data, size_t n) {
    bytes_put(png_get_io_ptr(png), data, n);
}
static void w_flush(png_structp png) { (void)png; }
static _Noreturn void w_error(png_structp png, png_const_charp msg) {
    (void)png;
    fprintf(stderr, "test PNG writer: %s\n", msg);
    abort();
}

static bytes make_png(uint32_t w, uint32_t h, int depth, int ct, int interlace,
                      const uint8_t *rgba /* for RGBA 8, else NULL: pattern */, int text) {
    bytes out = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, w_error, NULL);
    png_infop info = png_create_info_struct(png);
    if (!png || !info) abort();
    png_set_write_fn(png, &out, w_write, w_flush);
    png_set_IHDR(png, info, w, h, depth, ct, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (ct == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
        png_set_PLTE(png, info, pal, 4);
    }
    char *big = NULL;
    if (text) {
        png_text t[3];
        memset(t, 0, sizeof t);
        t[0].compression = PNG_TEXT_COMPRESSION_NONE;
        t[0].key = (char *)"Comment";
        t[0].text = (char *)"ancillary chunks are ignored";
        t[1].compression = PNG_TEXT_COMPRESSION_zTXt;
        t[1].key = (char *)"Description";
        t[1].text = (char *)"compressed text, also ignored";
        int n_text = 2;
        if (text == 2) { /* 4 MiB of text that deflates to ~4 KiB: a bomb if inflated */
            size_t n = (size_t)4 << 20;
            big = malloc(n + 1);
            if (!big) abort();
            memset(big, 'z', n);
            big[n] = '\0';
            t[2].compression = PNG_TEXT_COMPRESSION_zTXt;
            t[2].key = (char *)"Bomb";
            t[2].text = big;
            n_text = 3;
        }
        png_set_text(png, info, t, n_text);
        png_unknown_chunk u;
        memset(&u, 0, sizeof u);
        memcpy(u.name, "prVt", 5);
        u.data = (png_byte *)"private";
        u.size = 7;
        u.location = PNG_HAVE_IHDR;
        png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, NULL, 0);
        png_set_unknown_chunks(png, info, &u, 1);
    }
    png_write_info(png, info);
    int channels = ct == PNG_COLOR_TYPE_RGB_ALPHA ? 4 : ct == PNG_COLOR_TYPE_RGB ? 3
                   : ct == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : 1;
    size_t rowbytes = ((size_t)w * (size_t)channels * (size_t)depth + 7) / 8;
    uint8_t *row = malloc(rowbytes);
    if (!row) abort();
    int passes = png_set_interlace_handling(png);
    for (int pass = 0; pass < passes; pass++)
        for (uint32_t y = 0; y < h; y++) {
            if (rgba) memcpy(row, rgba + (size_t)y * w * 4, rowbytes);
            else
                for (size_t i = 0; i < rowbytes; i++)
                    row[i] = ct == PNG_COLOR_TYPE_PALETTE ? (uint8_t)((i + y) % 4)
                                                          : (uint8_t)(i * 7 + y);
            png_write_row(png, row);
        }
    png_write_end(png, info);
    free(row);
    free(big);
    png_destroy_write_struct(&png, &info);
    return out;
}

/* Decode must fail: status is an error, message non-empty (and contains want). */
static void expect_fail_(pxl_ctx *ctx, const uint8_t *data, size_t len, const char *want,
                         const char *what, int line) {
    pxl_image *img = NULL;
    long live = count_begin();
    pxl_status s = pxl_pxi_decode(ctx, data, len, &img);
    const char *msg = pxl_ctx_error(ctx);
    if (s == PXL_OK || img != NULL || !msg[0] || (want && !strstr(msg, want))) {
        fprintf(stderr, "line %d: %s: status %s, message \"%s\" (wanted \"%s\")\n", line, what,
                pxl_status_str(s), msg, want ? want : "");
        g_failures++;
    }
    CHECK(s == PXL_OK || s == PXL_ERR_FORMAT || s == PXL_ERR_OUT_OF_MEMORY);
    if (g_verbose) fprintf(stderr, "  %s: %s\n", what, msg);
    pxl_image_free(img);
    CHECK_MSG(g_count.live == live, "%s: %ld allocations leaked", what, g_count.live - live);
}
#define expect_fail(ctx, d, n, want, what) expect_fail_(ctx, d, n, want, what, __LINE__)

/* ---- tests ----------------------------------------------------------------------- */

static void test_images(pxl_ctx *ctx) {
    pxl_image *img = NULL, *cl = NULL;
    CHECK(pxl_image_create(ctx, 3, 2, &img) == PXL_OK);
    CHECK(img && img->w == 3 && img->h == 2 && img->ctx == ctx);
    if (img) {
        int zero = 1;
        for (size_t i = 0; i < 24; i++) zero &= img->px[i] == 0;
        CHECK(zero);
        pxl_image_px(img, 2, 1)[3] = 77;
        CHECK(img->px[23] == 77);
        CHECK(pxl_image_clone(ctx, img, &cl) == PXL_OK);
        CHECK(same_image(img, cl));
    }
    pxl_image_free(img);
    pxl_image_free(cl);
    pxl_image_free(NULL);

    pxl_image *bad = NULL;
    uint32_t sizes[][2] = {{0, 1}, {1, 0}, {16385, 1}, {1, 16385}, {8192, 8192}, {16384, 2049}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pxl_status s = pxl_image_create(ctx, sizes[i][0], sizes[i][1], &bad);
        CHECK_MSG(s == PXL_ERR_INVALID_ARG && bad == NULL && pxl_ctx_error(ctx)[0],
                  "create %ux%u: %s", sizes[i][0], sizes[i][1], pxl_status_str(s));
    }
    /* the largest allowed shapes only get checked, not allocated (128 MiB each) */
}

static void test_roundtrip(pxl_ctx *ctx) {
    uint32_t sizes[][2] = {{1, 1}, {3, 7}, {257, 5}, {1, 300}, {64, 64}, {1000, 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t w = sizes[i][0], h = sizes[i][1];
        long live = count_begin();
        pxl_image *img = random_image(ctx, w, h), *back = NULL;
        uint8_t *png = NULL;
        size_t len = 0;
        CHECK(img != NULL);
        if (!img) continue;
        CHECK_MSG(pxl_pxi_encode(ctx, img, &png, &len) == PXL_OK, "%s", pxl_ctx_error(ctx));
        CHECK(png && len > 33);
        if (png && len > 33) {
            CHECK(memcmp(png, k_sig, 8) == 0 && memcmp(png + 12, "IHDR", 4) == 0);
            CHECK(png[24] == 8 && png[25] == 6 && png[28] == 0); /* 8-bit RGBA, not interlaced */
            pxl_status s = pxl_pxi_decode(ctx, png, len, &back);
            CHECK_MSG(s == PXL_OK, "%ux%u: %s", w, h, pxl_ctx_error(ctx));
            CHECK_MSG(same_image(img, back), "%ux%u round trip differs", w, h);
        }
        pxl_image_free(back);
        pxl_image_free(img);
        pxl_free(ctx, png);
        CHECK(g_count.live == live);
    }
    /* solid images too (the compressor's easy case) */
    pxl_image *img = NULL, *back = NULL;
    uint8_t *png = NULL;
    size_t len = 0;
    CHECK(pxl_image_create(ctx, 300, 200, &img) == PXL_OK);
    CHECK(pxl_pxi_encode(ctx, img, &png, &len) == PXL_OK);
    CHECK(png && pxl_pxi_decode(ctx, png, len, &back) == PXL_OK && same_image(img, back));
    pxl_image_free(img);
    pxl_image_free(back);
    pxl_free(ctx, png);
    img = back = NULL;
    png = NULL;
    /* the best-compressing image there is (all zero) is not refused by the
     * decoder's deflate-ratio bound */
    CHECK(pxl_image_create(ctx, 2048, 2048, &img) == PXL_OK);
    CHECK(img && pxl_pxi_encode(ctx, img, &png, &len) == PXL_OK);
    if (png) fprintf(stderr, "  2048x2048 zero image: %zu bytes of PNG (ratio %.0f)\n", len,
                     2048.0 * 2048 * 4 / (double)len);
    CHECK_MSG(png && pxl_pxi_decode(ctx, png, len, &back) == PXL_OK && same_image(img, back),
              "%s", pxl_ctx_error(ctx));
    pxl_image_free(img);
    pxl_image_free(back);
    pxl_free(ctx, png);

    /* encode refuses images outside the cap */
    pxl_image fake = {0, 5, NULL, ctx};
    uint8_t dummy[4] = {0};
    png = NULL;
    CHECK(pxl_pxi_encode(ctx, &fake, &png, &len) == PXL_ERR_INVALID_ARG && png == NULL);
    fake.w = 16385;
    fake.h = 1;
    fake.px = dummy;
    CHECK(pxl_pxi_encode(ctx, &fake, &png, &len) == PXL_ERR_INVALID_ARG && png == NULL);
}

static void test_libpng_variants(pxl_ctx *ctx) {
    /* Interlaced RGBA (Adam7) decodes to the same pixels. */
    uint32_t sizes[][2] = {{1, 1}, {3, 7}, {9, 9}, {33, 17}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint32_t w = sizes[i][0], h = sizes[i][1];
        pxl_image *img = random_image(ctx, w, h), *back = NULL;
        if (!img) continue;
        bytes b = make_png(w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_ADAM7, img->px, 0);
        CHECK(b.n > 28 && b.p[28] == 1);
        pxl_status s = pxl_pxi_decode(ctx, b.p, b.n, &back);
        CHECK_MSG(s == PXL_OK, "interlaced %ux%u: %s", w, h, pxl_ctx_error(ctx));
        CHECK_MSG(same_image(img, back), "interlaced %ux%u differs", w, h);
        pxl_image_free(back);
        back = NULL;
        /* with tEXt, zTXt and a private chunk: ignored */
        free(b.p);
        b = make_png(w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE, img->px, 1);
        s = pxl_pxi_decode(ctx, b.p, b.n, &back);
        CHECK_MSG(s == PXL_OK, "with ancillary chunks %ux%u: %s", w, h, pxl_ctx_error(ctx));
        CHECK(same_image(img, back));
        pxl_image_free(back);
        free(b.p);
        pxl_image_free(img);
    }

    /* A zTXt bomb is skipped, not inflated: no allocation near its 4 MiB. */
    {
        pxl_image *img = random_image(ctx, 5, 3), *back = NULL;
        bytes b = make_png(5, 3, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE, img->px, 2);
        count_begin();
        pxl_status s = pxl_pxi_decode(ctx, b.p, b.n, &back);
        CHECK_MSG(s == PXL_OK && same_image(img, back), "zTXt bomb (%zu bytes): %s", b.n,
                  pxl_ctx_error(ctx));
        CHECK_MSG(g_count.largest < 256 * 1024, "zTXt bomb: allocated %zu bytes",
                  g_count.largest);
        if (g_verbose)
            fprintf(stderr, "  zTXt bomb: %zu-byte PNG, largest allocation %zu bytes\n", b.n,
                    g_count.largest);
        pxl_image_free(back);
        pxl_image_free(img);
        free(b.p);
    }

    /* Every other colour type and bit depth is refused, naming what was found. */
    struct {
        int depth, ct;
        const char *want;
    } refused[] = {
        {8, PNG_COLOR_TYPE_RGB, "colour type RGB (2), bit depth 8: pxVM images must be 8-bit RGBA"},
        {8, PNG_COLOR_TYPE_GRAY, "colour type grey (0), bit depth 8"},
        {1, PNG_COLOR_TYPE_GRAY, "colour type grey (0), bit depth 1"},
        {16, PNG_COLOR_TYPE_GRAY, "colour type grey (0), bit depth 16"},
        {8, PNG_COLOR_TYPE_PALETTE, "colour type palette (3), bit depth 8"},
        {2, PNG_COLOR_TYPE_PALETTE, "colour type palette (3), bit depth 2"},
        {8, PNG_COLOR_TYPE_GRAY_ALPHA, "colour type grey+alpha (4), bit depth 8"},
        {16, PNG_COLOR_TYPE_RGB, "colour type RGB (2), bit depth 16"},
        {16, PNG_COLOR_TYPE_RGB_ALPHA, "colour type RGBA (6), bit depth 16"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        for (int il = 0; il < 2; il++) {
            bytes b = make_png(5, 4, refused[i].depth, refused[i].ct,
                               il ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, NULL, il);
            expect_fail(ctx, b.p, b.n, refused[i].want, refused[i].want);
            free(b.p);
        }
    }
}

/* A valid RGBA PNG written by the codec itself. */
static bytes encoded(pxl_ctx *ctx, uint32_t w, uint32_t h) {
    bytes b = {0};
    pxl_image *img = random_image(ctx, w, h);
    uint8_t *png = NULL;
    size_t len = 0;
    if (!img || pxl_pxi_encode(ctx, img, &png, &len) != PXL_OK) abort();
    bytes_put(&b, png, len);
    pxl_free(ctx, png);
    pxl_image_free(img);
    return b;
}

static void test_broken(pxl_ctx *ctx) {
    uint8_t one = 0;
    expect_fail(ctx, NULL, 0, "shorter than the 8-byte PNG signature", "NULL, 0");
    expect_fail(ctx, &one, 0, "shorter than the 8-byte PNG signature", "empty");
    expect_fail(ctx, k_sig, 7, "shorter than the 8-byte PNG signature", "7 bytes");
    expect_fail(ctx, k_sig, 8, "truncated at byte 8", "signature only");
    uint8_t gif[16] = "GIF89a\x01\x00\x01\x00\x00\x00\x00\x00\x00";
    expect_fail(ctx, gif, sizeof gif, "bad signature", "GIF");

    bytes v = encoded(ctx, 3, 4);
    /* bad signature: each byte of it */
    for (size_t i = 0; i < 8; i++) {
        v.p[i] ^= 0x20;
        expect_fail(ctx, v.p, v.n, "bad signature", "flipped signature byte");
        v.p[i] ^= 0x20;
    }
    /* truncated at every offset */
    char what[128];
    for (size_t cut = 0; cut < v.n; cut++) {
        /* copy into an exact-size heap block so ASan sees any over-read */
        uint8_t *t = malloc(cut ? cut : 1);
        if (!t) abort();
        memcpy(t, v.p, cut);
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cut, v.n);
        expect_fail(ctx, t, cut, cut < 8 ? "signature" : "truncated at byte", what);
        free(t);
    }
    /* every single-bit flip after the signature: CRCs catch all of them */
    for (size_t i = 8; i < v.n; i++)
        for (int bit = 0; bit < 8; bit++) {
            v.p[i] ^= (uint8_t)(1u << bit);
            snprintf(what, sizeof what, "bit %d of byte %zu flipped", bit, i);
            expect_fail(ctx, v.p, v.n, NULL, what);
            v.p[i] ^= (uint8_t)(1u << bit);
        }
    /* a bad CRC on IDAT is named as such (a flipped data byte usually trips
     * the inflater first, which libpng runs before it reaches the CRC) */
    {
        size_t idat = 8 + 25; /* after IHDR */
        CHECK(memcmp(v.p + idat + 4, "IDAT", 4) == 0);
        size_t crc_at = idat + 8 + ((size_t)v.p[idat + 2] << 8 | v.p[idat + 3]);
        CHECK(v.p[idat] == 0 && v.p[idat + 1] == 0 && crc_at + 4 <= v.n);
        v.p[crc_at + 1] ^= 0xff;
        expect_fail(ctx, v.p, v.n, "IDAT: CRC error", "IDAT CRC flipped");
        v.p[crc_at + 1] ^= 0xff;
        v.p[v.n - 1] ^= 0x01;
        expect_fail(ctx, v.p, v.n, "IEND: CRC error", "IEND CRC flipped");
        v.p[v.n - 1] ^= 0x01;
    }
    /* a stream cut right after the pixels (no IEND) is truncated too */
    expect_fail(ctx, v.p, v.n - 12, "truncated", "missing IEND");
    /* trailing bytes after IEND are ignored */
    {
        bytes t = {0};
        bytes_put(&t, v.p, v.n);
        bytes_put(&t, "junk", 4);
        pxl_image *img = NULL;
        CHECK_MSG(pxl_pxi_decode(ctx, t.p, t.n, &img) == PXL_OK, "%s", pxl_ctx_error(ctx));
        pxl_image_free(img);
        free(t.p);
    }
    free(v.p);

    /* hand-built IHDRs */
    struct {
        uint32_t w, h;
        uint8_t depth, ct, interlace;
        const char *want;
    } hdr[] = {
        {100000, 100000, 8, 6, 0, "image 100000x100000 exceeds the 16384 side cap"},
        {20000, 10, 8, 6, 0, "image 20000x10 exceeds the 16384 side cap"},
        {10, 16385, 8, 6, 0, "exceeds the 16384 side cap"},
        {0xffffffffu, 1, 8, 6, 0, "exceeds the 16384 side cap"},
        {8192, 8192, 8, 6, 0, "image 8192x8192 has 67108864 pixels, over the 33554432 pixel cap"},
        {16384, 2049, 8, 6, 1, "pixel cap"},
        /* at the cap, but 12 bytes cannot hold 128 MiB of pixels: refused before allocating */
        {16384, 2048, 8, 6, 0, "need at least 130055 bytes of compressed data"},
        {16384, 2048, 8, 6, 1, "PNG truncated"},
        {0, 5, 8, 6, 0, "at least 1"},
        {5, 0, 8, 6, 0, "at least 1"},
        {100000, 100000, 8, 2, 0, "colour type RGB (2)"},
        {4, 4, 8, 7, 0, "colour type invalid (7)"},
        {4, 4, 3, 6, 0, "bit depth 3"},
        {4, 4, 8, 6, 2, "interlace"},
    };
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++) {
        bytes b = {0};
        bytes_put(&b, k_sig, 8);
        put_ihdr(&b, hdr[i].w, hdr[i].h, hdr[i].depth, hdr[i].ct, hdr[i].interlace);
        put_chunk(&b, "IEND", NULL, 0);
        snprintf(what, sizeof what, "IHDR %ux%u depth %u type %u", hdr[i].w, hdr[i].h,
                 hdr[i].depth, hdr[i].ct);
        expect_fail(ctx, b.p, b.n, hdr[i].want, what);
        CHECK_MSG(g_count.largest < 64 * 1024, "%s: allocated %zu bytes", what, g_count.largest);
        /* the same with a bad IHDR CRC: libpng's check reports it */
        b.p[8 + 8 + 13] ^= 1;
        expect_fail(ctx, b.p, b.n, "CRC", what);
        free(b.p);
    }

    /* hostile chunks in an otherwise valid image */
    bytes good = encoded(ctx, 2, 2);
    size_t after_ihdr = 8 + 25;
    struct {
        const char *type;
        uint32_t claimed;
        size_t n;
        int ok;
        const char *want;
    } chunks[] = {
        {"tEXt", 0x7fffffffu, 16, 0, "truncated"}, /* claims 2 GiB: must not allocate it */
        {"iCCP", 0x40000000u, 16, 0, "truncated"},
        {"zTXt", 16, 16, 1, NULL},   /* garbage compressed text: ignored */
        {"prVt", 12, 12, 1, NULL},   /* unknown ancillary: ignored */
        {"PRVT", 12, 12, 0, "PRVT"}, /* unknown critical: refused */
        {"IHDR", 13, 13, 0, "IHDR"}, /* a second IHDR */
        {"tEXt", 0x80000000u, 16, 0, NULL}, /* over 2^31 - 1 */
    };
    uint8_t junk[16];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 37 + 1);
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        bytes b = {0};
        bytes_put(&b, good.p, after_ihdr);
        put_chunk_len(&b, chunks[i].type, junk, chunks[i].n, chunks[i].claimed);
        bytes_put(&b, good.p + after_ihdr, good.n - after_ihdr);
        snprintf(what, sizeof what, "chunk %s claiming %u bytes", chunks[i].type,
                 chunks[i].claimed);
        if (chunks[i].ok) {
            pxl_image *img = NULL;
            pxl_status s = pxl_pxi_decode(ctx, b.p, b.n, &img);
            CHECK_MSG(s == PXL_OK, "%s: %s", what, pxl_ctx_error(ctx));
            pxl_image_free(img);
        } else {
            count_begin();
            expect_fail(ctx, b.p, b.n, chunks[i].want, what);
            CHECK_MSG(g_count.largest < (2u << 20), "%s: allocated %zu bytes", what,
                      g_count.largest);
        }
        free(b.p);
    }
    /* an ancillary chunk with a bad CRC is ignored like any ancillary chunk */
    {
        bytes b = {0};
        bytes_put(&b, good.p, after_ihdr);
        put_chunk(&b, "tEXt", "key\0value", 9);
        b.p[b.n - 1] ^= 0x10;
        bytes_put(&b, good.p + after_ihdr, good.n - after_ihdr);
        pxl_image *img = NULL;
        pxl_status s = pxl_pxi_decode(ctx, b.p, b.n, &img);
        CHECK_MSG(s == PXL_OK, "ancillary chunk with bad CRC: %s", pxl_ctx_error(ctx));
        pxl_image_free(img);
        free(b.p);
    }
    free(good.p);

    /* no IDAT at all, and an IDAT with garbage zlib data */
    {
        bytes b = {0};
        bytes_put(&b, k_sig, 8);
        put_ihdr(&b, 4, 4, 8, 6, 0);
        put_chunk(&b, "IEND", NULL, 0);
        expect_fail(ctx, b.p, b.n, NULL, "no IDAT");
        b.n -= 12;
        put_chunk(&b, "IDAT", junk, sizeof junk);
        put_chunk(&b, "IEND", NULL, 0);
        expect_fail(ctx, b.p, b.n, NULL, "garbage IDAT");
        free(b.p);
    }
}

/* Every allocation failing in turn: an OOM status or success, never a leak. */
static void test_oom(pxl_ctx *ctx) {
    bytes v = encoded(ctx, 40, 30);
    int decoded = 0, encoded_ok = 0, failures = 0;
    for (long n = 0; n < 200 && !decoded; n++) {
        pxl_image *img = NULL;
        long live = g_count.live;
        g_count.calls = 0;
        g_count.fail_at = n;
        pxl_status s = pxl_pxi_decode(ctx, v.p, v.n, &img);
        g_count.fail_at = -1;
        if (s == PXL_OK) decoded = 1;
        else {
            failures++;
            CHECK_MSG(s == PXL_ERR_OUT_OF_MEMORY, "decode, alloc %ld fails: %s (%s)", n,
                      pxl_status_str(s), pxl_ctx_error(ctx));
            CHECK(img == NULL && pxl_ctx_error(ctx)[0]);
        }
        pxl_image_free(img);
        CHECK_MSG(g_count.live == live, "decode, alloc %ld fails: leak", n);
    }
    CHECK(decoded && failures > 2);
    pxl_image *img = random_image(ctx, 40, 30);
    for (long n = 0; n < 200 && img && !encoded_ok; n++) {
        uint8_t *png = NULL;
        size_t len = 0;
        long live = g_count.live;
        g_count.calls = 0;
        g_count.fail_at = n;
        pxl_status s = pxl_pxi_encode(ctx, img, &png, &len);
        g_count.fail_at = -1;
        if (s == PXL_OK) encoded_ok = 1;
        else
            CHECK_MSG(s == PXL_ERR_OUT_OF_MEMORY && png == NULL, "encode, alloc %ld fails: %s",
                      n, pxl_status_str(s));
        pxl_free(ctx, png);
        CHECK_MSG(g_count.live == live, "encode, alloc %ld fails: leak", n);
    }
    CHECK(encoded_ok);
    pxl_image_free(img);
    free(v.p);
}

/* ---- files ----------------------------------------------------------------------- */

static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) rmdir(path);
            else unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static int file_bytes(const char *path, bytes *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes_put(out, buf, n);
    fclose(f);
    return 1;
}

static void test_files(pxl_ctx *ctx) {
    const char *base = getenv("TMPDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/pxl_pxi_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
        g_failures++;
        return;
    }
    char a_path[1100], b_path[1100], missing[1100];
    snprintf(a_path, sizeof a_path, "%s/a.pxi", dir);
    snprintf(b_path, sizeof b_path, "%s/b.pxi", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/c.pxi", dir);

    pxl_image *a = random_image(ctx, 257, 5), *b = random_image(ctx, 120, 90), *back = NULL;
    if (!a || !b) abort();
    CHECK_MSG(pxl_pxi_save(ctx, a, a_path) == PXL_OK, "%s", pxl_ctx_error(ctx));
    CHECK(dir_entries(dir) == 1);
    CHECK_MSG(pxl_pxi_load(ctx, a_path, &back) == PXL_OK, "%s", pxl_ctx_error(ctx));
    CHECK(same_image(a, back));
    pxl_image_free(back);
    back = NULL;

    /* load, then save elsewhere: the input is unchanged */
    bytes a_before = {0}, a_after = {0};
    CHECK(file_bytes(a_path, &a_before));
    CHECK(pxl_pxi_load(ctx, a_path, &back) == PXL_OK);
    CHECK(back && pxl_pxi_save(ctx, back, b_path) == PXL_OK);
    CHECK(file_bytes(a_path, &a_after));
    CHECK(a_before.n == a_after.n && memcmp(a_before.p, a_after.p, a_before.n) == 0);
    pxl_image_free(back);
    back = NULL;
    free(a_after.p);

    /* overwrite an existing file */
    CHECK(pxl_pxi_save(ctx, b, b_path) == PXL_OK);
    CHECK(pxl_pxi_load(ctx, b_path, &back) == PXL_OK && same_image(b, back));
    pxl_image_free(back);
    back = NULL;
    CHECK(dir_entries(dir) == 2);

    /* failed saves leave the target intact and no temporary behind */
    pxl_image bad = {0, 0, NULL, ctx};
    CHECK(pxl_pxi_save(ctx, &bad, a_path) == PXL_ERR_INVALID_ARG);
    pxl_status s = pxl_pxi_save(ctx, a, missing);
    CHECK_MSG(s == PXL_ERR_IO && strstr(pxl_ctx_error(ctx), "no/such/dir"), "%s: %s",
              pxl_status_str(s), pxl_ctx_error(ctx));
    /* a write that fails half way: the file size limit stops it */
    struct rlimit old;
    if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
        struct rlimit lim = old;
        lim.rlim_cur = 1000;
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
            s = pxl_pxi_save(ctx, b, a_path); /* b encodes to ~40 KB */
            setrlimit(RLIMIT_FSIZE, &old);
            CHECK_MSG(s == PXL_ERR_IO, "save over the size limit: %s", pxl_status_str(s));
            CHECK(pxl_ctx_error(ctx)[0]);
            fprintf(stderr, "  failed save: %s\n", pxl_ctx_error(ctx));
        } else {
            fprintf(stderr, "  (setrlimit failed: mid-write failure not tested)\n");
        }
        signal(SIGXFSZ, prev);
    }
    CHECK(dir_entries(dir) == 2);
    a_after.p = NULL;
    a_after.n = a_after.cap = 0;
    CHECK(file_bytes(a_path, &a_after));
    CHECK(a_before.n == a_after.n && memcmp(a_before.p, a_after.p, a_before.n) == 0);
    CHECK(pxl_pxi_load(ctx, a_path, &back) == PXL_OK && same_image(a, back));
    pxl_image_free(back);
    back = NULL;
    free(a_before.p);
    free(a_after.p);

    /* load errors */
    s = pxl_pxi_load(ctx, missing, &back);
    CHECK(s == PXL_ERR_IO && back == NULL && strstr(pxl_ctx_error(ctx), "c.pxi"));
    s = pxl_pxi_load(ctx, dir, &back);
    CHECK(s == PXL_ERR_IO && back == NULL && strstr(pxl_ctx_error(ctx), "not a regular file"));
    char cut_path[1100];
    snprintf(cut_path, sizeof cut_path, "%s/cut.pxi", dir);
    FILE *f = fopen(cut_path, "wb");
    if (f) {
        bytes v = encoded(ctx, 4, 4);
        fwrite(v.p, 1, v.n / 2, f);
        fclose(f);
        free(v.p);
    }
    s = pxl_pxi_load(ctx, cut_path, &back);
    CHECK_MSG(s == PXL_ERR_FORMAT && back == NULL && strstr(pxl_ctx_error(ctx), "cut.pxi") &&
                  strstr(pxl_ctx_error(ctx), "truncated"),
              "%s", pxl_ctx_error(ctx));
    fprintf(stderr, "  truncated file: %s\n", pxl_ctx_error(ctx));

    pxl_image_free(a);
    pxl_image_free(b);
    remove_dir(dir);
}

/* The NULL rule (core.h) for the image, codec and session functions. */
static void test_null_rule(pxl_ctx *ctx) {
    pxl_image *img = NULL;
    CHECK(pxl_image_create(NULL, 2, 2, &img) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_image_create(ctx, 2, 2, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "pxl_image_create: out is NULL") != NULL);
    CHECK(pxl_image_clone(ctx, NULL, &img) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_pxi_decode(ctx, NULL, 5, &img) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_pxi_load(ctx, NULL, &img) == PXL_ERR_INVALID_ARG);
    CHECK(strstr(pxl_ctx_error(ctx), "path is NULL") != NULL);
    CHECK(pxl_pxi_save(ctx, NULL, "x.pxi") == PXL_ERR_INVALID_ARG);
    CHECK(pxl_vm_session_create(ctx, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(pxl_vm_session_run(NULL, NULL, NULL) == PXL_ERR_INVALID_ARG);
    CHECK(img == NULL);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const char *verbose = getenv("PXL_TEST_VERBOSE");
    g_verbose = verbose && verbose[0] == '1';
    pxl_ctx *ctx = make_ctx();
    long live = g_count.live;
    test_null_rule(ctx);
    test_images(ctx);
    test_roundtrip(ctx);
    test_libpng_variants(ctx);
    test_broken(ctx);
    test_oom(ctx);
    test_files(ctx);
    CHECK_MSG(g_count.live == live, "%ld allocations leaked", g_count.live - live);
    /* a few messages as a user sees them */
    {
        bytes b = {0};
        bytes_put(&b, k_sig, 8);
        put_ihdr(&b, 20000, 10, 8, 6, 0);
        pxl_image *img = NULL;
        pxl_pxi_decode(ctx, b.p, b.n, &img);
        fprintf(stderr, "  %s\n", pxl_ctx_error(ctx));
        free(b.p);
    }
    pxl_ctx_free(ctx);
    CHECK(g_count.live == 0);
    return test_result("test_vm_pxi");
}
