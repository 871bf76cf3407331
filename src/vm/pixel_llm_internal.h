/*
 * Pixel-LLM internals shared by pixel_llm.c (image layout, loader, int8
 * reference forward, generator) and pixel_llm_train.c (corpus, trigram
 * baseline, float trainer, quantizer). Not installed.
 *
 * The model: ids (C previous characters) -> embedding rows (C x D, int8)
 * -> flattened MATMUL with W1 (H x C*D, int8) -> int32 + bias b1 -> int8
 * pre-activation (multiplier M1, shift s1) -> LUT (tanh) -> int8 hidden
 * (scale 1/127) -> MATMUL with W2 (V x H, int8) -> int32 + bias b2 -> int32
 * logits; logit * scale (scale = mant / 2^shift) is the natural-log logit.
 */
#ifndef PXL_PIXEL_LLM_INTERNAL_H
#define PXL_PIXEL_LLM_INTERNAL_H

#include "vm_internal.h"

#define LLM_MAX_VOCAB 97u /* 96 symbols + unknown (id 0) */
#define LLM_META_N 24u
#define LLM_META_MAGIC 0x4D4C4C50 /* "PLLM" little-endian */
#define LLM_FORMAT_VERSION 1

/* metadata tensor (row 1, int32 1 x LLM_META_N) */
enum {
    LLM_M_MAGIC = 0,
    LLM_M_VERSION,
    LLM_M_VOCAB,
    LLM_M_CONTEXT,
    LLM_M_EMBED,
    LLM_M_HIDDEN,
    LLM_M_SCALE_MANT,  /* logit scale = mant / 2^shift (natural-log units per logit step) */
    LLM_M_SCALE_SHIFT,
    LLM_M_UNK_ID,
    LLM_M_PAD_ID,      /* fills the context before the first character */
    LLM_M_ROW_IDS,
    LLM_M_ROW_LOGITS,
    LLM_M_ROW_VOCAB,
    LLM_M_BPC_INT8_U,  /* held-out bpc x 1e6 measured at training (0: unknown) */
    LLM_M_BPC_FLOAT_U,
    LLM_M_BPC_TRIGRAM_U,
    LLM_M_TRAIN_CHARS,
    LLM_M_HELDOUT_CHARS,
    LLM_M_SEED_LO,
    LLM_M_STEPS
};

/* Quantized weights, as laid out in the image (row-major, b operands transposed). */
typedef struct llm_qmodel {
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
} llm_qmodel;

/* Int8 forward pass exactly as the VM program computes it. ids[C] must be < V.
 * scratch: at least C*D + 2*H bytes... use llm_ref_scratch_bytes. */
size_t llm_ref_scratch_bytes(const llm_qmodel *q);
void llm_ref_forward(const llm_qmodel *q, const uint32_t *ids, int32_t *logits, void *scratch);

/* Builds the v1 image from a quantized model, vocab code points (V) and meta values. */
pxl_status llm_build_image(pxl_ctx *ctx, const llm_qmodel *q, const uint32_t *vocab,
                           const int32_t meta_extra[LLM_META_N], pxl_image **out);

/* Rounds r > 0 to mant / 2^shift with mant in [2^30, 2^31) when possible, shift <= max_shift. */
void llm_fixed_point(double r, int max_shift, int32_t *mant, uint8_t *shift);

#endif
