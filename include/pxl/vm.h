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
PXL_API pxl_status pxl_image_create(pxl_ctx *ctx, uint32_t w, uint32_t h, pxl_image **out);
PXL_API pxl_status pxl_image_clone(pxl_ctx *ctx, const pxl_image *src, pxl_image **out);
PXL_API void pxl_image_free(pxl_image *img);
static inline uint8_t *pxl_image_px(const pxl_image *img, uint32_t x, uint32_t y) {
    return img->px + ((size_t)y * img->w + x) * 4;
}

/*
 * PNG <-> image. Decoding takes a pointer and a length, refuses anything but
 * 8-bit RGBA (the message names the colour type found), checks the size cap
 * before decoding pixels, and never reads outside [data, data + len).
 * Errors are PXL_ERR_FORMAT with a message naming what is wrong.
 */
PXL_API pxl_status pxl_pxi_decode(pxl_ctx *ctx, const uint8_t *data, size_t len, pxl_image **out);
/* Encodes to a PNG in memory; *out is freed with pxl_free(ctx, *out). */
PXL_API pxl_status pxl_pxi_encode(pxl_ctx *ctx, const pxl_image *img, uint8_t **out, size_t *len);
/* pxl_file_read (at most 1 GiB: 8x the largest image's raw pixels) + pxl_pxi_decode;
 * messages start with the path. */
PXL_API pxl_status pxl_pxi_load(pxl_ctx *ctx, const char *path, pxl_image **out);
/* pxl_pxi_encode + pxl_file_write: no half-written file, ever. */
PXL_API pxl_status pxl_pxi_save(pxl_ctx *ctx, const pxl_image *img, const char *path);

/* ---- the image format (docs/pxvm-spec.md) ------------------------------------------- */
/*
 * The numbers of the format, for code that writes programs into images
 * (Pixel-LLM does): opcodes, the v1 marker, the tensor header and its dtypes.
 */
enum {
    PXL_OP_HALT = 0,
    /* v0: one pixel (op, G, B, A) */
    PXL_OP_V0_DOT = 1,
    PXL_OP_V0_ADD = 2,
    PXL_OP_V0_RELU = 3,
    PXL_OP_V0_MATMUL = 4,
    /* v1: two pixels (op, out lo, out hi, imm) (a lo, a hi, b lo, b hi) */
    PXL_OP_MATMUL = 16,
    PXL_OP_ADD = 17,
    PXL_OP_MUL = 18,
    PXL_OP_LUT = 19,
    PXL_OP_GATHER = 20,
    PXL_OP_ARGMAX = 21,
    PXL_OP_COPY = 22
};

/* v1 marker at pixel (0, 0) */
#define PXL_VM_MAGIC_R 0x50 /* 'P' */
#define PXL_VM_MAGIC_G 0x58 /* 'X' */
#define PXL_VM_MAGIC_B 0x56 /* 'V' */
#define PXL_VM_MAGIC_VERSION 0x01

/* v1 tensor header: 3 pixels (magic, dtype, shift, 0) (cols lo/hi, rows lo/hi) (int32 multiplier) */
#define PXL_VM_TENSOR_MAGIC 0x54 /* 'T' */
#define PXL_VM_HEADER_PIXELS 3
enum { PXL_VM_INT8 = 1, PXL_VM_INT32 = 2 };

#define PXL_VM_FLAG_FLATTEN_A 0x01 /* MATMUL imm8 bit 0 */
#define PXL_VM_DEFAULT_BUDGET ((uint64_t)1 << 40)

/*
 * Requantization (spec 3.3): round(acc * mult / 2^shift), half up, clamped
 * to the dtype. Both interpreters use this one definition, and so does code
 * that must compute exactly what a program computes (Pixel-LLM's reference).
 */
static inline int64_t pxl_vm_rq(int64_t acc, int32_t mult, uint8_t shift, uint8_t dtype) {
    int64_t t = acc * (int64_t)mult;
    int64_t q = shift ? (t + ((int64_t)1 << (shift - 1))) >> shift : t;
    int64_t lo = dtype == PXL_VM_INT8 ? -128 : -2147483648LL;
    int64_t hi = dtype == PXL_VM_INT8 ? 127 : 2147483647LL;
    return q < lo ? lo : q > hi ? hi : q;
}


