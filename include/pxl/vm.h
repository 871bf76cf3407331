/*
 * pxl/vm.h: pxVM, the pixel VM. A program and its data are one RGBA image
 * (a .pxi file, a PNG): row 0 holds the instructions, the rows below the data.
 * The CPU and GPU interpreters give byte-identical images. docs/pxvm-spec.md
 * defines every result; src/vm/spec.h holds the opcode table all tools share.
 */
#ifndef PXL_VM_H
#define PXL_VM_H

#include "pxl/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PXL_VM_MAX_SIDE 16384u
#define PXL_VM_MAX_PIXELS (1u << 25)

/* An RGBA8 image, row-major, 4 bytes per pixel (R, G, B, A). */
typedef struct pxl_image {
    uint32_t w, h;
    uint8_t *px; /* w * h * 4 bytes, owned by the image */
    pxl_ctx *ctx;
} pxl_image;

/* A zeroed image; fails with PXL_ERR_INVALID_ARG outside the size cap. */
pxl_status pxl_image_create(pxl_ctx *ctx, uint32_t w, uint32_t h, pxl_image **out);
pxl_status pxl_image_clone(pxl_ctx *ctx, const pxl_image *src, pxl_image **out);
void pxl_image_free(pxl_image *img);
static inline uint8_t *pxl_image_px(const pxl_image *img, uint32_t x, uint32_t y) {
    return img->px + ((size_t)y * img->w + x) * 4;
}

/*
 * PNG <-> image. Decoding takes a pointer and a length, refuses anything but
 * 8-bit RGBA (the message names the colour type found), checks the size cap
 * before decoding pixels, and never reads outside [data, data + len).
 * Errors are PXL_ERR_FORMAT with a message naming what is wrong.
 */
pxl_status pxl_pxi_decode(pxl_ctx *ctx, const uint8_t *data, size_t len, pxl_image **out);
/* Encodes to a PNG in memory; *out is freed with pxl_free(ctx, *out). */
pxl_status pxl_pxi_encode(pxl_ctx *ctx, const pxl_image *img, uint8_t **out, size_t *len);
pxl_status pxl_pxi_load(pxl_ctx *ctx, const char *path, pxl_image **out);
/* Writes to a temporary file beside path, then renames it: no half-written file. */
pxl_status pxl_pxi_save(pxl_ctx *ctx, const pxl_image *img, const char *path);

/* ---- programs ------------------------------------------------------------------- */

/* Version of an image's program: 0 or 1 (v1 has the marker at pixel (0, 0)). */
int pxl_vm_version(const pxl_image *img);

/*
 * Checks every static rule of the spec. On failure returns PXL_ERR_FORMAT
 * with a message naming the pixel ("instruction at x=5: ..." or "tensor at
 * (0, 12): ...").
 */
pxl_status pxl_vm_validate(pxl_ctx *ctx, const pxl_image *img);

/* Called once per executed instruction when tracing. */
typedef void (*pxl_vm_trace_fn)(void *user, uint32_t x, const char *text);

typedef struct pxl_vm_options {
    uint64_t max_steps;        /* work-unit budget; 0: 2^32 */
    pxl_vm_trace_fn trace;     /* optional */
    void *trace_user;
} pxl_vm_options;

/*
 * Validates, then runs the program in place on img with the context's
 * backend (CPU interpreter, or the WGSL interpreter on a GPU context).
 * Returns PXL_ERR_FORMAT for invalid programs (image unchanged), and
 * PXL_ERR_INVALID_ARG with a message for run-time errors the spec defines
 * (budget exceeded, GATHER index out of range); in those cases the image
 * holds what the spec says it holds.
 */
pxl_status pxl_vm_run(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);
/* The CPU interpreter, whatever the backend. */
pxl_status pxl_vm_run_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);

/*
 * Assembler and disassembler (docs/pxvm-spec.md, section "Text format").
 * asm: text -> image; data files named in the text are read relative to
 * base_dir (NULL: the current directory). Errors are PXL_ERR_FORMAT naming
 * the line. disasm: image -> text that asm turns back into the same image.
 * *text is NUL-terminated and freed with pxl_free(ctx, *text).
 */
pxl_status pxl_vm_asm(pxl_ctx *ctx, const char *text, size_t len, const char *base_dir,
                      pxl_image **out);
pxl_status pxl_vm_disasm(pxl_ctx *ctx, const pxl_image *img, char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
