/*
 * pxl/pixel_llm.h: Pixel-LLM, a character-level neural n-gram language model
 * whose int8 weights and forward pass are one v1 pxVM image
 * (models/pixel-llm.pxi): its trainer, its loader and its sampler. It is a
 * product built on the public VM API (pxl/vm.h): row 1 of the image holds an
 * int32 metadata tensor, the vocabulary is an int32 tensor of Unicode code
 * points, and row 0 runs GATHER, MATMUL (flattened), ADD, LUT, MATMUL, ADD,
 * leaving int32 logits in the image. The CPU and GPU interpreters give the
 * same logits, so the same seed gives the same text on both.
 *
 * Every name here starts with pxl_pllm_. Option structs may be zeroed: a
 * zero field means the documented default.
 */
#ifndef PXL_PIXEL_LLM_H
#define PXL_PIXEL_LLM_H

#include "pxl/core.h"
#include "pxl/vm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pxl_pllm pxl_pllm; /* a loaded model; owns its image */

/* ---- training ------------------------------------------------------------------------ */

typedef struct pxl_pllm_train_options {
    /*
     * The corpus: corpus_len bytes of UTF-8 text, borrowed for the call.
     * bible(1) output (chapter headings and verse numbers are dropped, one
     * verse per line) or plain text (blank lines end paragraphs). Required.
     */
    const char *corpus;
    size_t corpus_len;
    uint32_t context;   /* characters of context C (0: 16) */
    uint32_t embed;     /* embedding width D (0: 24) */
    uint32_t hidden;    /* hidden units H (0: 384) */
    uint32_t batch;     /* examples per step (0: 256) */
    uint64_t steps;     /* optimiser steps (0: 12000) */
    double lr;          /* Adam peak learning rate (0: 3e-3) */
    uint64_t seed;      /* everything is deterministic given the seed (0: 1) */
    uint32_t vm_check;  /* held-out contexts run through the VM and compared with the
                           C reference (0: 64) */
    int no_vm_check;    /* 1: skip that check */
    int verbose;        /* 1: progress lines on stderr */
} pxl_pllm_train_options;

typedef struct pxl_pllm_train_report {
    uint32_t vocab, context, embed, hidden;
    uint64_t params, steps, train_chars, heldout_chars, tune_chars;
    double bpc_float;         /* held-out bits per character, float model */
    double bpc_int8;          /* held-out, int8 model as the VM computes it */
    double bpc_trigram;       /* held-out, interpolated Kneser-Ney trigram */
    double kn_d2, kn_d3;      /* trigram discounts, tuned on part of train */
    double train_loss_bpc;    /* last 5% of steps, float, on training batches */
    uint32_t vm_checked;      /* contexts whose CPU-interpreter logits equalled the reference */
    uint32_t vm_checked_gpu;  /* the same through the GPU interpreter (0 on a CPU context) */
    double seconds_parse, seconds_trigram, seconds_train, seconds_quant, seconds_total;
    uint32_t image_w, image_h;
    const char *split;        /* static description of the train/held-out split */
} pxl_pllm_train_report;

/*
 * Parses and splits the corpus, fits the trigram baseline, trains the float
 * model on the context's CPU threads, quantizes it, and returns the image in
 * *out (free with pxl_image_free) and the measurements in *report (may be
 * NULL). Training and quantization always run on the CPU; the VM check runs
 * the CPU interpreter, and on a GPU context the GPU interpreter as well.
 * opts may not be NULL (the corpus is required). Fails with
 * PXL_ERR_INVALID_ARG (options, no corpus, or a corpus too small to split),
 * PXL_ERR_FORMAT (the VM's logits differ from the reference),
 * PXL_ERR_OUT_OF_MEMORY or a GPU error; *out is untouched on failure.
 */
PXL_API pxl_status pxl_pllm_train(pxl_ctx *ctx, const pxl_pllm_train_options *opts, pxl_image **out,
                          pxl_pllm_train_report *report);

/* ---- the model ------------------------------------------------------------------------ */

/*
 * Takes ownership of img (freed by pxl_pllm_free, also when this fails) and
 * checks that it validates and is a Pixel-LLM image. PXL_ERR_FORMAT otherwise.
 */