/* ---- programs ------------------------------------------------------------------- */

/* Version of an image's program: 0 or 1 (v1 has the marker at pixel (0, 0)). */
PXL_API int pxl_vm_version(const pxl_image *img);

/*
 * Checks every static rule of the spec. On failure returns PXL_ERR_FORMAT
 * with a message naming the pixel ("instruction at x=5 (matmul): ..." or
 * "tensor header at (0, 12): ...").
 */
PXL_API pxl_status pxl_vm_validate(pxl_ctx *ctx, const pxl_image *img);

/* Called once per executed instruction when tracing. */
typedef void (*pxl_vm_trace_fn)(void *user, uint32_t x, const char *text);

/*
 * Where a run's time went (wall-clock seconds, pxl_time_now). Phases that a
 * backend does not have stay 0. decode + compile + upload + execute +
 * download is the run, to within the bookkeeping between phases.
 */
typedef struct pxl_vm_profile {
    double decode_s;   /* validation and decoding of the program */
    double compile_s;  /* GPU: creating the pipelines this context had not created yet */
    double upload_s;   /* GPU: buffers created and the pixels the program reads uploaded */
    double execute_s;  /* CPU: the instructions; GPU: recording, submit and the wait */
    double download_s; /* GPU: the pixels the program wrote read back */
    uint64_t upload_bytes, download_bytes;
    uint64_t instructions; /* executed (the budget may stop a program early) */
    uint64_t dispatches;   /* GPU compute dispatches recorded */
} pxl_vm_profile;

typedef struct pxl_vm_options {
    uint64_t max_steps;        /* work-unit budget; 0: 2^40 */
    pxl_vm_trace_fn trace;     /* optional */
    void *trace_user;
    pxl_vm_profile *profile;   /* optional: overwritten with this run's profile */
} pxl_vm_options;

/*
 * Validates, then runs the program in place on img with the context's
 * backend (CPU interpreter, or the WGSL interpreter on a GPU context).
 * Returns PXL_ERR_FORMAT for invalid programs (image unchanged), and
 * PXL_ERR_INVALID_ARG with a message for run-time errors the spec defines
 * (budget exceeded, GATHER index out of range); in those cases the image
 * holds what the spec says it holds.
 */
PXL_API pxl_status pxl_vm_run(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);
/* The CPU interpreter, whatever the backend. */
PXL_API pxl_status pxl_vm_run_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);

/*
 * A session keeps what the GPU interpreter built for a run (pipelines, the
 * image's GPU buffer) for the next run, and knows what that buffer holds:
 * a later run uploads only the pixels the program reads that differ from
 * what the GPU already has (compared in blocks of 1024 pixels), so running
 * the same program again with a few pixels changed (a language model's next
 * token) moves only those. Results are the bytes pxl_vm_run gives. On a CPU
 * context a session just runs the CPU interpreter. Free the session before
 * its context; pxl_vm_session_free(NULL) is a no-op.
 */
typedef struct pxl_vm_session pxl_vm_session;
PXL_API pxl_status pxl_vm_session_create(pxl_ctx *ctx, pxl_vm_session **out);
PXL_API pxl_status pxl_vm_session_run(pxl_vm_session *s, pxl_image *img, const pxl_vm_options *opts);
PXL_API void pxl_vm_session_free(pxl_vm_session *s);

/*
 * Assembler and disassembler (the text format of docs/pxvm-asm.md).
 * asm: text -> image; data files named in the text are read relative to
 * base_dir (NULL: the current directory). Errors are PXL_ERR_FORMAT naming
 * the line. disasm: image -> text that asm turns back into the same image.
 * *text is NUL-terminated and freed with pxl_free(ctx, *text).
 */
PXL_API pxl_status pxl_vm_asm(pxl_ctx *ctx, const char *text, size_t len, const char *base_dir,
                      pxl_image **out);
PXL_API pxl_status pxl_vm_disasm(pxl_ctx *ctx, const pxl_image *img, char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
