/*
 * .pxi files: PNG <-> pxl_image through libpng (docs/pxvm-spec.md, section 1).
 *
 * The decoder is a hardened parser of outside input:
 *  - it reads only [data, data + len) through its own bounded reader; running
 *    past the end is a "truncated" error, never a read out of bounds;
 *  - it refuses (never converts) anything but 8-bit RGBA, and checks the size
 *    cap from IHDR before any pixel memory is allocated or any row decoded;
 *  - every ancillary chunk is skipped unread (no iCCP/zTXt inflation, no
 *    text buffers), and libpng's own limits are set as a second line;
 *  - CRC errors in critical chunks are errors (libpng's default action);
 *  - libpng's errors and warnings go into the context's message, and all of
 *    libpng's memory comes from the context's allocator.
 *
 * setjmp discipline: each function that calls setjmp keeps no local state
 * that changes after the setjmp; everything it owns lives in a pxi_io that
 * the caller holds and cleans up, so the error path frees exactly what exists.
 */
#include "vm_internal.h"

#include <png.h>
#include <zlib.h>

#include <assert.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* Largest .pxi file pxl_pxi_load reads: 8x the largest image's raw pixels
 * leaves room for stored (uncompressed) deflate blocks and small chunks. */
#define PXI_MAX_FILE ((uint64_t)PXL_VM_MAX_PIXELS * 4u * 8u)
/* Largest single chunk buffer libpng may allocate (we keep no ancillary chunk,
 * so this only bounds what libpng would need for a chunk it handles itself). */
#define PXI_CHUNK_MALLOC_MAX ((png_alloc_size_t)1 << 20)
/* Ancillary chunks libpng may cache (none are kept; a bound all the same). */
#define PXI_CHUNK_CACHE_MAX 64u

typedef struct pxi_io {
    pxl_ctx *ctx;
    int writing;
    /* reader: the input and the next byte libpng gets */
    const uint8_t *data;
    size_t len, pos;
    /* writer: the growing output */
    uint8_t *buf;
    size_t size, cap;
    /* libpng objects and the decoded image, owned until handed out */
    png_structp png;
    png_infop info;
    pxl_image *img;
    /* first failure, and libpng's first warning */
    int oom;
    pxl_status status;
    char msg[768];
    char warn[256];
} pxi_io;

