/*
 * Internal definitions of the llm layer (src/llm/): the GGUF reader's limits.
 * Not installed.
 */
#ifndef PXL_LLM_INTERNAL_H
#define PXL_LLM_INTERNAL_H

#include "../core/internal.h"
#include "pxl/llm.h"

/* GGUF versions the reader accepts, and the one the writer writes. */
#define PXL_GGUF_VERSION_MIN 2
#define PXL_GGUF_VERSION_MAX 3
#define PXL_GGUF_VERSION_WRITE 3
/* general.alignment when the file does not say. */
#define PXL_GGUF_DEFAULT_ALIGNMENT 32u
/* Most dimensions of a tensor (ggml's GGML_MAX_DIMS). */
#define PXL_GGUF_MAX_DIMS 4

#endif
