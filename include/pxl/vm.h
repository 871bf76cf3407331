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
/* pxl_file_read (at most 1 GiB: 8x the largest image's raw pixels) + pxl_pxi_decode;
 * messages start with the path. */
pxl_status pxl_pxi_load(pxl_ctx *ctx, const char *path, pxl_image **out);
/* pxl_pxi_encode + pxl_file_write: no half-written file, ever. */
pxl_status pxl_pxi_save(pxl_ctx *ctx, const pxl_image *img, const char *path);

/*
 * Files: every file pxVM reads or writes (.pxi images, assembler text and its
 * file: data, disassembly), and every file the pxl CLI writes, goes through
 * these two.
 *
 * pxl_file_read reads a whole regular file of at most max bytes into *data
 * (pxl_alloc'ed, free with pxl_free; a NUL byte follows the data and is not
 * counted in *len). It opens the path without blocking and requires a regular
 * file: a FIFO, directory, device or socket fails at once with PXL_ERR_IO
 * ("X is a FIFO, not a regular file"); a file over max bytes fails with
 * PXL_ERR_FORMAT ("X is too large ..."), without reading past the cap.
 *
 * pxl_file_write replaces path with len bytes atomically: they go to a new
 * temporary file in the target's directory, are fsync'ed, and the temporary is
 * renamed over the target. Any failure leaves the old file as it was and no
 * temporary behind (PXL_ERR_IO, naming the path and the reason). The rules:
 *  - a new file gets mode 0666 & ~umask; an existing file keeps its permission
 *    bits (not set-id bits) and, where the process may, its owner and group;
 *  - a symbolic link is followed: the file it resolves to is replaced (the
 *    temporary lives beside that file) and the link stays; a link that does
 *    not resolve is refused;
 *  - an existing target that is not a regular file (a FIFO, a directory, a
 *    device such as /dev/null, even for root) is refused;
 *  - a read-only target (no write bit, or not writable by this process) is
 *    refused with "is read-only", even for root;
 *  - a target with more than one hard link is refused: a rename would split
 *    the links (the other names would keep the old bytes).
 * The checks and the rename are not one atomic step: a target changed by
 * someone else in between is replaced as the rename finds it.
 */
pxl_status pxl_file_read(pxl_ctx *ctx, const char *path, size_t max, uint8_t **data, size_t *len);
pxl_status pxl_file_write(pxl_ctx *ctx, const char *path, const void *data, size_t len);

/* ---- programs ------------------------------------------------------------------- */

/* Version of an image's program: 0 or 1 (v1 has the marker at pixel (0, 0)). */
int pxl_vm_version(const pxl_image *img);

/*
 * Checks every static rule of the spec. On failure returns PXL_ERR_FORMAT
 * with a message naming the pixel ("instruction at x=5 (matmul): ..." or
 * "tensor header at (0, 12): ...").
 */
pxl_status pxl_vm_validate(pxl_ctx *ctx, const pxl_image *img);

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
pxl_status pxl_vm_run(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);
/* The CPU interpreter, whatever the backend. */
pxl_status pxl_vm_run_cpu(pxl_ctx *ctx, pxl_image *img, const pxl_vm_options *opts);

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
pxl_status pxl_vm_session_create(pxl_ctx *ctx, pxl_vm_session **out);
pxl_status pxl_vm_session_run(pxl_vm_session *s, pxl_image *img, const pxl_vm_options *opts);
void pxl_vm_session_free(pxl_vm_session *s);

/*
 * Assembler and disassembler (the text format of docs/pxvm-asm.md).
 * asm: text -> image; data files named in the text are read relative to
 * base_dir (NULL: the current directory). Errors are PXL_ERR_FORMAT naming
 * the line. disasm: image -> text that asm turns back into the same image.
 * *text is NUL-terminated and freed with pxl_free(ctx, *text).
 */
pxl_status pxl_vm_asm(pxl_ctx *ctx, const char *text, size_t len, const char *base_dir,
                      pxl_image **out);
pxl_status pxl_vm_disasm(pxl_ctx *ctx, const pxl_image *img, char **text, size_t *len);

/* ---- Pixel-LLM -------------------------------------------------------------------- */
/*
 * A character-level neural n-gram language model whose int8 weights and
 * forward pass are one v1 pxVM image (models/pixel-llm.pxi). Row 1 holds an
 * int32 metadata tensor, the vocabulary is an int32 tensor of Unicode code
 * points; row 0 runs GATHER, MATMUL (flattened), ADD, LUT, MATMUL, ADD and
 * leaves int32 logits in the image. The CPU and GPU interpreters give the
 * same logits, so the same seed gives the same text on both.
 */
typedef struct pxl_llm pxl_llm; /* a loaded model; owns its image */

typedef struct pxl_llm_train_options {
    const char *corpus_path;  /* text file (bible(1) output or plain text); NULL: run bible(1) */
    const char *corpus_text;  /* if non-NULL, corpus_len bytes used instead of any file */
    size_t corpus_len;
    uint32_t context;         /* characters of context C (default 16) */
    uint32_t embed;           /* embedding width D (default 24) */
    uint32_t hidden;          /* hidden units H (default 384) */
    uint32_t batch;           /* examples per step (default 256) */
    uint64_t steps;           /* optimiser steps (default 12000) */
    double lr;                /* Adam peak learning rate (default 3e-3) */
    uint64_t seed;            /* everything is deterministic given the seed (default 1) */
    uint32_t vm_check;        /* held-out contexts also run through pxl_vm_run_cpu and
                                 compared with the C reference (default 64; 0: none) */
    int verbose;              /* 1: progress lines on stderr */
} pxl_llm_train_options;

