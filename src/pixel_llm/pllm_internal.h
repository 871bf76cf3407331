/*
 * Pixel-LLM internals shared by pixel_llm.c (image layout, loader, int8
 * reference forward), pixel_llm_generate.c (the sampler) and
 * pixel_llm_train.c (corpus, trigram baseline, float trainer, quantizer).
 * Not installed. Pixel-LLM uses the public VM API only (pxl/vm.h: the image
 * format constants and pxl_vm_rq), plus core's internal helpers.
 *
 * The model: ids (C previous characters) -> embedding rows (C x D, int8)
 * -> flattened MATMUL with W1 (H x C*D, int8) -> int32 + bias b1 -> int8
 * pre-activation (multiplier M1, shift s1) -> LUT (tanh) -> int8 hidden
 * (scale 1/127) -> MATMUL with W2 (V x H, int8) -> int32 + bias b2 -> int32
 * logits; logit * scale (scale = mant / 2^shift) is the natural-log logit.
 */
#ifndef PXL_PLLM_INTERNAL_H
#define PXL_PLLM_INTERNAL_H

#include "../core/internal.h"
#include "pxl/pixel_llm.h"
#include "pxl/vm.h"

#define PLLM_MAX_VOCAB 97u /* 96 symbols + unknown (id 0) */
#define PLLM_META_N 24u
#define PLLM_META_MAGIC 0x4D4C4C50 /* "PLLM" little-endian */
#define PLLM_FORMAT_VERSION 1

/* metadata tensor (row 1, int32 1 x PLLM_META_N) */
enum {
    PLLM_M_MAGIC = 0,
    PLLM_M_VERSION,
    PLLM_M_VOCAB,
    PLLM_M_CONTEXT,
    PLLM_M_EMBED,
    PLLM_M_HIDDEN,
    PLLM_M_SCALE_MANT,  /* logit scale = mant / 2^shift (natural-log units per logit step) */
    PLLM_M_SCALE_SHIFT,
    PLLM_M_UNK_ID,
    PLLM_M_PAD_ID,      /* fills the context before the first character */
    PLLM_M_ROW_IDS,
    PLLM_M_ROW_LOGITS,
    PLLM_M_ROW_VOCAB,
    PLLM_M_BPC_INT8_U,  /* held-out bpc x 1e6 measured at training (0: unknown) */
    PLLM_M_BPC_FLOAT_U,
    PLLM_M_BPC_TRIGRAM_U,
    PLLM_M_TRAIN_CHARS,
    PLLM_M_HELDOUT_CHARS,
    PLLM_M_SEED_LO,
    PLLM_M_STEPS
};

/* Quantized weights, as laid out in the image (row-major, b operands transposed). */
typedef struct pllm_qmodel {
    uint32_t V, C, D, H;
    int8_t *E;    /* V x D */
    int8_t *W1;   /* H x (C*D) */
    int32_t *b1;  /* H */
    int32_t M1;   /* multiplier/shift of the int8 pre-activation */
    uint8_t s1;
    int8_t lut[256];
    int8_t *W2;   /* V x H */
    int32_t *b2;  /* V */
    int32_t scale_mant, scale_shift;
} pllm_qmodel;

/* A loaded model (pxl_pllm_open). */
struct pxl_pllm {
    pxl_ctx *ctx;
    pxl_image *img;
    pllm_qmodel q;         /* copies of the weights (owned) */
    uint32_t *vocab;      /* V code points */
    int32_t meta[PLLM_META_N];
    uint32_t row_ids, row_logits;
    void *scratch;
    pxl_vm_session *session; /* GPU runs: the weights stay on the GPU between tokens */
};

/* Int8 forward pass exactly as the VM program computes it. ids[C] must be < V.
 * scratch: at least C*D + 2*H bytes... use pllm_ref_scratch_bytes. */
size_t pllm_ref_scratch_bytes(const pllm_qmodel *q);
void pllm_ref_forward(const pllm_qmodel *q, const uint32_t *ids, int32_t *logits, void *scratch);

/* Builds the v1 image from a quantized model, vocab code points (V) and meta values. */
pxl_status pllm_build_image(pxl_ctx *ctx, const pllm_qmodel *q, const uint32_t *vocab,
                           const int32_t meta_extra[PLLM_META_N], pxl_image **out);

/* Rounds r > 0 to mant / 2^shift with mant in [2^30, 2^31) when possible, shift <= max_shift. */
void pllm_fixed_point(double r, int max_shift, int32_t *mant, uint8_t *shift);

#endif