/* Records the first failure (later ones are consequences of it). */
static void pxi_set_msg(pxi_io *io, pxl_status s, const char *fmt, ...) PXL_PRINTF(3, 4);
static void pxi_set_msg(pxi_io *io, pxl_status s, const char *fmt, ...) {
    if (io->msg[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(io->msg, sizeof io->msg, fmt, ap);
    va_end(ap);
    io->status = s;
}

/* Moves the recorded failure into the context. */
static pxl_status pxi_fail(pxl_ctx *ctx, const pxi_io *io) {
    pxl_status s = io->msg[0] ? io->status : PXL_ERR_FORMAT;
    const char *msg = io->msg[0] ? io->msg : "PNG could not be processed";
    if (io->warn[0])
        return pxl_fail(ctx, s, "%s (earlier libpng warning: %s)", msg, io->warn);
    return pxl_fail(ctx, s, "%s", msg);
}

/* ---- libpng callbacks ------------------------------------------------------------ */

static png_voidp pxi_malloc(png_structp png, png_alloc_size_t size) {
    pxi_io *io = png_get_mem_ptr(png);
    void *p = pxl_alloc(io->ctx, size);
    if (!p) io->oom = 1;
    return p;
}

static void pxi_free(png_structp png, png_voidp p) {
    pxi_io *io = png_get_mem_ptr(png);
    pxl_free(io->ctx, p);
}

/* libpng requires its error callback not to return. */
static _Noreturn void pxi_error(png_structp png, png_const_charp msg) {
    pxi_io *io = png_get_error_ptr(png);
    if (io->oom)
        pxi_set_msg(io, PXL_ERR_OUT_OF_MEMORY, "out of memory %s PNG (libpng: %s)",
                    io->writing ? "encoding" : "decoding", msg);
    else if (io->writing)
        pxi_set_msg(io, PXL_ERR_FORMAT, "PNG encoder error after %zu bytes: %s", io->size, msg);
    else
        pxi_set_msg(io, PXL_ERR_FORMAT, "PNG error at byte %zu: %s", io->pos, msg);
    png_longjmp(png, 1);
}

static void pxi_warning(png_structp png, png_const_charp msg) {
    pxi_io *io = png_get_error_ptr(png);
    if (!io->warn[0])
        snprintf(io->warn, sizeof io->warn, "%s at byte %zu", msg,
                 io->writing ? io->size : io->pos);
}

static void pxi_read(png_structp png, png_bytep out, size_t n) {
    pxi_io *io = png_get_io_ptr(png);
    if (n > io->len - io->pos) {
        pxi_set_msg(io, PXL_ERR_FORMAT,
                    "PNG truncated at byte %zu (a read of %zu bytes at offset %zu runs past "
                    "the end)",
                    io->len, n, io->pos);
        png_error(png, "truncated");
    }
    memcpy(out, io->data + io->pos, n);
    io->pos += n;
}

static void pxi_write(png_structp png, png_bytep data, size_t n) {
    pxi_io *io = png_get_io_ptr(png);
    size_t need;
    if (!pxl_add_size(io->size, n, &need)) {
        pxi_set_msg(io, PXL_ERR_OUT_OF_MEMORY, "PNG output size overflows");
        png_error(png, "output size overflows");
    }
    if (need > io->cap) {
        size_t cap = io->cap ? io->cap : 4096;
        while (cap < need)
            if (!pxl_mul_size(cap, 2, &cap)) cap = need;
        uint8_t *nb = io->buf ? pxl_realloc(io->ctx, io->buf, cap) : pxl_alloc(io->ctx, cap);
        if (!nb) {
            io->oom = 1;
            pxi_set_msg(io, PXL_ERR_OUT_OF_MEMORY,
                        "out of memory growing the PNG output to %zu bytes", cap);
            png_error(png, "out of memory");
        }
        io->buf = nb;
        io->cap = cap;
    }
    memcpy(io->buf + io->size, data, n);
    io->size = need;
}

static void pxi_flush(png_structp png) { (void)png; }

/* ---- decoding -------------------------------------------------------------------- */

static const char *colour_name(int ct) {
    switch (ct) {
    case PNG_COLOR_TYPE_GRAY: return "grey";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_PALETTE: return "palette";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "grey+alpha";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    default: return "invalid";
    }
}

/* Deflate expands at most 1032:1 (a 258-byte match per 2 bits), so fewer
 * input bytes than this cannot hold an image's pixels. */
#define PXI_DEFLATE_MAX_RATIO 1032u

/*
 * The spec's rules on IHDR fields: 8-bit RGBA within the size cap. `left` is
 * how many input bytes remain after the IHDR: an image whose pixels cannot
 * fit in them is refused before its pixel memory is allocated, so a tiny
 * file cannot make the decoder allocate and clear 128 MiB.
 */
static int pxi_check_header(pxi_io *io, uint32_t w, uint32_t h, int depth, int ct,
                            size_t left) {
    if (ct != PNG_COLOR_TYPE_RGB_ALPHA || depth != 8) {
        pxi_set_msg(io, PXL_ERR_FORMAT,
                    "colour type %s (%d), bit depth %d: pxVM images must be 8-bit RGBA",
                    colour_name(ct), ct, depth);
        return 0;
    }
    if (w == 0 || h == 0) {
        pxi_set_msg(io, PXL_ERR_FORMAT, "image %ux%u: width and height must be at least 1", w,
                    h);
        return 0;
    }
    if (w > PXL_VM_MAX_SIDE || h > PXL_VM_MAX_SIDE) {
        pxi_set_msg(io, PXL_ERR_FORMAT, "image %ux%u exceeds the %u side cap", w, h,
                    PXL_VM_MAX_SIDE);
        return 0;
    }
    if ((uint64_t)w * h > PXL_VM_MAX_PIXELS) {
        pxi_set_msg(io, PXL_ERR_FORMAT, "image %ux%u has %llu pixels, over the %u pixel cap", w,
                    h, (unsigned long long)((uint64_t)w * h), PXL_VM_MAX_PIXELS);
        return 0;
    }
    uint64_t px_bytes = (uint64_t)w * h * 4;
    if (px_bytes / PXI_DEFLATE_MAX_RATIO > left) {
        pxi_set_msg(io, PXL_ERR_FORMAT,
                    "PNG truncated: the %llu bytes of pixels of a %ux%u image need at least "
                    "%llu bytes of compressed data, but only %zu bytes follow byte %zu",
                    (unsigned long long)px_bytes, w, h,
                    (unsigned long long)(px_bytes / PXI_DEFLATE_MAX_RATIO), left,
                    io->len - left);
        return 0;
    }
    return 1;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * Looks at the IHDR before libpng is even created, so that a refused image
 * costs nothing and gets a precise message. Only a well-formed IHDR (first
 * chunk, length 13, good CRC) is judged here; anything else is left to libpng,
 * which reports it. pxi_decode_png checks the same rules again on what
 * png_read_info returns.
 */
static int pxi_precheck(pxi_io *io) {
    const uint8_t *c = io->data + 8;
    if (io->len < 8 + 8 + 13 + 4) return 1;
    if (be32(c) != 13 || memcmp(c + 4, "IHDR", 4) != 0) return 1;
    if ((uint32_t)crc32(0, c + 4, 4 + 13) != be32(c + 8 + 13)) return 1; /* zlib's CRC-32 */
    return pxi_check_header(io, be32(c + 8), be32(c + 12), c[16], c[17], io->len - 33);
}

/* Runs libpng over io's input into io->img. Returns 0 with io->msg set on failure. */
static int pxi_decode_png(pxi_io *io) {
    if (setjmp(png_jmpbuf(io->png))) return 0;
    png_set_read_fn(io->png, io, pxi_read);
    png_set_sig_bytes(io->png, 8);
    png_set_user_limits(io->png, PXL_VM_MAX_SIDE, PXL_VM_MAX_SIDE);
    png_set_chunk_malloc_max(io->png, PXI_CHUNK_MALLOC_MAX);
    png_set_chunk_cache_max(io->png, PXI_CHUNK_CACHE_MAX);
    /* Every chunk but IHDR, PLTE, tRNS, IDAT, IEND is skipped without being
     * read into memory; unknown critical chunks still fail. */
    png_set_keep_unknown_chunks(io->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    png_set_crc_action(io->png, PNG_CRC_DEFAULT, PNG_CRC_DEFAULT);

    png_read_info(io->png, io->info);
    png_uint_32 w, h;
    int depth, ct, interlace, compression, filter;
    if (!png_get_IHDR(io->png, io->info, &w, &h, &depth, &ct, &interlace, &compression,
                      &filter)) {
        pxi_set_msg(io, PXL_ERR_FORMAT, "PNG has no usable IHDR");
        return 0;
    }
    if (!pxi_check_header(io, w, h, depth, ct, io->len - io->pos)) return 0;
    int passes = png_set_interlace_handling(io->png);
    png_read_update_info(io->png, io->info);
    if (png_get_channels(io->png, io->info) != 4 ||
        png_get_rowbytes(io->png, io->info) != (size_t)w * 4) {
        pxi_set_msg(io, PXL_ERR_FORMAT, "PNG rows are not 4 bytes per pixel after setup");
        return 0;
    }
    pxl_status s = pxl_image_create(io->ctx, w, h, &io->img);
    if (s != PXL_OK) {
        pxi_set_msg(io, s, "%s", pxl_ctx_error(io->ctx));
        return 0;
    }
    size_t stride = (size_t)w * 4;
    for (int pass = 0; pass < passes; pass++)
        for (uint32_t y = 0; y < h; y++) png_read_row(io->png, io->img->px + y * stride, NULL);
    /* Reads through IEND: a stream cut after the pixels is still truncated. */
    png_read_end(io->png, NULL);
    return 1;
}

pxl_status pxl_pxi_decode(pxl_ctx *ctx, const uint8_t *data, size_t len, pxl_image **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_pxi_decode", out);
    if (!data && len) return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "pxl_pxi_decode: data is NULL");
    if (len < 8)
        return pxl_fail(ctx, PXL_ERR_FORMAT,
                        "not a PNG: %zu bytes, shorter than the 8-byte PNG signature", len);
    if (png_sig_cmp(data, 0, 8) != 0)
        return pxl_fail(ctx, PXL_ERR_FORMAT,
                        "not a PNG: bad signature at byte 0 (%02x %02x %02x %02x %02x %02x "
                        "%02x %02x)",
                        data[0], data[1], data[2], data[3], data[4], data[5], data[6], data[7]);

    pxi_io io;
    memset(&io, 0, sizeof io);
    io.ctx = ctx;
    io.data = data;
    io.len = len;
    io.pos = 8;
    if (!pxi_precheck(&io)) return pxi_fail(ctx, &io);

    io.png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &io, pxi_error, pxi_warning, &io,
                                      pxi_malloc, pxi_free);
    if (!io.png)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "cannot create a PNG reader (out of memory)");
    io.info = png_create_info_struct(io.png);
    if (!io.info) {
        png_destroy_read_struct(&io.png, NULL, NULL);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "cannot create a PNG reader (out of memory)");
    }
    int ok = pxi_decode_png(&io);
    png_destroy_read_struct(&io.png, &io.info, NULL);
    if (!ok) {
        pxl_image_free(io.img);
        return pxi_fail(ctx, &io);
    }
    *out = io.img;
    return PXL_OK;
}