typedef struct pxl_llm_train_report {
    uint32_t vocab, context, embed, hidden;
    uint64_t params, steps, train_chars, heldout_chars, tune_chars;
    double bpc_float;         /* held-out bits per character, float model */
    double bpc_int8;          /* held-out, int8 model as the VM computes it */
    double bpc_trigram;       /* held-out, interpolated Kneser-Ney trigram */
    double kn_d2, kn_d3;      /* trigram discounts, tuned on part of train */
    double train_loss_bpc;    /* last 5% of steps, float, on training batches */
    uint32_t vm_checked;      /* contexts whose VM logits equalled the reference */
    double seconds_load, seconds_trigram, seconds_train, seconds_quant, seconds_total;
    uint32_t image_w, image_h;
    const char *split;        /* static description of the train/held-out split */
} pxl_llm_train_report;

/* Defaults as documented above. */
pxl_llm_train_options pxl_llm_train_options_default(void);

/*
 * Loads and splits the corpus, fits the trigram baseline, trains the float
 * model on the context's CPU threads, quantizes it, and returns the image in
 * *out (free with pxl_image_free) and the measurements in *report. Uses only
 * the CPU. Fails with PXL_ERR_IO (corpus unreadable), PXL_ERR_INVALID_ARG
 * (options, or a corpus too small to split) or PXL_ERR_OUT_OF_MEMORY; *out is
 * untouched on failure.
 */
pxl_status pxl_llm_train(pxl_ctx *ctx, const pxl_llm_train_options *opts, pxl_image **out,
                         pxl_llm_train_report *report);

/*
 * Takes ownership of img (freed by pxl_llm_free, also when this fails) and
 * checks that it validates and is a Pixel-LLM image. PXL_ERR_FORMAT otherwise.
 */
pxl_status pxl_llm_open(pxl_ctx *ctx, pxl_image *img, pxl_llm **out);
/* pxl_pxi_load + pxl_llm_open. */
pxl_status pxl_llm_load(pxl_ctx *ctx, const char *path, pxl_llm **out);
void pxl_llm_free(pxl_llm *m); /* NULL is a no-op */

/*
 * The default model path: <exe_dir>/../models/pixel-llm.pxi,
 * <exe_dir>/../../models/, <exe_dir>/../share/pxl/models/ (make install),
 * then the source tree pxl was built from. Writes
 * the first that exists into buf; PXL_ERR_IO (with the places tried) if none.
 */
pxl_status pxl_llm_default_path(pxl_ctx *ctx, char *buf, size_t cap);

typedef struct pxl_llm_info {
    uint32_t vocab, context, embed, hidden;
    double logit_scale;       /* natural-log units per logit step */
    double bpc_int8, bpc_float, bpc_trigram; /* as measured at training (0: unknown) */
    uint32_t image_w, image_h;
} pxl_llm_info;
void pxl_llm_get_info(const pxl_llm *m, pxl_llm_info *info);

/* The model's image (owned by m; pxl_llm_logits_vm writes into it). */
const pxl_image *pxl_llm_image(const pxl_llm *m);

/*
 * Logits (int32[vocab]) for a context of `context` ids (each < vocab), oldest
 * first. _vm writes the ids into the image and runs it with pxl_vm_run
 * (cpu = 0: the context's backend; 1: pxl_vm_run_cpu); _ref is the int8
 * forward pass in C, without the VM. Both give the same bytes.
 */
pxl_status pxl_llm_logits_vm(pxl_llm *m, const uint32_t *ids, int cpu, int32_t *logits);
pxl_status pxl_llm_logits_ref(pxl_llm *m, const uint32_t *ids, int32_t *logits);

/* Maps a Unicode code point to an id (unknown characters: the unknown id) and back. */
uint32_t pxl_llm_encode(const pxl_llm *m, uint32_t code_point);
uint32_t pxl_llm_decode(const pxl_llm *m, uint32_t id);

typedef void (*pxl_llm_token_fn)(void *user, const char *utf8, size_t len);

typedef struct pxl_llm_gen_options {
    const char *prompt;       /* UTF-8, may be NULL; its last `context` chars seed the context */
    uint32_t tokens;          /* characters to generate (default 300) */
    double temperature;       /* 0: greedy (first largest logit); default 0.8 */
    uint32_t top_k;           /* 0: all */
    uint64_t seed;            /* sampling PRNG seed */
    int reference;            /* 1: use the C reference instead of the VM */
    pxl_llm_token_fn on_token;/* optional: called with each generated character */
    void *user;
} pxl_llm_gen_options;

typedef struct pxl_llm_gen_result {
    char *text;               /* generated UTF-8 (prompt excluded), NUL-terminated;
                                 free with pxl_free(ctx, text) */
    size_t len;
    uint32_t tokens;
    double seconds, tokens_per_s;
    pxl_backend backend;      /* where the VM ran */
} pxl_llm_gen_result;

pxl_llm_gen_options pxl_llm_gen_options_default(void);
/* Generates opts->tokens characters. On failure res->text is NULL. */
pxl_status pxl_llm_generate(pxl_llm *m, const pxl_llm_gen_options *opts, pxl_llm_gen_result *res);

#ifdef __cplusplus
}
#endif
#endif