PXL_API pxl_status pxl_pllm_open(pxl_ctx *ctx, pxl_image *img, pxl_pllm **out);
/* pxl_pxi_load + pxl_pllm_open. */
PXL_API pxl_status pxl_pllm_load(pxl_ctx *ctx, const char *path, pxl_pllm **out);
PXL_API void pxl_pllm_free(pxl_pllm *m); /* NULL is a no-op */

/*
 * The default model path: <exe_dir>/../models/pixel-llm.pxi,
 * <exe_dir>/../../models/, <exe_dir>/../share/pxl/models/ (make install).
 * Writes the first that exists
 * into buf; PXL_ERR_IO (with the places tried) if none.
 */
PXL_API pxl_status pxl_pllm_default_path(pxl_ctx *ctx, char *buf, size_t cap);

typedef struct pxl_pllm_info {
    uint32_t vocab, context, embed, hidden;
    double logit_scale;       /* natural-log units per logit step */
    double bpc_int8, bpc_float, bpc_trigram; /* as recorded at training (0: unknown) */
    uint32_t image_w, image_h;
} pxl_pllm_info;
PXL_API void pxl_pllm_get_info(const pxl_pllm *m, pxl_pllm_info *info);

/* The model's image (owned by m; pxl_pllm_logits_vm writes into it). */
PXL_API const pxl_image *pxl_pllm_image(const pxl_pllm *m);

/*
 * Logits (int32[vocab]) for a context of `context` ids (each < vocab), oldest
 * first. _vm writes the ids into the image and runs it (cpu = 0: the
 * context's backend, through a session that keeps the weights on the GPU;
 * 1: pxl_vm_run_cpu); _ref is the int8 forward pass in C, without the VM.
 * Both give the same bytes. PXL_ERR_INVALID_ARG for an id out of range.
 */
PXL_API pxl_status pxl_pllm_logits_vm(pxl_pllm *m, const uint32_t *ids, int cpu, int32_t *logits);
PXL_API pxl_status pxl_pllm_logits_ref(pxl_pllm *m, const uint32_t *ids, int32_t *logits);

/* Maps a Unicode code point to an id (unknown characters: the unknown id) and back. */
PXL_API uint32_t pxl_pllm_encode(const pxl_pllm *m, uint32_t code_point);
PXL_API uint32_t pxl_pllm_decode(const pxl_pllm *m, uint32_t id);

/* ---- generation ------------------------------------------------------------------------ */

typedef void (*pxl_pllm_token_fn)(void *user, const char *utf8, size_t len);

typedef struct pxl_pllm_gen_options {
    const char *prompt;       /* UTF-8, may be NULL; its last `context` chars seed the context */
    /*
     * Text fed to the model, not printed, when the prompt is NULL or empty
     * (NULL: none; the context is then padding alone, which the model saw
     * only at the start of its corpus). For a model trained on bible(1)
     * output, the end of a verse ("of the LORD.\n", what `pxl generate`
     * passes) makes it start a new verse.
     */
    const char *prime;
    uint32_t tokens;          /* characters to generate (0: 300) */
    double temperature;       /* softmax(logit * scale / T) (0: 0.8) */
    int greedy;               /* 1: always the first largest logit (temperature,
                                 top_k and seed unused) */
    uint32_t top_k;           /* sample among the k likeliest (0: all) */
    uint64_t seed;            /* sampling PRNG seed (every value, 0 included, is a seed) */
    int reference;            /* 1: use the C reference instead of the VM */
    pxl_pllm_token_fn on_token; /* optional: called with each generated character */
    void *user;
} pxl_pllm_gen_options;

typedef struct pxl_pllm_gen_result {
    char *text;               /* generated UTF-8 (prompt excluded), NUL-terminated;
                                 free with pxl_free(ctx, text) */
    size_t len;
    uint32_t tokens;
    double seconds, tokens_per_s;
    pxl_backend backend;      /* where the VM ran */
} pxl_pllm_gen_result;

/*
 * Generates opts->tokens characters (opts NULL: all defaults). On failure
 * res->text is NULL; PXL_ERR_INVALID_ARG for a temperature outside
 * (0, 100] or too many tokens.
 */
PXL_API pxl_status pxl_pllm_generate(pxl_pllm *m, const pxl_pllm_gen_options *opts, pxl_pllm_gen_result *res);

#ifdef __cplusplus
}
#endif
#endif