/* ---- encoding -------------------------------------------------------------------- */

static int pxi_encode_png(pxi_io *io, const pxl_image *img) {
    if (setjmp(png_jmpbuf(io->png))) return 0;
    png_set_write_fn(io->png, io, pxi_write, pxi_flush);
    png_set_IHDR(io->png, io->info, img->w, img->h, 8, PNG_COLOR_TYPE_RGB_ALPHA,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(io->png, io->info);
    size_t stride = (size_t)img->w * 4;
    for (uint32_t y = 0; y < img->h; y++) png_write_row(io->png, img->px + y * stride);
    png_write_end(io->png, NULL);
    return 1;
}

/* An image handed to encode/save must itself respect the cap. */
static pxl_status pxi_check_image(pxl_ctx *ctx, const pxl_image *img) {
    if (img->w == 0 || img->h == 0 || img->w > PXL_VM_MAX_SIDE || img->h > PXL_VM_MAX_SIDE ||
        (uint64_t)img->w * img->h > PXL_VM_MAX_PIXELS)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG,
                        "cannot encode a %ux%u image: outside the %u side / %u pixel cap",
                        img->w, img->h, PXL_VM_MAX_SIDE, PXL_VM_MAX_PIXELS);
    if (!img->px)
        return pxl_fail(ctx, PXL_ERR_INVALID_ARG, "cannot encode an image without pixels");
    return PXL_OK;
}

pxl_status pxl_pxi_encode(pxl_ctx *ctx, const pxl_image *img, uint8_t **out, size_t *len) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_pxi_encode", img);
    PXL_REQUIRE(ctx, "pxl_pxi_encode", out);
    PXL_REQUIRE(ctx, "pxl_pxi_encode", len);
    pxl_status s = pxi_check_image(ctx, img);
    if (s != PXL_OK) return s;

    pxi_io io;
    memset(&io, 0, sizeof io);
    io.ctx = ctx;
    io.writing = 1;
    io.png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, &io, pxi_error, pxi_warning, &io,
                                       pxi_malloc, pxi_free);
    if (!io.png)
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "cannot create a PNG writer (out of memory)");
    io.info = png_create_info_struct(io.png);
    if (!io.info) {
        png_destroy_write_struct(&io.png, NULL);
        return pxl_fail(ctx, PXL_ERR_OUT_OF_MEMORY, "cannot create a PNG writer (out of memory)");
    }
    int ok = pxi_encode_png(&io, img);
    png_destroy_write_struct(&io.png, &io.info);
    if (!ok) {
        pxl_free(ctx, io.buf);
        return pxi_fail(ctx, &io);
    }
    *out = io.buf;
    *len = io.size;
    return PXL_OK;
}

/* ---- files ----------------------------------------------------------------------- */

pxl_status pxl_pxi_load(pxl_ctx *ctx, const char *path, pxl_image **out) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_pxi_load", path);
    PXL_REQUIRE(ctx, "pxl_pxi_load", out);
    uint8_t *buf = NULL;
    size_t n = 0;
    pxl_status s = pxl_file_read(ctx, path, (size_t)PXI_MAX_FILE, &buf, &n);
    if (s != PXL_OK) return s; /* the message names the path */
    s = pxl_pxi_decode(ctx, buf, n, out);
    pxl_free(ctx, buf);
    if (s != PXL_OK) {
        char msg[PXL_ERR_MAX];
        pxl_copy_str(msg, sizeof msg, pxl_ctx_error(ctx));
        pxl_fail(ctx, s, "%s: %s", path, msg);
    }
    return s;
}

pxl_status pxl_pxi_save(pxl_ctx *ctx, const pxl_image *img, const char *path) {
    PXL_REQUIRE_CTX(ctx);
    PXL_REQUIRE(ctx, "pxl_pxi_save", img);
    PXL_REQUIRE(ctx, "pxl_pxi_save", path);
    uint8_t *png;
    size_t len;
    pxl_status s = pxl_pxi_encode(ctx, img, &png, &len);
    if (s != PXL_OK) return s;
    s = pxl_file_write(ctx, path, png, len);
    pxl_free(ctx, png);
    return s;
}
